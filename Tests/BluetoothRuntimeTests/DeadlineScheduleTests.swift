import BluetoothRuntime
import Testing
import BluetoothCore

/// The schedule one timer is armed from: the earliest current deadline, ties in scheduling order, a key scheduled
/// again or cancelled no longer due at its old time.
struct DeadlineScheduleTests {
    private func at(_ milliseconds: UInt64) -> StackInstant { StackInstant(nanoseconds: milliseconds * 1_000_000) }

    @Test func earliestFirstTiesInOrderRescheduledAndCancelledKeysMove() {
        var schedule = DeadlineSchedule<String>()
        #expect(schedule.earliest() == nil && schedule.count == 0)
        schedule.schedule("b", at: at(20))
        schedule.schedule("a", at: at(10))
        schedule.schedule("c", at: at(20))
        schedule.schedule("d", at: at(5))
        #expect(schedule.earliest()?.key == "d")
        schedule.cancel("d")
        #expect(schedule.earliest()?.key == "a" && schedule.count == 3)
        schedule.schedule("a", at: at(30))  // later now: its 10 ms entry is stale
        #expect(schedule.takeDue(now: at(19)) == nil)
        #expect(schedule.takeDue(now: at(20)) == "b")  // b and c tie at 20: b was scheduled first
        #expect(schedule.takeDue(now: at(20)) == "c")
        #expect(schedule.takeDue(now: at(20)) == nil)
        #expect(schedule.earliest()?.deadline == at(30))
        #expect(schedule.takeDue(now: at(40)) == "a")
        #expect(schedule.earliest() == nil && schedule.count == 0)
    }

    @Test func aThousandKeysComeOutInDeadlineOrder() {
        var schedule = DeadlineSchedule<Int>()
        for key in 0..<1000 { schedule.schedule(key, at: at(UInt64((key * 7919) % 1000))) }
        for key in stride(from: 0, to: 1000, by: 2) { schedule.schedule(key, at: at(5000 + UInt64(key))) }
        var taken: [Int] = []
        while let key = schedule.takeDue(now: at(10_000)) { taken.append(key) }
        #expect(taken.count == 1000)
        #expect(Array(taken.prefix(500)).allSatisfy { $0 % 2 == 1 })
        #expect(Array(taken.suffix(500)) == Array(stride(from: 0, to: 1000, by: 2)))
    }
}
