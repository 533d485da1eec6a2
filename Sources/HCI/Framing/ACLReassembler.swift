import BluetoothCore

/// An L2CAP PDU put back together from HCI ACL Data packets, with the connection it arrived on.
public struct ReassembledL2CAPPDU: Hashable, Sendable {
    /// The connection handle.
    public var handle: UInt16
    /// The whole PDU: basic header (LE16 length, LE16 channel ID) and information payload.
    public var bytes: [UInt8]

    public init(handle: UInt16, bytes: [UInt8]) {
        self.handle = handle
        self.bytes = bytes
    }

    /// The channel ID from the basic header (Vol 3 Part A §3.1), nil if the PDU is shorter than the header.
    public var channelIdentifier: UInt16? {
        guard bytes.count >= 4 else { return nil }
        return UInt16(bytes[2]) | UInt16(bytes[3]) << 8
    }

    /// The information payload after the basic header.
    public var payload: ArraySlice<UInt8> { bytes.dropFirst(4) }
}

/// What went wrong while reassembling; each case says what was dropped.
public enum ACLReassemblyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A continuing fragment arrived on a handle with no PDU in progress; the packet was dropped.
    case continuationWithoutStart(handle: UInt16, length: Int)
    /// A start fragment arrived while a PDU was in progress; the old partial PDU (of `droppedLength` bytes) was
    /// dropped and the new one is being reassembled.
    case startWhileInProgress(handle: UInt16, droppedLength: Int)
    /// More bytes arrived than the basic header announced; the whole PDU was dropped (and its remaining
    /// continuations will be).
    case longerThanAnnounced(handle: UInt16, announced: Int, received: Int)
    /// The basic header announces a PDU (header included) longer than the reassembler accepts; it is dropped.
    case announcedLengthAboveCap(handle: UInt16, announced: Int, cap: Int)
    /// A new PDU would make more handles hold partial PDUs than allowed; it is dropped.
    case tooManyPendingPDUs(handle: UInt16, limit: Int)

    public var handle: UInt16 {
        switch self {
        case .continuationWithoutStart(let handle, _), .startWhileInProgress(let handle, _),
            .longerThanAnnounced(let handle, _, _), .announcedLengthAboveCap(let handle, _, _),
            .tooManyPendingPDUs(let handle, _):
            handle
        }
    }

    public var description: String {
        let connection = "handle \(Dissection.hex16(handle))"
        return switch self {
        case .continuationWithoutStart(_, let length):
            "\(connection): continuing fragment of \(length) bytes without a start, dropped"
        case .startWhileInProgress(_, let dropped):
            "\(connection): new start while a PDU was in progress, \(dropped) buffered bytes dropped"
        case .longerThanAnnounced(_, let announced, let received):
            "\(connection): received \(received) bytes for a PDU announced as \(announced), dropped"
        case .announcedLengthAboveCap(_, let announced, let cap):
            "\(connection): PDU announced as \(announced) bytes, above the cap of \(cap), dropped"
        case .tooManyPendingPDUs(_, let limit):
            "\(connection): more than \(limit) connections with partial PDUs, new PDU dropped"
        }
    }
}

/// Reassembles L2CAP PDUs from HCI ACL Data packets, per connection handle (Core 5.4 Vol 3 Part A §7.2.2,
/// Vol 4 Part E §5.4.2). The basic header's Length field (Vol 3 Part A §3.1) says when a PDU is complete.
///
/// Hostile input cannot make it grow without bound: each partial PDU is capped by ``maximumPDULength`` (checked
/// against the announced length before any payload is kept) and at most ``maximumPendingHandles`` handles hold
/// one. Call ``dropState(for:)`` when a connection ends. A plain value owned by the host's ACL path.
///
/// Every Packet_Boundary_Flag other than 0b01 (continuing) starts a PDU: 0b00 and 0b10 as the specification says,
/// and 0b11 (complete PDU) leniently, as a start that may still be continued.
public struct ACLReassembler: Sendable {
    /// The result of one packet: a completed PDU, a problem (what was dropped), or neither, or — when a start
    /// replaced a partial PDU and completed at once — both.
    public struct Output: Hashable, Sendable {
        public var pdu: ReassembledL2CAPPDU?
        public var error: ACLReassemblyError?

        public init(pdu: ReassembledL2CAPPDU? = nil, error: ACLReassemblyError? = nil) {
            self.pdu = pdu
            self.error = error
        }
    }

    /// A PDU being collected; `expected` is the total PDU length once the basic header is in.
    private struct Partial: Sendable {
        var bytes: [UInt8]
        var expected: Int?
    }

