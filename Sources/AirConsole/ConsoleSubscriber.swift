import BluetoothRuntime
import NIOCore
import NIOWebSocket

/// One page's WebSocket (`/api/events`): text frames written from any thread, at most ``backlogLimit`` unwritten,
/// beyond which packets are dropped (and counted for the page) rather than queued: the air never waits for a browser.
final class ConsoleSubscriber: Sendable {
    /// Messages a page may leave unwritten before packets to it are dropped.
    static let backlogLimit = 2_048

    let channel: any Channel
    private let pending = LockedValue(0)
    private let dropped = LockedValue(0)
    private let gone = LockedValue(false)

    /// Whether the page has left (its connection ended).
    var isGone: Bool { gone.load() }

    func markGone() {
        gone.store(true)
    }

    init(channel: any Channel) {
        self.channel = channel
    }

    /// Sends `text`; a `droppable` message (a packet) is dropped when the page is behind. Any thread.
    func send(_ text: String, droppable: Bool = false) {
        let accepted = pending.withLock { value -> Bool in
            if droppable, value >= Self.backlogLimit { return false }
            value += 1
            return true
        }
        guard accepted else {
            dropped.withLock { $0 += 1 }
            return
        }
        let frame = WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(string: text))
        let pending = pending
        channel.writeAndFlush(frame).whenComplete { _ in pending.withLock { $0 -= 1 } }
    }

    /// Packets dropped for this page since the last call.
    func takeDropped() -> Int {
        dropped.withLock { value in defer { value = 0 }; return value }
    }
}

/// The WebSocket side of a page: answers pings and closes, ignores what else the page sends, and leaves the
/// stream when the connection ends.
final class ConsoleWebSocketHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let stream: ConsoleEventStream
    private var subscriber: ConsoleSubscriber?

    init(stream: ConsoleEventStream) {
        self.stream = stream
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let subscriber = ConsoleSubscriber(channel: context.channel)
        self.subscriber = subscriber
        stream.subscribe(subscriber)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let subscriber { stream.unsubscribe(subscriber) }
        subscriber = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .connectionClose:
            var data = frame.unmaskedData
            let code = data.readWebSocketErrorCode() ?? .normalClosure
            var reply = context.channel.allocator.buffer(capacity: 2)
            reply.write(webSocketErrorCode: code == .unknown(1005) ? .normalClosure : code)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: reply)))
                .whenComplete { _ in channel.close(promise: nil) }
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        default:
            break
        }
    }
}
