import Foundation
import Testing

/// Issue 10 item 6: `blue pair` with a bond it already holds encrypts with it (as CoreBluetooth does) and says no
/// pairing happened; `--repair` asks for a new pairing, which `blue serve` refuses with Pairing Not Supported
/// (0x05, a hint in the error) unless `--allow-repairing`. Both on a private hub (ServePairingTests' scene).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PairBondReuseTests {
    static func pair(_ socket: String, _ bonds: String, _ extra: [String] = []) async throws -> BlueProcess.Result {
        try await BlueProcess.run(["pair", "blue heart rate", "--hci", "air:\(socket)", "--method", "jw", "--bonds", bonds]
                                  + extra, limit: .seconds(60))
    }

    @Test func aStoredBondIsUsedAndRepairingIsRefused() async throws {
        try await ServePairingTests.scene(io: "none", passkey: []) { socket, bonds, server in
            let first = try await Self.pair(socket, bonds, ["--json"])
            #expect(first.status == 0, "\(first.standardOutput) \(first.standardError)")
            let summary = first.standardOutput.split(separator: "\n").last.flatMap(ServePairingTests.json)
            #expect(summary?["paired"] as? Bool == true, "\(first.standardOutput)")
            #expect(summary?["usedExistingBond"] as? Bool == false)

            let again = try await Self.pair(socket, bonds)
            #expect(again.status == 0, "\(again.standardOutput) \(again.standardError)")
            #expect(again.standardOutput.hasPrefix("Encrypted with the existing bond of blue heart rate, key size 16"),
                    "\(again.standardOutput)")
            #expect(again.standardOutput.contains("no pairing"))
            let againJSON = try await Self.pair(socket, bonds, ["--json"])
            let reused = againJSON.standardOutput.split(separator: "\n").last.flatMap(ServePairingTests.json)
            #expect(reused?["paired"] as? Bool == false, "\(againJSON.standardOutput)")
            #expect(reused?["usedExistingBond"] as? Bool == true)
            #expect(reused?["encrypted"] as? Bool == true)

            let repair = try await Self.pair(socket, bonds, ["--repair"])
            #expect(repair.status == 1, "\(repair.standardOutput) \(repair.standardError)")
            #expect(repair.standardError.contains("Pairing Not Supported (0x05)"), "\(repair.standardError)")
            #expect(repair.standardError.contains("--allow-repairing"), "\(repair.standardError)")
            #expect(repair.standardError.split(separator: "\n").count == 1)
            #expect(await server.waitFor("\"bondLost\""), "serve: \(server.output)")
        }
    }

    @Test func repairWithAServerThatAllowsIt() async throws {
        try await ServePairingTests.scene(io: "none", passkey: [], extra: ["--allow-repairing"]) { socket, bonds, server in
            let first = try await Self.pair(socket, bonds)
            #expect(first.status == 0, "\(first.standardOutput) \(first.standardError)")
            let repair = try await Self.pair(socket, bonds, ["--repair", "--json"])
            #expect(repair.status == 0, "\(repair.standardOutput) \(repair.standardError)")
            let summary = repair.standardOutput.split(separator: "\n").last.flatMap(ServePairingTests.json)
            #expect(summary?["paired"] as? Bool == true, "\(repair.standardOutput)")
            #expect(summary?["bonded"] as? Bool == true)
            #expect(await server.waitFor("\"bondLost\""), "serve: \(server.output)")
            let pairings = server.output.split(separator: "\n").compactMap(ServePairingTests.json)
                .filter { $0["event"] as? String == "paired" }
            #expect(pairings.count == 2, "\(server.output)")
        }
    }
}
