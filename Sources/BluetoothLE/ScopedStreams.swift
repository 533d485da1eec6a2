import BluetoothRuntime

/// Calls its action once, when asked or when released: the end of a stream's life.
final class StopToken: Sendable {
    private let action: LockedValue<(@Sendable () -> Void)?>

    init(_ action: @escaping @Sendable () -> Void) {
        self.action = LockedValue(action)
    }

    func stop() {
        let action = self.action.withLock { action in
            defer { action = nil }
            return action
        }
        action?()
    }

    deinit { stop() }
}

/// The advertisements of a scan (``BluetoothStack/scan(services:duplicates:)``), as an `AsyncSequence` that stops
/// its scan when the consumer stops iterating: leaving the `for try await` loop (break, return, an error,
/// cancellation of the iterating task) or dropping the sequence unused. One consumer: each sequence is one scan
/// subscription.
public struct AdvertisementStream: AsyncSequence, Sendable {
    public typealias Element = Advertisement
    public typealias Failure = any Error

    let base: AsyncThrowingStream<Advertisement, any Error>
    let token: StopToken

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: base.makeAsyncIterator(), token: token)
    }

    /// Ends the subscription (the sequence then finishes).
    public func stop() { token.stop() }

    /// Iterates the advertisements; when released, it stops the scan subscription.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<Advertisement, any Error>.Iterator
        let token: IteratorToken

        init(base: AsyncThrowingStream<Advertisement, any Error>.Iterator, token: StopToken) {
            self.base = base
            self.token = IteratorToken(token)
        }

        public mutating func next() async throws -> Advertisement? {
            try await base.next()
        }
    }
}

/// Values of the stack (notifications, incoming centrals, incoming L2CAP channels) as an `AsyncSequence` that ends
/// its subscription when the consumer stops iterating (leaving the `for await` loop or cancelling the iterating
/// task) or drops the sequence unused. One consumer per sequence.
public struct ValueStream<Element: Sendable>: AsyncSequence, Sendable {
    public typealias Failure = Never

    let base: AsyncStream<Element>
    let token: StopToken

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: base.makeAsyncIterator(), token: token)
    }

    /// Ends the subscription (the sequence then finishes).
    public func stop() { token.stop() }

    /// Iterates the values; when released, it ends the subscription.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncStream<Element>.Iterator
        let token: IteratorToken

        init(base: AsyncStream<Element>.Iterator, token: StopToken) {
            self.base = base
            self.token = IteratorToken(token)
        }

        public mutating func next() async -> Element? {
            await base.next()
        }
    }
}

/// Stops the stream's subscription when the iterator holding it is released (the loop over it ended).
final class IteratorToken: Sendable {
    let token: StopToken
    init(_ token: StopToken) { self.token = token }
    deinit { token.stop() }
}
