import Foundation
import HCI
@testable import HCITransport
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif
import SystemInterface

/// H4 over TCP and UNIX sockets through ``H4Listener``, against raw peers written with plain POSIX calls.
@Suite struct SocketTransportTests {
    enum Kind: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case tcp, unix
        var testDescription: String { rawValue }
    }

    /// A listener of `kind` whose accepted transports land in the mailbox.
    static func makeListener(_ kind: Kind) throws -> (H4Listener, Mailbox<SocketH4Transport>) {
        let accepted = Mailbox<SocketH4Transport>()
        let listener: H4Listener
        switch kind {
        case .tcp: listener = try H4Listener.listen(tcpHost: "127.0.0.1", port: 0) { accepted.put($0) }
        case .unix: listener = try H4Listener.listen(unixPath: temporaryPath(".sock")) { accepted.put($0) }
        }
        return (listener, accepted)
    }

    static func rawPeer(for listener: H4Listener) throws -> RawPeer {
        if let port = listener.port { return try RawPeer.tcp(port: port) }
        return try RawPeer.unix(path: try #require(listener.path))
    }

    @Test(arguments: Kind.allCases)
    func peerWritingByteByByteGivesIdenticalFrames(kind: Kind) async throws {
        let (listener, accepted) = try Self.makeListener(kind)
        defer { listener.close() }
        let peer = try Self.rawPeer(for: listener)
        defer { peer.close() }
        let server = try #require(await accepted.take())
        let seen = Collector()
        try seen.start(server)
        let frames = sampleFrames(count: 30, seed: 10)
        for byte in H4Framer.encode(frames) { try peer.write([byte]) }
        #expect(await seen.waitForFrames(frames.count) == frames)
        // And back: the transport's frames, read by the raw peer, are byte-identical.
        let answers = sampleFrames(count: 40, seed: 11)
        for frame in answers { try server.send(frame) }
        #expect(try await peer.readFrames(answers.count) == answers)
        server.close()
        #expect(await seen.waitForClose() == .some(nil))
        #expect(throws: HCITransportError(.closed, "\(server.name): the transport is closed")) {
            try server.send(answers[0])
        }
    }

    @Test(arguments: Kind.allCases)
    func peerWriting200PacketsInOneWriteGivesIdenticalFrames(kind: Kind) async throws {
        let (listener, accepted) = try Self.makeListener(kind)
        defer { listener.close() }
        let peer = try Self.rawPeer(for: listener)
        defer { peer.close() }
        let server = try #require(await accepted.take())
        let seen = Collector()
        try seen.start(server)
        let frames = sampleFrames(count: 200, seed: 12)
        try peer.write(H4Framer.encode(frames))
        #expect(await seen.waitForFrames(frames.count) == frames)
        // The peer hangs up: closedByPeer.
        peer.close()
        let closed = await seen.waitForClose()
        #expect(closed??.code == .closedByPeer)
        #expect(throws: HCITransportError.self) { try server.send(frames[0]) }
    }

    @Test("a batch sent in one call arrives whole and in order; what one read brings is delivered in one call",
          arguments: Kind.allCases)
    func batchesBothWays(kind: Kind) async throws {
        let (listener, accepted) = try Self.makeListener(kind)
        defer { listener.close() }
        let peer = try Self.rawPeer(for: listener)
        defer { peer.close() }
        let server = try #require(await accepted.take())
        let seen = Collector()
        let frames = sampleFrames(count: 120, seed: 13)
        // Written before the reader starts: its first read finds many frames waiting.
        try peer.write(H4Framer.encode(frames))
        try seen.startBatched(server)
        #expect(await seen.waitForFrames(frames.count) == frames)
        #expect(seen.batchSizes.reduce(0, +) == frames.count)
        #expect(seen.batchSizes.count < frames.count, "\(seen.batchSizes)")
        let answers = sampleFrames(count: 60, seed: 14)
        try server.send(frames: answers)
        try server.send(frames: [])
        #expect(try await peer.readFrames(answers.count) == answers)
        server.close()
        #expect(await seen.waitForClose() == .some(nil))
        #expect(throws: HCITransportError.self) { try server.send(frames: answers) }
    }

    @Test(arguments: Kind.allCases)
    func ourClientAndOurServerExchangeFramesBothWays(kind: Kind) async throws {
        let (listener, accepted) = try Self.makeListener(kind)
        defer { listener.close() }
        let client: SocketH4Transport
        switch kind {
        case .tcp:
            let port = try #require(listener.port)
            client = try SocketH4Transport.connect(host: "localhost", port: port)
            #expect(client.name == "tcp:localhost:\(port)")
            #expect(listener.name == "tcp:127.0.0.1:\(port)")
        case .unix:
            let path = try #require(listener.path)
            client = try SocketH4Transport.connect(path: path)
            #expect(client.name == "unix:\(path)")
        }
        let server = try #require(await accepted.take())
        let clientSeen = Collector()
        let serverSeen = Collector()
        try clientSeen.start(client)
        try serverSeen.start(server)
        let commands = sampleFrames(count: 200, seed: 13)
        let events = sampleFrames(count: 200, seed: 14)
        for frame in commands { try client.send(frame) }
        for frame in events { try server.send(frame) }
        #expect(await serverSeen.waitForFrames(200) == commands)
        #expect(await clientSeen.waitForFrames(200) == events)
        client.close()
        #expect(await clientSeen.waitForClose() == .some(nil))
        #expect(await serverSeen.waitForClose()??.code == .closedByPeer)
    }

    @Test(arguments: Kind.allCases)
    func poisonedStreamClosesWithFramingErrorNamingTheOffset(kind: Kind) async throws {
        let (listener, accepted) = try Self.makeListener(kind)
        defer { listener.close() }
        let peer = try Self.rawPeer(for: listener)
        defer { peer.close() }
        let server = try #require(await accepted.take())
        let seen = Collector()
        try seen.start(server)
        // HCI Reset (4 bytes on the wire), then indicator 0x07, which no packet type has.
        try peer.write(hex("01 03 0C 00 07 01 02 03"))
        let closed = await seen.waitForClose()
        #expect(seen.frames == [H4Frame(type: .command, packet: hex("03 0C 00"))])
        #expect(closed == .some(HCITransportError(
            .framingError, "\(server.name): poisoned H4 stream: unknown HCI packet indicator 0x07 at stream offset 4")))
        #expect(throws: HCITransportError(.closed, "\(server.name): the transport is closed")) {
            try server.send(H4Frame(type: .event, packet: hex("0E 04 01 03 0C 00")))
        }
    }

    @Test func lengthAboveTheCapPoisonsTheStream() async throws {
        // A transport capped at 27 octets receives an ACL packet announcing 100.
        let fds = try Self.socketPair()
        let capped = try SocketH4Transport(acceptedFileDescriptor: fds.0, name: "pair", maximumPayloadLength: 27)
        let peer = RawPeer(fd: fds.1)
        defer { peer.close() }
        let seen = Collector()
        try seen.start(capped)
        try peer.write(hex("02 40 00 64 00") + [UInt8](repeating: 0, count: 100))
        let closed = await seen.waitForClose()
        #expect(closed == .some(HCITransportError(
            .framingError, "pair: poisoned H4 stream: HCI ACL Data packet at stream offset 0 announces 100 bytes, above the cap of 27")))
        #expect(seen.frames.isEmpty)
    }

    static func socketPair() throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { throw PeerError("socketpair \(errno)") }
        return (fds[0], fds[1])
    }

    @Test func peerClosingMidFrameIsReported() async throws {
        let fds = try Self.socketPair()
        let transport = try SocketH4Transport(acceptedFileDescriptor: fds.0, name: "pair")
        let peer = RawPeer(fd: fds.1)
        let seen = Collector()
        try seen.start(transport)
        try peer.write(hex("04 0E 04 01"))
        peer.close()
        #expect(await seen.waitForClose() == .some(HCITransportError(
            .closedByPeer, "pair: the peer closed the connection in the middle of a frame (4 bytes of it received)")))
    }

    @Test func writingToAVanishedPeerThrowsInsteadOfRaisingSIGPIPE() throws {
        let fds = try Self.socketPair()
        let transport = try SocketH4Transport(acceptedFileDescriptor: fds.0, name: "pair")
        _ = Glibc.close(fds.1)
        // Not started: no reader noticed the hang-up, so the write itself meets EPIPE (SIGPIPE would kill us).
        let frame = H4Frame(type: .command, packet: hex("03 0C 00"))
        #expect(throws: HCITransportError(
            .closedByPeer, "pair: the peer closed the connection (\(POSIX.errorText(EPIPE)))")) {
            try transport.send(frame)
        }
        #expect(throws: HCITransportError(.closed, "pair: the transport is closed")) { try transport.send(frame) }
        transport.close()
    }

    @Test func connectingToNobodyFailsClearly() throws {
        // A port nobody listens on: outside the ephemeral range, so no other listener of the run is given it.
        let port = try TestPorts.reserve()
        let error = #expect(throws: HCITransportError.self) { try SocketH4Transport.connect(host: "127.0.0.1", port: port) }
        #expect(error?.code == .openFailed)
        #expect(error?.reason.hasPrefix("tcp:127.0.0.1:\(port): connect failed: Connection refused") == true)
        let path = temporaryPath(".none")
        let unixError = #expect(throws: HCITransportError.self) { try SocketH4Transport.connect(path: path) }
        #expect(unixError?.reason == "unix:\(path): connect failed: \(POSIX.errorText(ENOENT)) (no socket at this path)")
    }

    @Test func secondListenerOnALiveUnixPathFailsAndAStaleFileIsReplaced() throws {
        let path = temporaryPath(".sock")
        let first = try H4Listener.listen(unixPath: path) { $0.close() }
        let error = #expect(throws: HCITransportError.self) { try H4Listener.listen(unixPath: path) { $0.close() } }
        #expect(error == HCITransportError(
            .openFailed,
            "listen on unix:\(path): another listener is already accepting connections on \(path); stop it or choose another path"))
        // The first one still works.
        let client = try SocketH4Transport.connect(path: path)
        client.close()
        first.close()
        #expect(access(path, F_OK) != 0, "close() removes the socket file")

        // A stale socket file (bound, never listening, its owner gone) is replaced.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let address = try SocketAddress.unix(path: path)
        #expect(SocketAddress.bind(stale, address) == nil)
        _ = Glibc.close(stale)
        #expect(access(path, F_OK) == 0)
        let second = try H4Listener.listen(unixPath: path) { $0.close() }
        let again = try SocketH4Transport.connect(path: path)
        again.close()
        second.close()

        // A path that is not a socket is never removed.
        let file = temporaryPath(".txt")
        #expect(FileManager.default.createFile(atPath: file, contents: Data("keep".utf8)))
        defer { unlink(file) }
        let notSocket = #expect(throws: HCITransportError.self) { try H4Listener.listen(unixPath: file) { $0.close() } }
        #expect(notSocket?.reason == "listen on unix:\(file): \(file) exists and is not a socket; refusing to replace it")
        #expect(access(file, F_OK) == 0)
    }

    @Test func listenerCloseStopsAccepting() async throws {
        // A reserved port, not port 0: once closed, an ephemeral port may be handed at once to another listener of
        // the parallel run, and the connect below would reach it.
        let accepted = Mailbox<SocketH4Transport>()
        let listener = try H4Listener.listen(tcpHost: "127.0.0.1", port: try TestPorts.reserve()) { accepted.put($0) }
        let port = try #require(listener.port)
        let peer = try RawPeer.tcp(port: port)
        let server = try #require(await accepted.take())
        server.close()
        peer.close()
        listener.close()
        listener.close()
        #expect(throws: PeerError.self) { try RawPeer.tcp(port: port) }
    }
}