    /// The largest PDU (basic header included) accepted: by default 65535 + 4.
    public let maximumPDULength: Int
    /// How many handles may hold a partial PDU at once.
    public let maximumPendingHandles: Int
    private var partials: [UInt16: Partial] = [:]
    /// Handles whose current PDU was refused: their continuations are dropped silently until the next start.
    private var discarding: Set<UInt16> = []

    public init(maximumPDULength: Int = Int(UInt16.max) + 4, maximumPendingHandles: Int = 64) {
        self.maximumPDULength = max(4, maximumPDULength)
        self.maximumPendingHandles = max(1, maximumPendingHandles)
    }

    /// Bytes held in partial PDUs, all handles together.
    public var bufferedByteCount: Int {
        partials.values.reduce(0) { $0 + $1.bytes.count }
    }

    /// The handles with a PDU in progress.
    public var pendingHandles: Set<UInt16> { Set(partials.keys) }

    /// Forgets any partial PDU on `handle` (on Disconnection Complete).
    public mutating func dropState(for handle: UInt16) {
        partials[handle] = nil
        discarding.remove(handle)
    }

    /// Forgets every partial PDU.
    public mutating func reset() {
        partials = [:]
        discarding = []
    }

    /// The whole PDU's length its basic header announces: the 16-bit payload length (Vol 3 Part A §3.1) plus the
    /// 4 header octets; `bytes` holds at least the header's length field.
    private static func announcedPDULength(_ bytes: [UInt8]) -> Int {
        (Int(bytes[0]) | Int(bytes[1]) << 8) + 4
    }

    /// Takes one packet; returns the PDU it completes, if any, and the problem it revealed, if any. When a start
    /// replaces a partial PDU and is itself refused, the refusal is the error reported.
    public mutating func receive(_ packet: HCIACLDataPacket) -> Output {
        let handle = packet.handle
        var output = Output()
        if packet.packetBoundary.isStart {
            // (The tables are looked at only when they hold something: hashing the handle per packet was a cost.)
            if !discarding.isEmpty { discarding.remove(handle) }
            if !partials.isEmpty, let old = partials.removeValue(forKey: handle) {
                output.error = .startWhileInProgress(handle: handle, droppedLength: old.bytes.count)
            }
            guard partials.count < maximumPendingHandles else {
                output.error = .tooManyPendingPDUs(handle: handle, limit: maximumPendingHandles)
                return output
            }
            // A whole PDU in one packet (the usual case with LE Data Length Extension): delivered as it came, without
            // a copy into a partial buffer.
            let data = packet.data
            if data.count >= 4 {
                let announced = Self.announcedPDULength(data)
                if announced == data.count, announced <= maximumPDULength {
                    output.pdu = ReassembledL2CAPPDU(handle: handle, bytes: data)
                    return output
                }
            }
            var partial = Partial(bytes: [], expected: nil)
            let (pdu, error) = accumulate(&partial, handle: handle, adding: packet.data)
            output.pdu = pdu
            if let error { output.error = error }
            return output
        }
        if !discarding.isEmpty, discarding.contains(handle) { return output }
        guard var partial = partials.removeValue(forKey: handle) else {
            output.error = .continuationWithoutStart(handle: handle, length: packet.data.count)
            return output
        }
        (output.pdu, output.error) = accumulate(&partial, handle: handle, adding: packet.data)
        return output
    }

    /// Appends `data` to a partial PDU (already removed from the table, so uniquely owned), checks the announced
    /// length, stores the new state and returns the completed PDU or the problem.
    private mutating func accumulate(
        _ partial: inout Partial, handle: UInt16, adding data: [UInt8]
    ) -> (ReassembledL2CAPPDU?, ACLReassemblyError?) {
        var rest = data[...]
        if partial.expected == nil {
            // Complete the basic header first, then decide on the announced length before keeping any payload.
            let headerNeeded = min(4 - partial.bytes.count, rest.count)
            partial.bytes.append(contentsOf: rest.prefix(headerNeeded))
            rest = rest.dropFirst(headerNeeded)
            if partial.bytes.count >= 4 {
                let announced = Self.announcedPDULength(partial.bytes)
                guard announced <= maximumPDULength else {
                    discarding.insert(handle)
                    return (nil, .announcedLengthAboveCap(handle: handle, announced: announced, cap: maximumPDULength))
                }
                partial.expected = announced
            }
        }
        if let expected = partial.expected {
            let received = partial.bytes.count + rest.count
            guard received <= expected else {
                discarding.insert(handle)
                return (nil, .longerThanAnnounced(handle: handle, announced: expected, received: received))
            }
            partial.bytes.append(contentsOf: rest)
            if received == expected {
                return (ReassembledL2CAPPDU(handle: handle, bytes: partial.bytes), nil)
            }
        }
        partials[handle] = partial
        return (nil, nil)
    }
}
