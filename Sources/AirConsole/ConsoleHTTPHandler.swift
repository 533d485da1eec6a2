import NIOCore
import NIOHTTP1

/// The console's HTTP/1.1 side (RFC 9112): gathers a request's head and body (at most ``ConsoleAPI/bodyLimit``
/// octets, else 413), hands it to ``ConsoleAPI`` and writes the answer on the channel's loop. Keep-alive is honoured;
/// WebSocket upgrades never reach it (NIO's upgrader takes `/api/events` first and removes this handler).
final class ConsoleHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let api: ConsoleAPI
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false

    init(api: ConsoleAPI) {
        self.api = api
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
            tooLarge = false
        case .body(var buffer):
            guard !tooLarge else { return }
            if body.count + buffer.readableBytes > ConsoleAPI.bodyLimit {
                tooLarge = true
                body = []
            } else if let bytes = buffer.readBytes(length: buffer.readableBytes) {
                body += bytes
            }
        case .end:
            guard let head else { return }
            self.head = nil
            if tooLarge {
                return write(.error(413, "badRequest", "the body is larger than \(ConsoleAPI.bodyLimit) octets"), for: head, context: context)
            }
            let request = ConsoleRequest(method: head.method.rawValue, uri: head.uri,
                                         authorization: head.headers.first(name: "authorization"), body: body)
            body = []
            let promise = context.eventLoop.makePromise(of: ConsoleResponse.self)
            api.respond(to: request) { promise.succeed($0) }
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            promise.futureResult.whenSuccess { response in
                let (handler, context) = bound.value
                handler.write(response, for: head, context: context)
            }
        }
    }

    /// A connection silent for ``AirConsole/idleTimeout`` is closed.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    private func write(_ response: ConsoleResponse, for request: HTTPRequestHead, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: response.contentType)
        headers.add(name: "Content-Length", value: "\(response.body.count)")
        headers.add(name: "Cache-Control", value: "no-store")
        // The page and the API are this origin's only: no framing by others, no sniffing.
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "X-Frame-Options", value: "DENY")
        if response.status == 405 { headers.add(name: "Allow", value: response.allowed) }
        if let name = response.attachment {
            // A file name of the user's (`--record` path) stays a plain token in the header.
            let safe = String(name.unicodeScalars.map { $0.properties.isAlphabetic && $0.isASCII || ("0"..."9").contains($0)
                || "._-".unicodeScalars.contains($0) ? Character($0) : "_" })
            headers.add(name: "Content-Disposition", value: "attachment; filename=\"\(safe)\"")
        }
        if response.status == 426 {
            headers.add(name: "Upgrade", value: "websocket")
        }
        let keepAlive = request.isKeepAlive
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        let head = HTTPResponseHead(version: request.version, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if request.method != .HEAD, !response.body.isEmpty {
            var buffer = context.channel.allocator.buffer(capacity: response.body.count)
            buffer.writeBytes(response.body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
