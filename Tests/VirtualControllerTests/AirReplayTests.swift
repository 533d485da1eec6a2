import BluetoothCore
import BluetoothRuntime
import Foundation
import HCI
import HCITransport
import Testing
import TestSupport
@testable import VirtualController
@testable import SharedAir

/// Record and replay (issue 13 item 7): a hub on the wall clock records its steps (joins, host frames, timer
/// firings, faults, leaves); the replay on virtual time makes every controller send its host exactly the same
/// frames (the recorded digests), a tampered recording is caught, and every malformed line is one error with its
/// line number.
@Suite struct AirReplayTests {
    private static func temporary(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("ocb-\(name)-\(UUID().uuidString.prefix(6))").path
    }

    /// A recorded session: two hosts join, one advertises, the other connects under 20% loss, ACL data both ways,
    /// a fault (the link dropped), both leave.
    private static func recordSession() async throws -> (path: String, hostFrames: [Int]) {
        let socket = temporary("rec") + ".sock"
        let path = temporary("rec") + ".air"
        var configuration = AirHubConfiguration(socketPath: socket, seed: 42, statisticsInterval: nil)
        configuration.air.packetLoss = 0.2
        configuration.recordPath = path
        let hub = AirHub(configuration: configuration, eventLoop: DispatchEventLoop(label: "replay-test"))
        try hub.start()
        let hosts = try (0..<2).map { _ in try HubHost(socket: socket) }
        for host in hosts {
            host.send(.reset)
            host.send(.setEventMask(0x3FFF_FFFF_FFFF_FFFF))
            try await waitUntil { hub.devices.count == (host === hosts[0] ? 1 : 2) }
        }
        hosts[0].send(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 32, intervalMax: 32)))
        hosts[0].send(.leSetAdvertisingEnable(true))
        hosts[1].send(.leCreateConnection(LECreateConnectionParameters(
            peer: AirHub.address(forDevice: 1), connection: LEConnectionParameters(intervalMin: 6, intervalMax: 6, supervisionTimeout: 50))))
        try await waitUntil { hosts.allSatisfy { $0.connected } }
        // ACL both ways: the handles are 0x0001 on both controllers (each has one connection).
        for index in 0..<20 {
            let payload = [UInt8](repeating: UInt8(index), count: 27)
            for host in hosts { try host.transport.send(HCIACLDataPacket(handle: 0x0001, packetBoundary: .firstNonFlushable, data: payload).frame) }
            try await Task.sleep(for: .milliseconds(5))
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(try AirHub.control("drop all", socketPath: socket).hasPrefix("ok: drop"))
        try await waitUntil { hosts.allSatisfy { !$0.connected } }
        for host in hosts { host.close() }
        try await waitUntil { hub.devices.isEmpty }
        hub.stop()
        return (path, hosts.map(\.frameCount))
    }

    @Test(.timeLimit(.minutes(1)))
    func aRecordedSessionReplaysFrameForFrame() async throws {
        let (path, hostFrames) = try await Self.recordSession()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.hasPrefix("# opencorebluetooth air recording 1\nseed 42\nair 40.0 2.0 -95.0 0.0 0.2 32 0\n"))
        #expect(text.contains(" tick\n") && text.contains(" jam all\n") && text.contains(" leave 1\n") && text.contains("\ndigest 2 "))
        let snoop = Self.temporary("replay-snoop")
        defer { try? FileManager.default.removeItem(atPath: snoop) }
        let outcome = try AirReplay.run(path: path, snoopDirectory: snoop)
        #expect(outcome.matches == true, "\(outcome.devices.map { "\($0.identifier): \($0.framesToHost) vs \(String(describing: $0.recorded))" })")
        #expect(outcome.devices.count == 2 && outcome.seed == 42)
        // What the live hosts received is what the replayed controllers sent (the hosts read everything before closing).
        #expect(outcome.devices.map(\.framesToHost) == hostFrames, "replay \(outcome.devices.map(\.framesToHost)), live \(hostFrames)")
        #expect(FileManager.default.fileExists(atPath: snoop + "/device2.btsnoop"))
        // Twice: the same.
        let again = try AirReplay.run(path: path)
        #expect(again.devices.map(\.hash) == outcome.devices.map(\.hash))
    }

    @Test(.timeLimit(.minutes(1)))
    func aTamperedRecordingIsCaught() async throws {
        let (path, _) = try await Self.recordSession()
        defer { try? FileManager.default.removeItem(atPath: path) }
        var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // One octet of one host's ACL data changed (the last of the frame): the peer's host gets other data.
        let acl = try #require(lines.firstIndex { $0.contains(" frame 2 02") })
        let last = lines[acl].removeLast()
        lines[acl].append(last == "0" ? "1" : "0")
        // And the seed: every random draw (loss, advDelay) differs.
        let seed = try #require(lines.firstIndex(of: "seed 42"))
        lines[seed] = "seed 43"
        let tampered = path + ".tampered"
        try lines.joined(separator: "\n").write(toFile: tampered, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: tampered) }
        #expect(try AirReplay.run(path: tampered).matches == false)
    }

    @Test(arguments: [
        ("seed 1\nair 40 2 -95 0 0 32 0\n0 tick", "not an air recording"),
        ("# opencorebluetooth air recording 1\n0 tick", "line 2: a step before the seed and air lines"),
        ("# opencorebluetooth air recording 1\nseed x", "line 2: expected: seed N"),
        ("# opencorebluetooth air recording 1\nseed 1\nair 40 2 -95 0 7 32 0", "line 3: expected: air"),
        ("# opencorebluetooth air recording 1\nseed 1\nair 40 2 -95 0 0 32 0\n5 tick\n4 tick", "line 5: time 4 ns goes back"),
        ("# opencorebluetooth air recording 1\nseed 1\nair 40 2 -95 0 0 32 0\n0 frame 1 01030c00", "line 4: expected: frame DEVICE"),
        ("# opencorebluetooth air recording 1\nseed 1\nair 40 2 -95 0 0 32 0\n0 join 1 0A1B00000001 0 0 0 0\n1 frame 1 01030c", "line 5: expected: frame"),
        ("# opencorebluetooth air recording 1\nseed 1\nair 40 2 -95 0 0 32 0\n0 join 2 0A1B00000001 0 0 0 0", "line 4: the replay diverged"),
        ("# opencorebluetooth air recording 1\nseed 1\nair 40 2 -95 0 0 32 0\n0 join 1 0A1B0000000 0 0 0 0", "line 4: expected: join"),
        ("# opencorebluetooth air recording 1\nseed 1\nair 40 2 -95 0 0 32 0\n0 explode", "line 4: unknown step \"explode\""),
        ("# opencorebluetooth air recording 1\nseed 1\nair 40 2 -95 0 0 32 0\nabc", "line 4: unknown line \"abc\""),
        ("# opencorebluetooth air recording 1\nseed 1\nair 40 2 -95 0 0 32 0\n0 loss 3", "line 4: expected: loss"),
        ("# opencorebluetooth air recording 1\nseed 1\nair 40 2 -95 0 0 32 0\n99999999999999999999 tick", "line 4: unknown line"),
        ("# opencorebluetooth air recording 1\nseed 1\nair 40 2 -95 0 0 32 0\n0 move 7 1 2 3", "line 4: expected: move"),
        ("# opencorebluetooth air recording 1\nseed 1\nair 40 2 -95 0 0 32 0\ndigest 1 x y", "line 4: expected: digest"),
        ("# opencorebluetooth air recording 1\nseed 1\nair 40 2 -95 0 0 32 0", "no steps"),
    ])
    func malformedRecordingsAreOneErrorWithTheLine(text: String, expected: String) throws {
        let path = Self.temporary("bad") + ".air"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            _ = try AirReplay.run(path: path)
            Issue.record("replayed: \(text)")
        } catch {
            #expect(error.code == .invalidRecording)
            #expect(error.reason.contains(expected), "\(error.reason)")
            #expect(!error.reason.contains("\n"))
        }
    }

    /// Hostile recordings (issue 30 item 5: the air recording is this round's new input format): 400 deterministic
    /// mutations of a real session (lines dropped, doubled, swapped or cut; a word replaced by a huge, negative or
    /// malformed one) each replay to the end (matching or not) or are refused with one line naming the line; none
    /// crashes, and none runs long (times are bounded, so a step far in the future is refused, not simulated).
    @Test(.timeLimit(.minutes(2)))
    func mutatedRecordingsReplayOrAreRefusedInOneLine() async throws {
        let (path, _) = try await Self.recordSession()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let original = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let words = ["0", "-1", "18446744073709551615", "9223372036854775807", "1e9", "nan", "zz", "01", "", "frame", "join", "tick",
                     "leave", "move", "loss", "jam", "digest", "all", "0A1B00000001", "ffffffffffffffffffff"]
        var generator = SeededGenerator(seed: 0xA1_12_EC)
        let mutated = Self.temporary("mutated") + ".air"
        defer { try? FileManager.default.removeItem(atPath: mutated) }
        var replayed = 0, refused = 0
        for _ in 0..<400 {
            var lines = original
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let index = Int.random(in: 0..<lines.count, using: &generator)
                switch Int.random(in: 0..<5, using: &generator) {
                case 0: lines.remove(at: index)
                case 1: lines.insert(lines[index], at: index)
                case 2: lines.swapAt(index, Int.random(in: 0..<lines.count, using: &generator))
                case 3: lines[index] = String(lines[index].prefix(Int.random(in: 0...max(0, lines[index].count), using: &generator)))
                default:
                    var parts = lines[index].split(separator: " ", omittingEmptySubsequences: false).map(String.init)
                    parts[Int.random(in: 0..<parts.count, using: &generator)] = words.randomElement(using: &generator)!
                    lines[index] = parts.joined(separator: " ")
                }
                if lines.isEmpty { lines = [""] }
            }
            try lines.joined(separator: "\n").write(toFile: mutated, atomically: true, encoding: .utf8)
            do {
                _ = try AirReplay.run(path: mutated)
                replayed += 1
            } catch {
                refused += 1
                #expect(error.code == .invalidRecording, "\(error)")
                #expect(!error.reason.isEmpty && !error.reason.contains("\n"), "\(error.reason)")
            }
        }
        #expect(replayed > 20 && refused > 20, "replayed \(replayed), refused \(refused)")
    }
}
