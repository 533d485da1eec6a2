import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `blue pair` and `blue bonds` end to end: a `blue air --h4-tcp` hub, a Bumble peripheral
/// (Interop/peers/pairing_peer.py) on it over TCP, `blue pair --reconnect --json` pairing with LE SC passkey entry
/// (the fixed passkey Bumble types), the bond listed by `blue bonds list --json` and removed by `blue bonds remove`.
/// Disabled without a Python with Bumble (OCB_PYTHON, /work/main/.venv, ./.venv) unless OCB_REQUIRE_INTEROP=1.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PairCommandTests {
    static var python: String? { BumblePython.path }
    static var enabled: Bool { BumblePython.enabled }

    static func json(_ line: Substring) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    @Test(.enabled(if: enabled, "no Python with Bumble (set OCB_PYTHON)"))
    func pairReconnectListAndRemove() async throws {
        guard let python = Self.python else {
            Issue.record("OCB_REQUIRE_INTEROP=1 but no Python with Bumble was found (set OCB_PYTHON)")
            return
        }
        let tag = UUID().uuidString.prefix(6).lowercased()
        let socket = testTemporaryPath("ocb-pair-\(tag).sock")
        let port = try TestPorts.reserve()  // outside the ephemeral range: nobody else is handed it
        let bonds = NSTemporaryDirectory() + "ocb-pair-bonds-\(tag)"
        let keystore = NSTemporaryDirectory() + "ocb-pair-keys-\(tag).json"
        defer {
            try? FileManager.default.removeItem(atPath: bonds)
            try? FileManager.default.removeItem(atPath: keystore)
        }
        let hub = try BackgroundBlue(["air", "--socket", socket, "--h4-tcp", "127.0.0.1:\(port)", "--stats-interval", "0"])
        defer { hub.stopInBackground() }
        #expect(await hub.waitFor("listening"), "hub: \(hub.output) \(hub.errors)")

        let peer = Process()
        peer.executableURL = URL(fileURLWithPath: python)
        peer.arguments = [
            BumblePython.peer("pairing_peer.py"), "--port", "\(port)", "--address", "F0:0C:B1:00:00:31",
            "--role", "peripheral", "--method", "passkey", "--passkey", "123456", "--keystore", keystore,
            "--connections", "2", "--timeout", "60",
        ]
        peer.standardOutput = FileHandle.nullDevice
        peer.standardError = FileHandle.nullDevice
        try peer.run()
        defer {
            // SIGKILL without waiting: Foundation reaps the child.
            if peer.isRunning { kill(peer.processIdentifier, SIGKILL) }
        }
        try await Task.sleep(for: .seconds(3))

        let paired = try await BlueProcess.run([
            "pair", "F0:0C:B1:00:00:31", "--hci", "tcp:127.0.0.1:\(port)", "--method", "passkey", "--passkey", "123456",
            "--reconnect", "--bonds", bonds, "--json", "--timeout", "30",  // Bumble starts slowly on a busy machine
        ])
        #expect(paired.status == 0, "\(paired.standardError)")
        let lines = paired.standardOutput.split(separator: "\n")
        #expect(lines.compactMap(Self.json).contains { $0["event"] as? String == "displayPasskey" && $0["passkey"] as? Int == 123_456 })
        guard let summary = lines.last.flatMap(Self.json) else {
            Issue.record("no JSON summary: \(paired.standardOutput) \(paired.standardError)")
            return
        }
        #expect((summary["method"] as? String)?.hasPrefix("Passkey Entry") == true, "\(summary)")
        #expect(summary["secureConnections"] as? Bool == true)
        #expect(summary["authenticated"] as? Bool == true)
        #expect(summary["encrypted"] as? Bool == true)
        #expect(summary["bonded"] as? Bool == true)
        #expect(summary["identity"] as? String == "F0:0C:B1:00:00:31")
        #expect(summary["peerKeys"] as? [String] == ["IRK", "identity F0:0C:B1:00:00:31"])
        let reconnect = summary["reconnect"] as? [String: Any]
        #expect(reconnect?["usedExistingBond"] as? Bool == true, "\(String(describing: reconnect))")
        #expect(reconnect?["encrypted"] as? Bool == true)

        let listed = try await BlueProcess.run(["bonds", "list", "--directory", bonds, "--json"])
        #expect(listed.status == 0, "\(listed.standardError)")
        let list = Self.json(Substring(listed.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)))
        let entries = list?["bonds"] as? [[String: Any]] ?? []
        #expect(entries.count == 1)
        #expect(entries.first?["address"] as? String == "F0:0C:B1:00:00:31")
        #expect(entries.first?["secureConnections"] as? Bool == true)
        #expect(entries.first?["authenticated"] as? Bool == true)
        #expect(entries.first?["keys"] as? [String] == ["LTK (LE SC)", "peer IRK"])

        let removed = try await BlueProcess.run(["bonds", "remove", "F0:0C:B1:00:00:31", "--directory", bonds])
        #expect(removed.status == 0 && removed.standardOutput == "Removed the bond with F0:0C:B1:00:00:31 (\(bonds))\n", "\(removed)")
        let again = try await BlueProcess.run(["bonds", "remove", "F0:0C:B1:00:00:31", "--directory", bonds])
        #expect(again.status == 2)
        #expect(again.standardError.hasPrefix("error: no bond with F0:0C:B1:00:00:31"))
        let empty = try await BlueProcess.run(["bonds", "list", "--directory", bonds])
        #expect(empty.standardOutput == "No bonds in \(bonds)\n")
        let bad = try await BlueProcess.run(["bonds", "remove", "nonsense", "--directory", bonds])
        #expect(bad.status == 64)
    }
}
