import DequeModule
import HCI
import BluetoothEngine

/// Host-to-controller ACL data flow control (Core 5.4 Vol 4 Part E §4.1.1): the controller has
/// Total_Num_LE_ACL_Data_Packets buffers; each packet sent takes one, Number Of Completed Packets (§7.7.19) gives
/// them back. L2CAP PDUs are fragmented to LE_ACL_Data_Packet_Length before they queue; each connection has its own
/// queue and connections are served round-robin, one packet at a time, so one busy link cannot starve another.
///
/// On Disconnection Complete the controller has flushed the handle's packets, so their buffers come back
/// (§4.3) and the connection's queue fails. Sans-I/O, confined to the host's event loop.
struct ACLOutbound {
    typealias Completion = (Result<Void, HostError>) -> Void

    private struct PendingPDU {
        var fragments: [HCIACLDataPacket]
        var next = 0
        let completion: Completion?

        /// The next fragment, and whether it was the last one.
        mutating func takeFragment() -> (packet: HCIACLDataPacket, last: Bool)? {
            guard next < fragments.count else { return nil }
            let packet = fragments[next]
            next += 1
            return (packet, next >= fragments.count)
        }
    }

    /// One connection's PDUs not wholly sent, oldest first, and `packets` counts the fragments still waiting, so
    /// the readiness check after every send costs nothing.
    private struct Queue {
        var pdus: Deque<PendingPDU> = []
        var packets = 0

        var isEmpty: Bool { pdus.isEmpty }

        mutating func append(_ pdu: PendingPDU) {
            packets += pdu.fragments.count - pdu.next
            pdus.append(pdu)
        }

        /// The next fragment, and the PDU's completion when it was the PDU's last fragment.
        mutating func takeNext() -> (packet: HCIACLDataPacket, finished: Bool, completion: Completion?)? {
            // Changed in place in the deque (no copy of the PDU per packet).
            guard !pdus.isEmpty, let taken = pdus[pdus.startIndex].takeFragment() else { return nil }
            packets -= 1
            guard taken.last else { return (taken.packet, false, nil) }
            return (taken.packet, true, pdus.removeFirst().completion)
        }
    }

    let totalBuffers: Int
    private(set) var freeBuffers: Int
    private var queues: [UInt16: Queue] = [:]
    /// Handles with queued packets, in serving order.
    private var rotation: Deque<UInt16> = []
    /// Packets sent and not yet reported completed, per handle.
    private(set) var inFlight: [UInt16: Int] = [:]
    /// Number Of Completed Packets entries for handles with nothing in flight.
    private(set) var unexpectedCompletions = 0

    init(totalBuffers: Int) {
        self.totalBuffers = max(1, totalBuffers)
        freeBuffers = self.totalBuffers
    }

    /// Packets waiting for a controller buffer.
    var queuedPacketCount: Int {
        queues.values.reduce(0) { $0 + $1.packets }
    }

    var inFlightPacketCount: Int { inFlight.values.reduce(0, +) }

    /// Packets of one connection waiting for a controller buffer.
    func queuedPacketCount(for handle: UInt16) -> Int {
        queues[handle]?.packets ?? 0
    }

    mutating func enqueue(_ fragments: [HCIACLDataPacket], handle: UInt16, completion: Completion?) {
        guard !fragments.isEmpty else {
            completion?(.success(()))
            return
        }
        // One look-up of the handle per PDU (the queue is changed in place through its index).
        let pdu = PendingPDU(fragments: fragments, completion: completion)
        if let index = queues.index(forKey: handle) {
            if queues.values[index].isEmpty, !rotation.contains(handle) { rotation.append(handle) }
            queues.values[index].append(pdu)
        } else {
            var queue = Queue()
            queue.append(pdu)
            queues[handle] = queue
            if !rotation.contains(handle) { rotation.append(handle) }
        }
    }

    /// The packets to send now (one per free buffer, round-robin over connections), and the completions of the
    /// PDUs whose last fragment is among them.
    mutating func takeSendable() -> (packets: [HCIACLDataPacket], completed: [Completion]) {
        var packets: [HCIACLDataPacket] = []
        var completed: [Completion] = []
        while freeBuffers > 0, !rotation.isEmpty {
            let handle = rotation.removeFirst()
            guard let index = queues.index(forKey: handle) else { continue }
            // Changed in place through its index (no copy of the queue, one look-up per packet).
            guard let next = queues.values[index].takeNext() else {
                queues.remove(at: index)
                continue
            }
            packets.append(next.packet)
            freeBuffers -= 1
            inFlight[handle, default: 0] += 1
            if next.finished, let completion = next.completion { completed.append(completion) }
            if queues.values[index].isEmpty {
                queues.remove(at: index)
            } else {
                rotation.append(handle)
            }
        }
        return (packets, completed)
    }

    /// Number Of Completed Packets for one handle: its buffers come back (never more than were in flight).
    mutating func completed(handle: UInt16, count: Int) {
        let outstanding = inFlight[handle] ?? 0
        let returned = min(outstanding, max(0, count))
        if returned < count { unexpectedCompletions += 1 }
        if outstanding - returned == 0 { inFlight[handle] = nil } else { inFlight[handle] = outstanding - returned }
        freeBuffers = min(totalBuffers, freeBuffers + returned)
    }

    /// The connection is gone: its buffers come back and its queued PDUs fail (their completions are returned).
    mutating func removeConnection(_ handle: UInt16) -> [Completion] {
        completed(handle: handle, count: inFlight[handle] ?? 0)
        let failed = queues.removeValue(forKey: handle)?.pdus.compactMap(\.completion) ?? []
        rotation.removeAll { $0 == handle }
        return failed
    }

    /// Everything goes (shutdown): the queued PDUs' completions are returned.
    mutating func removeAll() -> [Completion] {
        let failed = queues.values.flatMap { $0.pdus.compactMap(\.completion) }
        queues = [:]
        rotation = []
        inFlight = [:]
        freeBuffers = totalBuffers
        return failed
    }
}
