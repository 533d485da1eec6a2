import Foundation
import Testing

/// `blue demo` as a user runs it: a separate process, its real output and exit code.
@Suite struct DemoCommandTests {
    @Test func demoExchangesBothPlistsAndExitsZero() async throws {
        let result = try await BlueProcess.run(["demo"])
        #expect(result.status == 0, "stderr: \(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        // Both roles' logs, labelled.
        #expect(lines.contains("[peripheral] peripheralManagerDidStartAdvertising"))
        #expect(lines.contains("[central] didConnect Peripheral - iOS"))
        // The two plists exchanged, as the seed logs them.
        #expect(lines.contains(#"[central] Value read is: ["Hello": "Darkness"]"#))
        #expect(lines.contains(#"[peripheral] Written value is: ["Yo": "Lo"]"#))
        #expect(lines.last == #"[demo] done: the central read ["Hello": "Darkness"] and the peripheral received ["Yo": "Lo"]"#)
        // Order: the central reads before it writes, the peripheral receives before the central disconnects.
        let read = lines.firstIndex(of: #"[central] Value read is: ["Hello": "Darkness"]"#) ?? .max
        let written = lines.firstIndex(of: #"[peripheral] Written value is: ["Yo": "Lo"]"#) ?? .max
        let disconnected = lines.firstIndex { $0.hasPrefix("[central] didDisconnectPeripheral") } ?? .max
        #expect(read < written && written < disconnected)
    }

    @Test func demoWithoutAStackFailsAtOnceWithOneLine() async throws {
        let result = try await BlueProcess.run(["demo", "--hci", "air:/nonexistent/ocb-demo.sock"])
        #expect(result.status == 1)
        #expect(result.standardError.contains("blue demo: no Bluetooth stack on air:/nonexistent/ocb-demo.sock"))
        #expect(result.standardError.contains("no air hub at /nonexistent/ocb-demo.sock"))
    }

    @Test func demoRejectsABadTimeout() async throws {
        let result = try await BlueProcess.run(["demo", "--timeout", "0"])
        #expect(result.status != 0)
        #expect(result.standardError.contains("--timeout must be between 0 and 3600 seconds"))
    }
}
