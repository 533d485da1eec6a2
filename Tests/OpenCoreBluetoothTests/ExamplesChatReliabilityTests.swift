import Foundation
import TestSupport
import Testing

/// Issue 13 item 6's reliability test: `blue chat` between two processes on a `blue air` hub with faults. 1 MiB
/// under 10% packet loss arrives byte-identical (the link layer retransmits); a link dropped mid-transfer
/// (`blue fault drop all`) or a peer killed with SIGKILL makes the other end (both ends, for the drop) fail
/// loudly: exit 1 and one line saying how far it got, never a silent truncation.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct ExamplesChatReliabilityTests {
    @Test("blue chat: 1 MiB under 10% packet loss arrives byte-identical")
    func oneMebibyteUnderTenPercentLoss() async throws {
        let hub = try await ExampleHub(arguments: ["--loss", "10"])
        let text = exampleText(bytes: 1 << 20)
        let file = try Self.file(text)
        defer { try? FileManager.default.removeItem(at: file) }
        let environment = ["OCB_AIR_SOCKET": hub.socket]
        let sender = try ExampleProcess("blue", ["chat", "send", "--timeout", "240", "--file", file.path], environment: environment)
        defer { sender.stopInBackground() }
        let receiver = try ExampleProcess("blue", ["chat", "receive", "--timeout", "240"], environment: environment)
        defer { receiver.stopInBackground() }
        let receiverStatus = await receiver.waitForExit(limit: .seconds(250))
        let senderStatus = await sender.waitForExit(limit: .seconds(10))
        #expect(receiverStatus == 0, "receiver: \(receiver.errors)")
        #expect(senderStatus == 0, "sender: \(sender.errors)")
        #expect(receiver.outputData.count == text.utf8.count)
        #expect(exampleHash(receiver.outputData) == exampleHash(Data(text.utf8)))
        #expect(sender.errors.contains("blue chat send: sent \(text.utf8.count) bytes"))
    }

    @Test("blue chat: a link dropped mid-transfer fails both ends loudly")
    func aDroppedLinkFailsBothEnds() async throws {
        let hub = try await ExampleHub()
        let (sender, receiver, file) = try await Self.transferUnderWay(hub)
        defer { try? FileManager.default.removeItem(at: file) }
        let fault = try ExampleProcess("blue", ["fault", "--socket", hub.socket, "drop", "all"])
        #expect(await fault.waitForExit(limit: .seconds(10)) == 0, "\(fault.errors)")
        #expect(fault.output.contains("drop: every 1 link no longer heard"), "\(fault.output)")
        #expect(await hub.hub.waitFor("fault: drop: every 1 link"))
        let receiverStatus = await receiver.waitForExit(limit: .seconds(20))
        let senderStatus = await sender.waitForExit(limit: .seconds(20))
        #expect(receiverStatus == 1, "receiver: \(receiver.errors)")
        #expect(senderStatus == 1, "sender: \(sender.errors)")
        #expect(receiver.errors.contains("blue chat receive: the sender left after"), "\(receiver.errors)")
        #expect(sender.errors.contains("blue chat send: the receiver left"), "\(sender.errors)")
        #expect(receiver.outputData.isEmpty)
    }

    @Test("blue chat: a peer killed with SIGKILL fails the other end loudly", arguments: ["sender", "receiver"])
    func aKilledPeerFailsTheOtherEnd(killed: String) async throws {
        let hub = try await ExampleHub()
        let (sender, receiver, file) = try await Self.transferUnderWay(hub)
        defer { try? FileManager.default.removeItem(at: file) }
        let (victim, survivor) = killed == "sender" ? (sender, receiver) : (receiver, sender)
        kill(victim.process.processIdentifier, SIGKILL)
        let status = await survivor.waitForExit(limit: .seconds(20))
        #expect(status == 1, "\(survivor.errors)")
        if killed == "sender" {
            #expect(receiver.errors.contains("blue chat receive: the sender left after"), "\(receiver.errors)")
            #expect(receiver.outputData.isEmpty)
        } else {
            #expect(sender.errors.contains("blue chat send: the receiver left"), "\(sender.errors)")
        }
    }

    /// A sender and a receiver of 1 MiB on `hub`, once the sender's progress bar shows the transfer going.
    private static func transferUnderWay(_ hub: ExampleHub) async throws -> (ExampleProcess, ExampleProcess, URL) {
        let file = try Self.file(exampleText(bytes: 1 << 20))
        let environment = ["OCB_AIR_SOCKET": hub.socket]
        let sender = try ExampleProcess("blue", ["chat", "send", "--timeout", "120", "--file", file.path], environment: environment)
        let receiver = try ExampleProcess("blue", ["chat", "receive", "--timeout", "120"], environment: environment)
        let started = await poll(within: .seconds(60), every: .milliseconds(20)) {
            sender.errors.contains("kB/s") || sender.process.ended != nil
        }
        #expect(started && sender.process.ended == nil, "sender: \(sender.errors) receiver: \(receiver.errors)")
        return (sender, receiver, file)
    }

    private static func file(_ text: String) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ocb-chat-\(UUID().uuidString.prefix(8)).txt")
        try Data(text.utf8).write(to: file)
        return file
    }
}
