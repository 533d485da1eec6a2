import Foundation
import TestSupport
import Testing

/// `blue air --record FILE` and `blue air --replay FILE` (issue 13 item 7), as a user runs them: a `blue chat`
/// under 10% loss on a recording hub, then the replay on virtual time says every controller sent its host what it
/// sent in the run, and writes the captures; a file that is not a recording is one line and exit 64.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ExamplesAirReplayTests {
    @Test("blue air --record, then --replay: the chat's run again, frame for frame")
    func recordAndReplayAChat() async throws {
        let recording = testTemporaryPath("ocb-rec-\(UUID().uuidString.prefix(6)).air")
        let snoop = testTemporaryPath("ocb-rec-snoop-\(UUID().uuidString.prefix(6))")
        defer {
            try? FileManager.default.removeItem(atPath: recording)
            try? FileManager.default.removeItem(atPath: snoop)
        }
        let hub = try await ExampleHub(arguments: ["--loss", "10", "--seed", "7", "--record", recording])
        try await exampleChat(on: hub, bytes: 30_000)
        await hub.hub.stop()

        let replay = try ExampleProcess("blue", ["air", "--replay", recording, "--snoop", snoop])
        #expect(await replay.waitForExit(limit: .seconds(60)) == 0, "\(replay.output) \(replay.errors)")
        #expect(replay.output.contains("seed 7: every controller sent its host what it sent in the recording"), "\(replay.output)")
        #expect(replay.output.contains("device 1 0A:1B:00:00:00:01: ") && replay.output.contains(", as recorded"), "\(replay.output)")
        #expect(FileManager.default.fileExists(atPath: snoop + "/device1.btsnoop"))
        let show = try ExampleProcess("blue", ["snoop", "show", snoop + "/device2.btsnoop"])
        #expect(await show.waitForExit(limit: .seconds(30)) == 0)
        #expect(show.output.contains("LE Connection Complete") || show.output.contains("LE Enhanced Connection Complete"))
    }

    @Test("blue air --replay: not a recording is one line and exit 64")
    func notARecording() async throws {
        let path = testTemporaryPath("ocb-not-rec-\(UUID().uuidString.prefix(6)).air")
        try "hello\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let replay = try ExampleProcess("blue", ["air", "--replay", path])
        #expect(await replay.waitForExit(limit: .seconds(20)) == 64)
        #expect(replay.errors.contains("not an air recording"), "\(replay.errors)")
        #expect(replay.errors.split(separator: "\n").count == 1)
    }
}
