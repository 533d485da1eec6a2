import Foundation
import TestSupport
import Testing

/// `blue l2cap listen|connect` (issue 29 item 5): two `blue` processes on a hub of the test's own pipe bytes through
/// an LE credit-based channel, each way, whole; a refused PSM, a missing device and a bad PSM are one line each with
/// their exit codes. (Against Bumble's channels: Interop/test_l2cap_bumble.py.)
@Suite(.serialized, .timeLimit(.minutes(2)))
struct L2CAPCommandTests {
    private struct Air {
        let socket: String
        let hub: BackgroundBlue

        init() async throws {
            socket = testTemporaryPath("ocb-l2c-\(UUID().uuidString.prefix(6).lowercased()).sock")
            hub = try BackgroundBlue(["air", "--socket", socket, "--stats-interval", "0"])
            guard await hub.waitFor("listening") else { throw Failure.notReady("hub: \(hub.errors)") }
        }

        /// Runs `blue ARGUMENTS --hci air:SOCKET` with `input` on standard input.
        func run(_ arguments: [String], input: Data = Data(), limit: Duration = .seconds(60)) async throws -> CompletedProcess {
            try await runToCompletion(BlueProcess.executable, arguments + ["--hci", "air:\(socket)"],
                                      environment: ProcessInfo.processInfo.environment, input: input, limit: limit)
        }

        /// `blue l2cap listen` in the background (the connecting side scans for it up to its `--timeout`, 10 s).
        func listen(_ arguments: [String], input: Data) -> Task<CompletedProcess, any Error> {
            Task { try await run(["l2cap", "listen"] + arguments + ["-v"], input: input) }
        }
    }

    enum Failure: Error { case notReady(String) }

    private static func randomBytes(_ count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    @Test("connect → listen: 60 kB arrive whole; the listener, given nothing to send, exits when the sender closes")
    func bytesFromTheConnectingSide() async throws {
        let air = try await Air()
        defer { air.hub.stopInBackground() }
        let sent = Self.randomBytes(60_000)
        let listener = air.listen(["0x0080", "--name", "l2cap-sink"], input: Data())
        let sender = try await air.run(["l2cap", "connect", "l2cap-sink", "0x0080", "-v"], input: sent)
        let received = try await listener.value
        #expect(sender.status == 0, "\(sender.errors)")
        #expect(received.status == 0, "\(received.errors)")
        #expect(received.standardOutput == sent, "\(received.standardOutput.count) of \(sent.count) bytes")
        #expect(sender.errors.contains("sent 60000 bytes"), "\(sender.errors)")
        #expect(sender.errors.contains("closed at the end of input"), "\(sender.errors)")
        #expect(received.errors.contains("closed by the peer"), "\(received.errors)")
    }

    @Test("listen → connect with a small MTU: 40 kB arrive whole in SDUs of at most the connector's 100 octets")
    func bytesFromTheListeningSide() async throws {
        let air = try await Air()
        defer { air.hub.stopInBackground() }
        let sent = Self.randomBytes(40_000)
        let listener = air.listen(["200", "--name", "l2cap-source"], input: sent)
        let receiver = try await air.run(["l2cap", "connect", "l2cap-source", "200", "--mtu", "100", "-v"])
        let sender = try await listener.value
        #expect(receiver.status == 0, "\(receiver.errors)")
        #expect(sender.status == 0, "\(sender.errors)")
        #expect(receiver.standardOutput == sent, "\(receiver.standardOutput.count) of \(sent.count) bytes")
        #expect(sender.errors.contains("MTU 2048 here and 100 there"), "\(sender.errors)")
        #expect(sender.errors.contains("sent 40000 bytes in 400 SDUs"), "\(sender.errors)")
    }

    @Test("a PSM nobody listens on is refused (exit 1), a missing device is exit 2, a bad PSM exit 64")
    func refusalsAndErrors() async throws {
        let air = try await Air()
        defer { air.hub.stopInBackground() }
        let listener = air.listen(["0x0080", "--name", "l2cap-only-80"], input: Data())
        let refused = try await air.run(["l2cap", "connect", "l2cap-only-80", "0x0081"])
        #expect(refused.status == 1)
        #expect(refused.errors == "error: l2cap-only-80 refused a channel on PSM 0x0081: Connection refused - SPSM not supported (0x0002)\n",
                "\(refused.errors)")
        listener.cancel()
        let missing = try await air.run(["l2cap", "connect", "nobody-here", "0x0080", "--timeout", "1"])
        #expect(missing.status == 2, "\(missing.errors)")
        #expect(missing.errors.contains("no device matching \"nobody-here\""), "\(missing.errors)")
        for psm in ["0", "0x100", "x80", "65536"] {
            let bad = try await air.run(["l2cap", "connect", "anyone", psm])
            #expect(bad.status == 64, "PSM \(psm): \(bad.errors)")
            #expect(bad.errors.split(separator: "\n").count == 1, "PSM \(psm): \(bad.errors)")
        }
    }
}
