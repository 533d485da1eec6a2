import BluetoothCore
import HeapModule

/// When each of the air's tasks (advertising events, connection events, controllers' own deadlines) is next due:
/// a heap ordered by deadline, then by scheduling order, whose entries carry the controller or link they belong
/// to. Each task's current entry is marked by a sequence number its owner keeps (``AirTaskSequences`` in the
/// controller, the link's own), so that taking and rescheduling an advertising event costs no hashing and no look-up
/// of the device by identifier: with 100,000 advertisers those were a quarter of the air's time (issue 31 item 5).
///
/// A task scheduled again or cancelled leaves its old entry behind; entries that are no longer current are dropped
/// when they reach the top, and all at once when they outnumber the current ones (so that a cancelled far-off
/// deadline does not keep its controller alive long). A value type, confined to the air's loop.
struct AirSchedule {
    /// One thing the air does at a time of its own.
    enum Task {
        /// The legacy advertising commands' advertising of a controller.
        case advertising(VirtualController)
        /// An advertising set of a controller, by handle.
        case advertisingSet(VirtualController, UInt8)
        /// A controller's own deadlines (``VirtualController/nextDeadline``).
        case controllerTimer(VirtualController)
        case connectionEvent(AirLink)
        /// The next exchange of a connection event under ``AirConfiguration/realRadioTiming``.
        case connectionExchange(AirLink)

        /// The sequence number of this task's current entry, 0 when it is not scheduled.
        var currentSequence: UInt64 {
            get {
                switch self {
                case .advertising(let device): device.airTasks.advertising
                case .advertisingSet(let device, let handle): device.airTasks.advertisingSets[handle] ?? 0
                case .controllerTimer(let device): device.airTasks.timer
                case .connectionEvent(let link): link.eventSequence
                case .connectionExchange(let link): link.exchangeSequence
                }
            }
            nonmutating set {
                switch self {
                case .advertising(let device): device.airTasks.advertising = newValue
                case .advertisingSet(let device, let handle): device.airTasks.advertisingSets[handle] = newValue == 0 ? nil : newValue
                case .controllerTimer(let device): device.airTasks.timer = newValue
                case .connectionEvent(let link): link.eventSequence = newValue
                case .connectionExchange(let link): link.exchangeSequence = newValue
                }
            }
        }
    }

    struct Entry: Comparable {
        var deadline: StackInstant
        var sequence: UInt64
        var task: Task

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            lhs.deadline < rhs.deadline || (lhs.deadline == rhs.deadline && lhs.sequence < rhs.sequence)
        }

        static func == (lhs: Entry, rhs: Entry) -> Bool { lhs.sequence == rhs.sequence }

        var isCurrent: Bool { task.currentSequence == sequence }
    }

    private var heap = Heap<Entry>()
    private var sequence: UInt64 = 0
    /// Tasks scheduled now.
    private(set) var count = 0

    /// `task` is due at `deadline` (instead of any earlier scheduling of it).
    mutating func schedule(_ task: Task, at deadline: StackInstant) {
        sequence &+= 1
        if task.currentSequence == 0 { count += 1 }
        task.currentSequence = sequence
        heap.insert(Entry(deadline: deadline, sequence: sequence, task: task))
        if heap.count > 2 * count + 64 { dropStaleEntries() }
    }

    /// `task` is no longer due.
    mutating func cancel(_ task: Task) {
        guard task.currentSequence != 0 else { return }
        task.currentSequence = 0
        count -= 1
    }

    /// The earliest deadline of a scheduled task, nil when none is.
    mutating func earliestDeadline() -> StackInstant? {
        while let top = heap.min {
            if top.isCurrent { return top.deadline }
            heap.removeMin()
        }
        return nil
    }

    /// Takes the task due first when it is due at or before `now`.
    mutating func takeDue(now: StackInstant) -> Task? {
        guard let deadline = earliestDeadline(), deadline <= now else { return nil }
        let entry = heap.removeMin()
        entry.task.currentSequence = 0
        count -= 1
        return entry.task
    }

    private mutating func dropStaleEntries() {
        heap = Heap(heap.unordered.filter(\.isCurrent))
    }
}

/// The sequence numbers of a controller's current entries in the air's ``AirSchedule`` (0: not scheduled).
struct AirTaskSequences {
    var advertising: UInt64 = 0
    var timer: UInt64 = 0
    var advertisingSets: [UInt8: UInt64] = [:]
}
