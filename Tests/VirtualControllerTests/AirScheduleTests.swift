import BluetoothCore
import BluetoothRuntime
import Testing
@testable import VirtualController

/// The air's schedule on its own: order by deadline then scheduling order, rescheduling and cancelling through the
/// sequence numbers the owners keep, and stale entries not keeping controllers alive.
@Suite struct AirScheduleTests {
    private static func instant(_ milliseconds: UInt64) -> StackInstant { StackInstant(nanoseconds: milliseconds * 1_000_000) }

    private static func controllers(_ count: Int, on air: VirtualAir) -> [VirtualController] {
        (0..<count).map { VirtualController(air: air, address: BluetoothAddress(UInt64(0xC000_0000_0000 + $0), type: .random)) }
    }

    private static func identifier(_ task: AirSchedule.Task?) -> String {
        switch task {
        case .advertising(let device): "adv \(device.identifier)"
        case .advertisingSet(let device, let handle): "set \(device.identifier) \(handle)"
        case .controllerTimer(let device): "timer \(device.identifier)"
        case .connectionEvent(let link): "event \(link.identifier)"
        case .connectionExchange(let link): "exchange \(link.identifier)"
        case nil: "none"
        }
    }

    @Test func deadlineThenSchedulingOrderAndOnlyTheCurrentEntry() {
        let air = VirtualAir(eventLoop: ManualEventLoop(), seed: 1)
        let devices = Self.controllers(3, on: air)
        var schedule = AirSchedule()
        schedule.schedule(.advertising(devices[0]), at: Self.instant(30))
        schedule.schedule(.advertising(devices[1]), at: Self.instant(10))
        schedule.schedule(.controllerTimer(devices[1]), at: Self.instant(10))   // same deadline: after the one scheduled first
        schedule.schedule(.advertisingSet(devices[2], 3), at: Self.instant(20))
        schedule.schedule(.advertisingSet(devices[2], 4), at: Self.instant(5))
        #expect(schedule.count == 5)
        schedule.schedule(.advertising(devices[0]), at: Self.instant(1))        // rescheduled: the entry at 30 is stale
        schedule.cancel(.advertisingSet(devices[2], 4))
        schedule.cancel(.advertisingSet(devices[2], 4))                        // twice changes nothing
        #expect(schedule.count == 4)
        #expect(schedule.earliestDeadline() == Self.instant(1))
        #expect(schedule.takeDue(now: Self.instant(0)) == nil)
        var taken: [String] = []
        while let task = schedule.takeDue(now: Self.instant(100)) { taken.append(Self.identifier(task)) }
        let (a, b, c) = (devices[0].identifier, devices[1].identifier, devices[2].identifier)
        #expect(taken == ["adv \(a)", "adv \(b)", "timer \(b)", "set \(c) 3"])
        #expect(schedule.count == 0)
        #expect(schedule.earliestDeadline() == nil)
        #expect(devices.allSatisfy { $0.airTasks.advertising == 0 && $0.airTasks.timer == 0 && $0.airTasks.advertisingSets.isEmpty })
    }

    @Test func staleEntriesDoNotKeepControllersAlive() {
        let air = VirtualAir(eventLoop: ManualEventLoop(), seed: 1)
        var schedule = AirSchedule()
        weak var gone: VirtualController?
        do {
            let device = Self.controllers(1, on: air)[0]
            gone = device
            schedule.schedule(.controllerTimer(device), at: Self.instant(3_600_000))  // an hour away
            schedule.cancel(.controllerTimer(device))
            air.detach(device)
        }
        (air.eventLoop as? ManualEventLoop)?.run()
        #expect(gone != nil, "the cancelled entry still holds its controller until it is swept")
        // Stale entries may outnumber current ones by 64 before the sweep; rescheduling one live task makes them.
        let live = Self.controllers(1, on: air)[0]
        for index in 0..<200 { schedule.schedule(.advertising(live), at: Self.instant(UInt64(index))) }
        #expect(schedule.count == 1)
        #expect(gone == nil)
        #expect(schedule.takeDue(now: Self.instant(1_000)).map { Self.identifier($0) } == "adv \(live.identifier)")
        #expect(schedule.takeDue(now: Self.instant(1_000)) == nil)
    }
}
