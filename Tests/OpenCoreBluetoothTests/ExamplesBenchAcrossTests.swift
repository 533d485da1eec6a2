import Foundation
import TestSupport
import Testing

/// `blue bench notify|write --hci TRANSPORT --role central|peripheral` (issue 13 item 5) between two processes on a
/// `blue air` hub: every value arrives in order and both sides report; a peer killed mid-run fails the other side
/// with one line; a role without a transport (or the reverse) is a usage error. (On Bumble's controllers:
/// Interop/test_bench_bumble_controllers.py; speed: Scripts/bench.sh.)
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ExamplesBenchAcrossTests {
    @Test("blue bench --hci --role: notify and write between two processes on the hub", arguments: ["notify", "write"])
    func betweenTwoProcesses(mode: String) async throws {
        let hub = try await ExampleHub()
        let common = ["bench", mode, "--hci", "air:\(hub.socket)", "--count", "400", "--size", "60", "--timeout", "30", "--json", "--quiet"]
        let peripheral = try ExampleProcess("blue", common + ["--role", "peripheral"])
        defer { peripheral.stopInBackground() }
        let central = try ExampleProcess("blue", common + ["--role", "central"])
        defer { central.stopInBackground() }
        let centralStatus = await central.waitForExit(limit: .seconds(60))
        let peripheralStatus = await peripheral.waitForExit(limit: .seconds(20))
        #expect(centralStatus == 0, "\(central.errors)")
        #expect(peripheralStatus == 0, "\(peripheral.errors)")
        let centralResult = try Self.object(central.output), peripheralResult = try Self.object(peripheral.output)
        let (receiver, sender) = mode == "notify" ? (centralResult, peripheralResult) : (peripheralResult, centralResult)
        #expect(receiver["received"] as? Int == 400 && receiver["lost"] as? Int == 0 && receiver["outOfOrder"] as? Int == 0,
                "\(receiver)")
        #expect(sender["sent"] as? Int == 400, "\(sender)")
        #expect((receiver["transport"] as? String)?.hasSuffix("(receiver)") == true)
        #expect(receiver["mtu"] as? Int == 247 && receiver["dataLength"] as? Int == 251, "\(receiver)")
        // Each end's own CPU over the span (getrusage, user and system) and its resident size (issue 31 item 1).
        for end in [sender, receiver] {
            let user = end["cpuUserSeconds"] as? Double ?? -1, system = end["cpuSystemSeconds"] as? Double ?? -1
            #expect(user >= 0 && system >= 0 && user + system > 0, "\(end)")
            let perValue = end["cpuUserMicrosecondsPerValue"] as? Double ?? -1
            #expect(abs(perValue - user * 1e6 / 400) < 0.01, "\(end)")
            let resident = end["residentBytes"] as? Int ?? 0, peak = end["peakResidentBytes"] as? Int ?? 0
            #expect(resident > 1_000_000 && peak >= resident, "\(end)")
            // Each end sleeps and wakes while it waits for the air: some context switches, never a negative count.
            #expect((end["contextSwitches"] as? Int ?? -1) > 0, "\(end)")
        }
    }

    @Test("blue bench --hci --role: the peripheral killed mid-run fails the central with one line")
    func aKilledPeerFailsTheOtherSide() async throws {
        let hub = try await ExampleHub()
        let common = ["bench", "notify", "--hci", "air:\(hub.socket)", "--count", "1000000", "--size", "20", "--timeout", "30"]
        let peripheral = try ExampleProcess("blue", common + ["--role", "peripheral"])
        defer { peripheral.stopInBackground() }
        let central = try ExampleProcess("blue", common + ["--role", "central"])
        defer { central.stopInBackground() }
        #expect(await poll(within: .seconds(40), every: .milliseconds(20)) { central.errors.contains(" received") || central.process.ended != nil })
        kill(peripheral.process.processIdentifier, SIGKILL)
        #expect(await central.waitForExit(limit: .seconds(20)) == 1, "\(central.errors)")
        #expect(central.errors.contains("blue bench notify: stalled: the link was lost after"), "\(central.errors)")
        #expect(central.output.isEmpty)
    }

    @Test("blue bench: --hci without --role, or --role without --hci, is one line and exit 64")
    func roleAndTransportGoTogether() async throws {
        let noRole = try ExampleProcess("blue", ["bench", "notify", "--hci", "in-process"])
        #expect(await noRole.waitForExit(limit: .seconds(10)) == 64)
        #expect(noRole.errors.contains("--hci needs --role central or --role peripheral"), "\(noRole.errors)")
        let noTransport = try ExampleProcess("blue", ["bench", "write", "--role", "central"])
        #expect(await noTransport.waitForExit(limit: .seconds(10)) == 64)
        #expect(noTransport.errors.contains("--role goes with --hci"), "\(noTransport.errors)")
    }

    private static func object(_ text: String) throws -> [String: Any] {
        let line = text.split(separator: "\n").last.map(String.init) ?? ""
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(text)")
    }
}
