import Foundation
import Testing
import TestSupport

/// `blue serve --io display-only --passkey N` accepting pairing as peripheral, and `blue pair --method passkey`
/// typing the passkey, both on a private `blue air` hub: LE SC Passkey Entry with the server displaying
/// (Core 5.4 Vol 3 Part H §2.3.5.6.3); a wrong passkey fails with Confirm Value Failed (§3.5.5) and exit 1.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ServePairingTests {
    static func json(_ line: Substring) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    /// A hub and `blue serve --profile heart-rate --io display-only --passkey 123456 --json` on it.
    static func scene(io: String = "display-only", passkey: [String] = ["--passkey", "123456"], extra: [String] = [],
                      _ body: (String, String, BackgroundBlue) async throws -> Void) async throws {
        let tag = UUID().uuidString.prefix(6).lowercased()
        let socket = testTemporaryPath("ocb-serve-pair-\(tag).sock")
        let bonds = NSTemporaryDirectory() + "ocb-serve-pair-bonds-\(tag)"
        defer { try? FileManager.default.removeItem(atPath: bonds) }
        let hub = try BackgroundBlue(["air", "--socket", socket, "--stats-interval", "0"])
        defer { hub.stopInBackground() }
        #expect(await hub.waitFor("listening"), "hub: \(hub.output) \(hub.errors)")
        let server = try BackgroundBlue(["serve", "--profile", "heart-rate", "--hci", "air:\(socket)", "--io", io, "--json"] + passkey + extra)
        defer { server.stopInBackground() }
        #expect(await server.waitFor("serving"), "serve: \(server.output) \(server.errors)")
        try await body(socket, bonds, server)
    }

    @Test func passkeyPairingWithTheServer() async throws {
        try await Self.scene { socket, bonds, server in
            let paired = try await BlueProcess.run([
                "pair", "blue heart rate", "--hci", "air:\(socket)", "--method", "passkey", "--passkey", "123456",
                "--bonds", bonds, "--json",
            ])
            #expect(paired.status == 0, "\(paired.standardOutput) \(paired.standardError)")
            guard let summary = paired.standardOutput.split(separator: "\n").last.flatMap(Self.json) else {
                Issue.record("no JSON summary: \(paired.standardOutput) \(paired.standardError)")
                return
            }
            #expect(summary["encrypted"] as? Bool == true, "\(summary)")
            #expect(summary["bonded"] as? Bool == true, "\(summary)")
            #expect(summary["authenticated"] as? Bool == true, "\(summary)")
            #expect((summary["method"] as? String)?.lowercased().contains("passkey") == true, "\(summary)")
            #expect(await server.waitFor("\"paired\""), "serve: \(server.output)")
            let events = server.output.split(separator: "\n").compactMap(Self.json)
            #expect(events.contains { $0["event"] as? String == "displayPasskey" && $0["passkey"] as? Int == 123_456 }, "\(server.output)")
            #expect(events.contains { $0["event"] as? String == "paired" && $0["authenticated"] as? Bool == true }, "\(server.output)")
        }
    }

    @Test func wrongPasskeyFailsWithConfirmValueFailed() async throws {
        try await Self.scene { socket, bonds, server in
            let paired = try await BlueProcess.run([
                "pair", "blue heart rate", "--hci", "air:\(socket)", "--method", "passkey", "--passkey", "111111",
                "--bonds", bonds, "--json",
            ])
            #expect(paired.status == 1, "\(paired.standardOutput) \(paired.standardError)")
            let said = paired.standardError.lowercased().replacingOccurrences(of: " ", with: "")
            #expect(said.contains("confirmvaluefailed"), "\(paired.standardError)")
            #expect(await server.waitFor("pairingFailed"), "serve: \(server.output)")
        }
    }

    /// `--io display-yes-no`: LE SC Numeric Comparison (§2.3.5.6.2); both sides print the same six digits and
    /// confirm them.
    @Test func numericComparisonWithTheServer() async throws {
        try await Self.scene(io: "display-yes-no", passkey: []) { socket, bonds, server in
            let paired = try await BlueProcess.run([
                "pair", "blue heart rate", "--hci", "air:\(socket)", "--method", "numeric", "--bonds", bonds, "--json",
            ])
            #expect(paired.status == 0, "\(paired.standardOutput) \(paired.standardError)")
            let lines = paired.standardOutput.split(separator: "\n").compactMap(Self.json)
            let shown = lines.first { $0["event"] as? String == "numericComparison" }?["value"] as? Int
            #expect(shown != nil, "\(paired.standardOutput)")
            #expect(lines.last?["authenticated"] as? Bool == true, "\(paired.standardOutput)")
            #expect(await server.waitFor("\"paired\""), "serve: \(server.output)")
            let events = server.output.split(separator: "\n").compactMap(Self.json)
            #expect(events.contains { $0["event"] as? String == "numericComparison" && $0["value"] as? Int == shown }, "\(server.output)")
        }
    }
}
