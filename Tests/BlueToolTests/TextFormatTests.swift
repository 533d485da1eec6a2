import Foundation
import Testing
@testable import blue

/// blue's printf-style formatting and padding (FoundationEssentials has neither `String(format:)` nor
/// `padding(toLength:withPad:startingAt:)`), checked against Foundation's, which they replace.
struct TextFormatTests {
    @Test("printf gives String(format:)'s text for the formats blue uses", arguments: [
        ("%.3f", 0.5), ("%g", 7.5), ("%.1f%%", 99.95), ("%.2f °C", -12.34), ("%.0f B", 1_000_000.0),
    ])
    func printfMatchesFoundation(format: String, value: Double) {
        #expect(TextFormat.printf(format, value) == String(format: format, value))
    }

    @Test("a result longer than the first buffer is whole")
    func longResult() {
        let text = TextFormat.printf("%0600ld|%.1f", 42, 2.25)
        #expect(text.utf8.count == 604)
        #expect(text.hasSuffix("042|2.2") || text.hasSuffix("042|2.3"))
        #expect(text == String(format: "%0600ld|%.1f", 42, 2.25))
    }

    @Test("padded pads and cuts by characters, as padding(toLength:) does")
    func padding() {
        for (text, width) in [("RSSI", 9), ("Température", 8), ("", 3), ("exactly", 7)] {
            #expect(TextFormat.padded(text, to: width) == text.padding(toLength: width, withPad: " ", startingAt: 0))
        }
    }
}
