import Foundation
import ServiceEngine
import SystemInterface
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A raw client of the service's socket, speaking whatever a test makes it speak.
private struct RawClient: Sendable {
    let fd: Int32

    init(_ path: String) throws {
        let address = try SocketAddress.unix(path: path)
        fd = try #require(SocketAddress.makeSocket(family: AF_UNIX, type: SocketAddress.streamType))
        POSIX.disableSIGPIPE(fd)
        if let code = SocketAddress.connect(fd, address) { throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO) }
    }

    func send(_ text: String) {
        _ = POSIX.writeAll(fd, Array(text.utf8), style: .socket)
    }

    /// What the service sends until it closes the connection (or `limit` passes: nil). The wait runs on a thread of
    /// its own (TestSupport's `blockingWork`), not the test's: blocking the cooperative pool (two threads on a 2-core machine, two of these tests
    /// side by side) would starve the service's own tasks, in this process, of the answer being waited for.
    func readToEnd(within limit: Duration = .seconds(10)) async -> String? {
        await offThePool { readToEndBlocking(within: limit) }
    }

    /// The first line the service sends (nil: none within `limit`), waited for off the cooperative pool.
    func readLine(within limit: Duration = .seconds(10)) async -> String? {
        await offThePool { readLineBlocking(within: limit) }
    }

    private func offThePool(_ body: @escaping @Sendable () -> String?) async -> String? {
        await blockingWork(body)
    }

    private func readToEndBlocking(within limit: Duration) -> String? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 50) >= 0 else { return nil }
            guard descriptor.revents != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { return String(decoding: received, as: UTF8.self) }
            received += buffer[0..<count]
        }
        return nil
    }

    private func readLineBlocking(within limit: Duration) -> String? {
        var received: [UInt8] = []
        var byte: UInt8 = 0
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 50) >= 0 else { return nil }
            guard descriptor.revents != 0 else { continue }
            guard read(fd, &byte, 1) == 1 else { return nil }
            if byte == 0x0A { return String(decoding: received, as: UTF8.self) }
            received.append(byte)
        }
        return nil
    }

    func close() { POSIX.closeDescriptor(fd) }
}

/// Clients that do not speak the protocol are cut off with the service unharmed: another program is served
/// right after each.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct HostileClientTests {
    /// After each hostile client, a real program still gets a stack.
    private func stillServes(_ world: ServiceWorld) async throws {
        let stack = try await world.serviceStack()
        #expect(stack.controllerInfo.ownAddress != .zero)
        stack.shutdown()
    }

    @Test func garbageIsAProtocolViolation() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let client = try RawClient(world.servicePath)
        defer { client.close() }
        client.send("this is not JSON\n")
        let answer = try #require(await client.readToEnd())
        #expect(answer.isEmpty)
        try await stillServes(world)
    }

    @Test func aCallBeforeTheHelloIsRefused() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let client = try RawClient(world.servicePath)
        defer { client.close() }
        client.send(#"{"call":{"id":1,"_1":{"stopScanning":{}}}}"# + "\n")
        let answer = try #require(await client.readToEnd())
        #expect(answer.contains("a call before the stack is open"), "answer: \(answer)")
        try await stillServes(world)
    }

    @Test func aWrongVersionIsRefusedWithOneLine() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let client = try RawClient(world.servicePath)
        defer { client.close() }
        client.send(#"{"hello":{"_0":{"version":99,"stack":"virtual","program":"old"}}}"# + "\n")
        let answer = try #require(await client.readToEnd())
        #expect(answer.contains("protocol version 99"), "answer: \(answer)")
        try await stillServes(world)
    }

    /// A stack the service cannot open, or one on the service itself, is refused with its reason.
    @Test(arguments: [("bogus:thing", "bogus:thing"), ("service:virtual", "not on a service")])
    func aStackThatCannotBeOpenedIsRefused(stack: String, reason: String) async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let client = try RawClient(world.servicePath)
        defer { client.close() }
        client.send(#"{"hello":{"_0":{"version":1,"stack":"\#(stack)","program":"odd"}}}"# + "\n")
        // A bound for a hang, not a timing. (This wait once ran out with the service's answer never sent: both cases
        // blocked the cooperative pool's two threads while the service's task that answers waited for one.)
        let answer = try #require(await client.readToEnd(within: .seconds(30)))
        #expect(answer.hasPrefix(#"{"refused""#) && answer.contains(reason), "answer: \(answer)")
        try await stillServes(world)
    }

    @Test func aHalfMessageThenSilenceOrAnEnd() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let silent = try RawClient(world.servicePath)
        defer { silent.close() }
        silent.send(#"{"hello":{"_0":{"vers"#)
        let ending = try RawClient(world.servicePath)
        ending.send(#"{"hello":{"_0":{"vers"#)
        ending.close()
        // A half message waiting on one connection holds up nobody else.
        try await stillServes(world)
    }

    @Test func aMessageBeyondTheLimitIsCutOff() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let client = try RawClient(world.servicePath)
        defer { client.close() }
        let chunk = String(repeating: "x", count: 64 * 1024)
        for _ in 0..<(ServiceProtocol.maximumMessageLength / chunk.count + 2) { client.send(chunk) }
        #expect(await client.readToEnd() != nil, "a line longer than the limit did not end the connection")
        try await stillServes(world)
    }

    /// A program that calls and never reads its answers: once more than the outbox's bound waits for it, the
    /// service cuts it off.
    @Test func aClientThatNeverReadsIsCutOff() async throws {
        let world = try ServiceWorld(outboxLimit: 1 << 20)
        defer { world.stop() }
        let client = try RawClient(world.servicePath)
        defer { client.close() }
        client.send(#"{"hello":{"_0":{"version":1,"stack":"air:\#(world.airPath)","program":"deaf"}}}"# + "\n")
        let welcome = try #require(await client.readLine())
        #expect(welcome.hasPrefix(#"{"welcome""#), "not a welcome: \(welcome)")
        // Calls whose answers (about 90 octets each) fill far more than the socket buffers and the bound.
        let call = #"{"call":{"id":7,"_1":{"currentPrivateAddress":{}}}}"# + "\n"
        let batch = String(repeating: call, count: 1000)
        let cut = await blockingWork(within: .seconds(60)) { () -> Bool in
            for _ in 0..<200 {
                if POSIX.writeAll(client.fd, Array(batch.utf8), style: .socket) != nil { return true }
            }
            return false
        }
        #expect(cut == true, "the service kept serving a client that never reads")
        try await stillServes(world)
    }
}
