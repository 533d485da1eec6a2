#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutex with a condition variable (IEEE Std 1003.1, `pthread_mutex_t` and `pthread_cond_t`), whose timed wait
/// counts on the monotonic clock: Foundation's `NSCondition` without Foundation, and without its wall-clock
/// deadlines (a clock set back would stretch a wait).
package final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    package init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if !canImport(Darwin)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    package func lock() { pthread_mutex_lock(mutex) }

    package func unlock() { pthread_mutex_unlock(mutex) }

    /// Wakes every thread waiting on the condition (call with the lock held).
    package func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits until woken (the lock held on entry and on return; a spurious wake-up returns too).
    package func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits until woken or `seconds` have passed on the monotonic clock; false when the time ran out.
    @discardableResult
    package func wait(seconds: Double) -> Bool {
        #if canImport(Darwin)
        let whole = max(0, seconds)
        var relative = timespec(tv_sec: Int(whole), tv_nsec: Int((whole - Double(Int(whole))) * 1e9))
        return pthread_cond_timedwait_relative_np(condition, mutex, &relative) == 0
        #else
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let whole = max(0, seconds)
        let nanoseconds = Int(deadline.tv_nsec) + Int((whole - whole.rounded(.down)) * 1e9)
        deadline.tv_sec += Int(whole) + nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        return pthread_cond_timedwait(condition, mutex, &deadline) == 0
        #endif
    }
}
