#if canImport(Glibc)
public import Glibc
#elseif canImport(Musl)
public import Musl
#elseif canImport(Darwin)
public import Darwin
#endif

/// A value behind a mutex, for the few pieces of state shared across threads (loop queues, transports).
public final class LockedValue<Value>: @unchecked Sendable {
    // The mutex comes first: a zero-sized value (`LockedValue(())`, a plain lock) placed before it would share its
    // address, and ThreadSanitizer would take the pointer's read before locking for a race with the value's access
    // (a plain lock uses `whileLocked`, which does not access the value at all).
    // Inlinable (with the storage usable from inline code): the callers are on every per-packet path of the stack
    // (the event fan-out, transports, loops), in other modules, and are specialised for their value type.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    // The mutex makes every access of the value exclusive (a nested access from the same thread would deadlock on
    // it first), so the run-time exclusivity check, ~100 instructions per access on paths taken per packet, has
    // nothing left to find.
    @exclusivity(unchecked) @usableFromInline var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// A copy of the value, read under the lock without an `inout` access. Use this to read closures: reading a
    /// function-typed value through `withLock { $0 }` is an inout access of a generic value, which re-abstracts
    /// the closure and writes it back on every call, so each read would wrap it in more thunks.
    @inlinable
    public func load() -> Value {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return value
    }

    /// Replaces the value under the lock.
    @inlinable
    public func store(_ newValue: Value) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        value = newValue
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Runs `body` while holding the lock, without an access to the value: for a `LockedValue(())` used as a plain
    /// lock (a writer's lock, a handler's serialisation). `withLock { _ in }` would begin an `inout` access of the
    /// zero-sized value, whose address ThreadSanitizer's Swift access checks share with the object's header, and
    /// report a race between two holders of the lock.
    @inlinable
    public func whileLocked<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
