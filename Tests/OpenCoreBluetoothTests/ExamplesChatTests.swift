import Foundation
import Testing

/// `blue chat send|receive` (issue 5 item 4): seed 002's transfer between two `blue` processes on a hub chosen
/// by OCB_AIR_SOCKET.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ExamplesChatTests {
    @Test("blue chat: a 20 kB text goes from `send --file` to `receive` intact, with a progress bar")
    func chatSendsTwentyKilobytes() async throws {
        let hub = try await ExampleHub()
        let text = exampleText(bytes: 20_000)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ocb-chat-\(UUID().uuidString.prefix(8)).txt")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let environment = ["OCB_AIR_SOCKET": hub.socket]
        let sender = try ExampleProcess("blue", ["chat", "send", "--timeout", "25", "--file", file.path], environment: environment)
        defer { sender.stopInBackground() }
        let receiver = try ExampleProcess("blue", ["chat", "receive", "--timeout", "25"], environment: environment)
        defer { receiver.stopInBackground() }
        let receiverStatus = await receiver.waitForExit(limit: .seconds(28))
        let senderStatus = await sender.waitForExit(limit: .seconds(5))
        #expect(receiverStatus == 0, "receiver: \(receiver.errors)")
        #expect(senderStatus == 0, "sender: \(sender.errors)")
        #expect(receiver.outputData.count == text.utf8.count)
        #expect(exampleHash(receiver.outputData) == exampleHash(Data(text.utf8)))
        #expect(receiver.output == text)
        #expect(sender.errors.contains("100%"))
        #expect(sender.errors.contains("/s"))
        #expect(sender.errors.contains("blue chat send: sent \(text.utf8.count) bytes"))
    }

    @Test("blue chat: no hub is one clear line and exit 69; no text is a usage error")
    func chatErrors() async throws {
        // In a folder that does not exist: there no hub is started on demand (HostBackend.Transport.hub).
        let missing = "/nonexistent-ocb/no-hub-\(UUID().uuidString.prefix(6)).sock"
        let receiver = try ExampleProcess("blue", ["chat", "receive", "--hci", "air:\(missing)", "--timeout", "10"])
        defer { receiver.stopInBackground() }
        #expect(await receiver.waitForExit(limit: .seconds(12)) == 69)
        #expect(receiver.errors.contains("blue chat: no Bluetooth stack on air:\(missing)"))
        let sender = try ExampleProcess("blue", ["chat", "send"])
        defer { sender.stopInBackground() }
        #expect(await sender.waitForExit(limit: .seconds(10)) == 64)
        #expect(sender.errors.contains("give the TEXT to send, or --file F"))
    }
}
