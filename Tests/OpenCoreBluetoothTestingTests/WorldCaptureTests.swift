import Foundation
import OpenCoreBluetooth
import OpenCoreBluetoothTesting
import Testing

/// Issue 28 item 5: what a world keeps for a failed test. With a capture folder, the air's steps are recorded
/// (`blue air --replay` takes them again, packet for packet, and says whether every device received the same
/// frames) and its packets captured (`blue snoop show`, Wireshark).
@Suite struct WorldCaptureTests {
    /// The `blue` built beside the tests.
    static var blue: String? {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("blue").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        let built = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/debug/blue").path
        return FileManager.default.isExecutableFile(atPath: built) ? built : nil
    }

    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test("the world's recording replays identically, and its capture decodes")
    func capturesReplayAndDecode() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ocb-kit-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let world = try SimulatedWorld(name: "exchange", captureDirectory: directory)
        let (peripheral, app) = try await SimulatedWorldTests.ready(sensor(), in: world)
        app.read(levelUUID)
        #expect(await world.eventually(on: app.queue) { app.log.contains("value \(levelUUID) 2a") })
        peripheral.simulateProximityChange(.far)
        world.packetLoss = 0.1
        app.write(Data([0x05]), to: controlUUID)
        #expect(await world.eventually(within: .seconds(20), on: app.queue) { app.log.contains("wrote \(controlUUID)") })
        world.shutdown()
        let captures = try #require(world.captures)
        #expect(captures.problems.isEmpty, "\(captures.problems)")
        #expect(captures.recordingPath == directory + "/exchange.airrec")
        let recording = try String(contentsOfFile: captures.recordingPath, encoding: .utf8)
        #expect(recording.contains("\nloss 0.1") || recording.contains(" loss 0.1"), "the loss is a recorded step")
        #expect(recording.contains(" move "), "the move is a recorded step")
        let blue = try #require(Self.blue, "no blue executable beside the tests")
        let replay = try Self.run(blue, ["air", "--replay", captures.recordingPath])
        #expect(replay.status == 0, "\(replay.output)")
        #expect(replay.output.contains("every controller sent its host what it sent in the recording"), "\(replay.output)")
        let shown = try Self.run(blue, ["snoop", "show", captures.packetsPath])
        #expect(shown.status == 0, "\(shown.output.prefix(2000))")
        #expect(shown.output.contains("ATT") || shown.output.contains("Read"), "\(shown.output.prefix(2000))")
        // Each stack's HCI: the peripheral's (device 1, declared first) and the app's central's.
        let stacks = captures.stackCaptures
        #expect(stacks.count == 2, "\(stacks)")
        #expect(stacks.first?.hasSuffix("exchange.1-simulated.Sensor.btsnoop") == true, "\(stacks)")
        #expect(stacks.last?.hasSuffix("exchange.2-OpenCoreBluetooth.central.btsnoop") == true, "\(stacks)")
        for path in stacks {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(path): captures carry keys")
            let decoded = try Self.run(blue, ["snoop", "show", path])
            #expect(decoded.status == 0, "\(decoded.output.prefix(2000))")
            // The app's write of 05 to the control point, as each side's host saw it.
            #expect(decoded.output.contains("Write Request") && decoded.output.contains("05"), "\(path): \(decoded.output.prefix(3000))")
        }
    }
}
