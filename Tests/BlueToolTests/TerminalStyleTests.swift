import Foundation
import Testing

/// Colours on a terminal, none in a pipe, none with NO_COLOR (https://no-color.org), forced with FORCE_COLOR
/// (issue 14 item 4): the error line's "error:" in red.
struct TerminalStyleTests {
    @Test func errorsAreRedOnlyWhenColoursAreOn() async throws {
        // NO_COLOR is cleared (an empty value means unset): the test runner may export it.
        let piped = try await BlueProcess.run(["decode", "zz"], environment: ["NO_COLOR": ""])
        #expect(piped.status == 64 && piped.standardError.hasPrefix("error: "), "\(piped.standardError)")
        let forced = try await BlueProcess.run(["decode", "zz"], environment: ["FORCE_COLOR": "1", "NO_COLOR": ""])
        #expect(forced.standardError.hasPrefix("\u{1B}[31merror:\u{1B}[0m "), "\(forced.standardError)")
        let refused = try await BlueProcess.run(["decode", "zz"], environment: ["FORCE_COLOR": "1", "NO_COLOR": "1"])
        #expect(refused.standardError.hasPrefix("error: "), "\(refused.standardError)")
    }
}
