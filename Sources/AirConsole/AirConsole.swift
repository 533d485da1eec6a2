import BluetoothRuntime
public import SharedAir
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// The air console (issue 29, `blue air --console`): a web page of the running hub's air and the control API
/// behind it (Docs/air-console.openapi.json), served over HTTP/1.1 with a WebSocket for live events (RFC 6455), on
/// one SwiftNIO event loop of its own: the air's loop is never the server's.
///
/// Trust (issue 29 item 3, issue 30): it listens on loopback unless given another address, and every `/api/`
/// request and the WebSocket need the ``ConsoleToken`` that `blue air` prints in the console's address (the page
/// itself is public: it holds nothing). Faults go through ``AirHub/apply(_:completion:)``, so they are reported and
/// recorded as `blue fault`'s are.
public final class AirConsole: Sendable {
    /// The address and port the console listens on ("127.0.0.1", 7480).
    public let host: String
    public let port: Int
    public let token: ConsoleToken
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let stream: ConsoleEventStream
    private let captures: ConsoleCaptures

    /// Connections open at once (pages, API clients); more are closed on arrival.
    static let connectionLimit = 256
    /// How long an HTTP connection may stay silent.
    static let idleTimeout = TimeAmount.seconds(30)

    /// The page's address with its token, as `blue air` prints it ("http://127.0.0.1:7480/?token=…").
    public var address: String {
        let shown = host.contains(":") ? "[\(host)]" : host
        return "http://\(shown):\(port)/?token=\(token.text)"
    }

    /// Listens on `host`:`port` (port 0: one the system picks) for `hub`'s console. Throws ``AirHubError`` with
    /// ``AirHubError/Code/listenFailed`` and one line when the address cannot be bound.
    public static func start(hub: AirHub, host: String, port: Int, token: ConsoleToken = ConsoleToken()) throws(AirHubError) -> AirConsole {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let captures = ConsoleCaptures(hub: hub)
        let stream = ConsoleEventStream(hub: hub, captures: captures)
        let api = ConsoleAPI(hub: hub, token: token, captures: captures)
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: 1 << 16,
            shouldUpgrade: { channel, head in
                let request = ConsoleRequest(method: head.method.rawValue, uri: head.uri,
                                             authorization: head.headers.first(name: "authorization"), body: [])
                let allowed = request.path == "/api/events" && token.matches(request.token)
                return channel.eventLoop.makeSucceededFuture(allowed ? HTTPHeaders() : nil)
            },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ConsoleWebSocketHandler(stream: stream))
                }
            })
        // Anyone on the machine can connect to a loopback port: open connections are bounded, and one that says
        // nothing for ``idleTimeout`` before it is a WebSocket is closed, so nobody holds the hub's descriptors.
        let open = LockedValue(0)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let admitted = open.withLock { count -> Bool in
                    guard count < Self.connectionLimit else { return false }
                    count += 1
                    return true
                }
                guard admitted else { return channel.close() }
                channel.closeFuture.whenComplete { _ in open.withLock { $0 -= 1 } }
                return channel.eventLoop.makeCompletedFuture {
                    let http = ConsoleHTTPHandler(api: api)
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: Self.idleTimeout), name: "console-idle")
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withServerUpgrade: (upgraders: [upgrader], completionHandler: { context in
                            context.pipeline.removeHandler(name: "console-http", promise: nil)
                            context.pipeline.removeHandler(name: "console-idle", promise: nil)
                        }))
                    try channel.pipeline.syncOperations.addHandler(http, name: "console-http")
                }
            }
        do {
            let channel = try bootstrap.bind(host: host, port: port).wait()
            let bound = channel.localAddress?.port ?? port
            stream.start()
            return AirConsole(host: host, port: bound, token: token, group: group, channel: channel, stream: stream, captures: captures)
        } catch {
            try? group.syncShutdownGracefully()
            throw AirHubError(.listenFailed, "the console cannot listen on \(host):\(port): \(error)")
        }
    }

    private init(host: String, port: Int, token: ConsoleToken, group: MultiThreadedEventLoopGroup, channel: any Channel,
                 stream: ConsoleEventStream, captures: ConsoleCaptures) {
        self.host = host
        self.port = port
        self.token = token
        self.group = group
        self.channel = channel
        self.stream = stream
        self.captures = captures
    }

    /// A hub event, for the pages (call from the hub's ``AirHub/onEvent``).
    public func publish(_ event: AirHubEvent) {
        stream.publish(event)
    }

    /// Stops listening and closes every page's connection.
    public func stop() {
        stream.close()
        captures.close()
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }
}
