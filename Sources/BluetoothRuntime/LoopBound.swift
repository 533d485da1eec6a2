/// Carries a value that belongs to one `EventLoop` across a `@Sendable` boundary (a job, a timer), like
/// swift-nio's `NIOLoopBound`. Access is only legal on that loop; debug builds check it.
public struct LoopBound<Value>: @unchecked Sendable {
    private let storage: Box
    public let eventLoop: any EventLoop

    private final class Box {
        var value: Value
        init(_ value: Value) { self.value = value }
    }

    public init(_ value: Value, eventLoop: any EventLoop) {
        storage = Box(value)
        self.eventLoop = eventLoop
    }

    /// The value; read and write only on ``eventLoop``.
    public var value: Value {
        get {
            assert(eventLoop.inEventLoop, "LoopBound value read off its event loop")
            return storage.value
        }
        nonmutating set {
            assert(eventLoop.inEventLoop, "LoopBound value written off its event loop")
            storage.value = newValue
        }
    }
}
