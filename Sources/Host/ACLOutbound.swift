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

    /// One connection's PDUs not wholly sent, oldest first; `packets` counts the fragments still waiting (so the
    /// readiness check after every send costs nothing) and `inFlight` those sent and not yet completed. Kept in one
    /// table so that a packet taken is one look-up of its handle.
    private struct Flow {
        var pdus: Deque<PendingPDU> = []
        var packets = 0
        var inFlight = 0

        /// Nothing queued and nothing in flight: the connection leaves the table.
        var isIdle: Bool { pdus.isEmpty && inFlight == 0 }

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
    private var flows: [UInt16: Flow] = [:]
    /// Handles with queued packets, in serving order.
    private var rotation: Deque<UInt16> = []
    /// Number Of Completed Packets entries for handles with nothing in flight.
    private(set) var unexpectedCompletions = 0

    init(totalBuffers: Int) {
        self.totalBuffers = max(1, totalBuffers)
        freeBuffers = self.totalBuffers
    }

    /// Packets waiting for a controller buffer.
    var queuedPacketCount: Int {
        flows.values.reduce(0) { $0 + $1.packets }
    }

    var inFlightPacketCount: Int { flows.values.reduce(0) { $0 + $1.inFlight } }

    /// Packets of one connection waiting for a controller buffer.
    func queuedPacketCount(for handle: UInt16) -> Int {
        flows[handle]?.packets ?? 0
    }

    /// Packets of one connection sent and not yet completed.
    func inFlightPacketCount(for handle: UInt16) -> Int {
        flows[handle]?.inFlight ?? 0
    }

    mutating func enqueue(_ fragments: [HCIACLDataPacket], handle: UInt16, completion: Completion?) {
        guard !fragments.isEmpty else {
            completion?(.success(()))
            return
        }
        // One look-up of the handle per PDU (the flow is changed in place through its index). A handle is in the
        // rotation exactly while its flow has PDUs queued, so one that had none joins it.
        let pdu = PendingPDU(fragments: fragments, completion: completion)
        if let index = flows.index(forKey: handle) {
            if flows.values[index].pdus.isEmpty { rotation.append(handle) }
            flows.values[index].append(pdu)
        } else {
            var flow = Flow()
            flow.append(pdu)
            flows[handle] = flow
            rotation.append(handle)
        }
        assert(rotation.filter { $0 == handle }.count == 1, "a handle is in the rotation once while it has PDUs queued")
    }

    /// The packets to send now (one per free buffer, round-robin over connections), and the completions of the
    /// PDUs whose last fragment is among them.
    mutating func takeSendable() -> (packets: [HCIACLDataPacket], completed: [Completion]) {
        var packets: [HCIACLDataPacket] = []
        var completed: [Completion] = []
        while freeBuffers > 0, !rotation.isEmpty {
            let handle = rotation.removeFirst()
            guard let index = flows.index(forKey: handle) else { continue }
            // Changed in place through its index (no copy of the queue, one look-up per packet).
            guard let next = flows.values[index].takeNext() else {
                if flows.values[index].isIdle { flows.remove(at: index) }
                continue
            }
            packets.append(next.packet)
            freeBuffers -= 1
            flows.values[index].inFlight += 1
            if next.finished, let completion = next.completion { completed.append(completion) }
            if !flows.values[index].pdus.isEmpty { rotation.append(handle) }
        }
        return (packets, completed)
    }

    /// Number Of Completed Packets for one handle: its buffers come back (never more than were in flight).
    mutating func completed(handle: UInt16, count: Int) {
        guard let index = flows.index(forKey: handle) else {
            if count > 0 { unexpectedCompletions += 1 }
            return
        }
        let outstanding = flows.values[index].inFlight
        let returned = min(outstanding, max(0, count))
        if returned < count { unexpectedCompletions += 1 }
        flows.values[index].inFlight = outstanding - returned
        if flows.values[index].isIdle { flows.remove(at: index) }
        freeBuffers = min(totalBuffers, freeBuffers + returned)
    }

    /// The connection is gone: its buffers come back and its queued PDUs fail (their completions are returned).
    mutating func removeConnection(_ handle: UInt16) -> [Completion] {
        completed(handle: handle, count: inFlightPacketCount(for: handle))
        let failed = flows.removeValue(forKey: handle)?.pdus.compactMap(\.completion) ?? []
        rotation.removeAll { $0 == handle }
        return failed
    }

    /// Everything goes (shutdown): the queued PDUs' completions are returned.
    mutating func removeAll() -> [Completion] {
        let failed = flows.values.flatMap { $0.pdus.compactMap(\.completion) }
        flows = [:]
        rotation = []
        freeBuffers = totalBuffers
        return failed
    }
}
