import HCI

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
    }

    let totalBuffers: Int
    private(set) var freeBuffers: Int
    private var queues: [UInt16: [PendingPDU]] = [:]
    /// Handles with queued packets, in serving order.
    private var rotation: [UInt16] = []
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
        queues.values.reduce(0) { total, pdus in total + pdus.reduce(0) { $0 + $1.fragments.count - $1.next } }
    }

    var inFlightPacketCount: Int { inFlight.values.reduce(0, +) }

    /// Packets of one connection waiting for a controller buffer.
    func queuedPacketCount(for handle: UInt16) -> Int {
        (queues[handle] ?? []).reduce(0) { $0 + $1.fragments.count - $1.next }
    }

    mutating func enqueue(_ fragments: [HCIACLDataPacket], handle: UInt16, completion: Completion?) {
        guard !fragments.isEmpty else {
            completion?(.success(()))
            return
        }
        if queues[handle, default: []].isEmpty, !rotation.contains(handle) { rotation.append(handle) }
        queues[handle, default: []].append(PendingPDU(fragments: fragments, completion: completion))
    }

    /// The packets to send now (one per free buffer, round-robin over connections), and the completions of the
    /// PDUs whose last fragment is among them.
    mutating func takeSendable() -> (packets: [HCIACLDataPacket], completed: [Completion]) {
        var packets: [HCIACLDataPacket] = []
        var completed: [Completion] = []
        while freeBuffers > 0, !rotation.isEmpty {
            let handle = rotation.removeFirst()
            // Taken out of the dictionary while it is modified, so the array is not copied for each packet.
            guard var queue = queues.removeValue(forKey: handle), !queue.isEmpty else {
                continue
            }
            packets.append(queue[0].fragments[queue[0].next])
            queue[0].next += 1
            freeBuffers -= 1
            inFlight[handle, default: 0] += 1
            if queue[0].next >= queue[0].fragments.count {
                if let completion = queue[0].completion { completed.append(completion) }
                queue.removeFirst()
            }
            if !queue.isEmpty {
                queues[handle] = queue
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
        let failed = (queues.removeValue(forKey: handle) ?? []).compactMap(\.completion)
        rotation.removeAll { $0 == handle }
        return failed
    }

    /// Everything goes (shutdown): the queued PDUs' completions are returned.
    mutating func removeAll() -> [Completion] {
        let failed = queues.values.flatMap { $0.compactMap(\.completion) }
        queues = [:]
        rotation = []
        inFlight = [:]
        freeBuffers = totalBuffers
        return failed
    }
}
