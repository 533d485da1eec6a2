/// A broken rule of credit-based SDU segmentation and reassembly, Core 5.4 Vol 3 Part A §3.4.3. On receipt each
/// of these makes the Host disconnect the channel.
public enum L2CAPSDUError: Error, Hashable, Sendable, CustomStringConvertible, Codable {
    /// The SDU length field (or the SDU to send) is larger than the receiver's MTU.
    case sduLengthExceedsMTU(sduLength: Int, mtu: UInt16)
    /// A K-frame's information payload is larger than the receiver's MPS.
    case payloadExceedsMPS(payloadLength: Int, mps: UInt16)
    /// The K-frames carry more data than the SDU length field announced.
    case dataExceedsSDULength(sduLength: Int, received: Int)
    /// The first K-frame of an SDU is too short to hold the 2-octet SDU length field.
    case missingSDULength(payloadLength: Int)
    /// An MPS too small to carry the SDU length field (segmentation only).
    case mpsTooSmall(mps: UInt16)

    public var description: String {
        switch self {
        case .sduLengthExceedsMTU(let length, let mtu): "SDU length \(length) exceeds the MTU \(mtu)"
        case .payloadExceedsMPS(let length, let mps): "K-frame payload of \(length) bytes exceeds the MPS \(mps)"
        case .dataExceedsSDULength(let length, let received):
            "K-frames carry \(received) bytes, more than the announced SDU length \(length)"
        case .missingSDULength(let length):
            "first K-frame of an SDU has \(length) byte\(length == 1 ? "" : "s"), too short for the SDU length field"
        case .mpsTooSmall(let mps): "MPS \(mps) cannot carry the 2-octet SDU length"
        }
    }
}

/// Segmentation of an SDU into K-frame information payloads for an LE Credit Based (or Enhanced Credit Based)
/// channel, Core 5.4 Vol 3 Part A §3.4.2 and §7.3: the first K-frame starts with the little-endian 16-bit SDU
/// length, and no K-frame payload exceeds the peer's MPS.
public enum L2CAPSDUSegmenter {
    /// The length of the SDU length field in the first K-frame.
    public static let sduLengthFieldLength = 2

    /// The K-frame payloads (each to be sent in an ``L2CAPBasicFrame`` on the channel's destination CID, one
    /// credit each). `mtu` and `mps` are the peer's values. An empty SDU gives one K-frame holding only the SDU
    /// length 0.
    public static func segment(_ sdu: [UInt8], mtu: UInt16, mps: UInt16) throws(L2CAPSDUError) -> [[UInt8]] {
        guard sdu.count <= Int(mtu) else { throw .sduLengthExceedsMTU(sduLength: sdu.count, mtu: mtu) }
        guard mps >= UInt16(sduLengthFieldLength) else { throw .mpsTooSmall(mps: mps) }
        let mpsCount = Int(mps)
        let firstCount = min(sdu.count, mpsCount - sduLengthFieldLength)
        var first: [UInt8] = [UInt8(truncatingIfNeeded: sdu.count), UInt8(truncatingIfNeeded: sdu.count >> 8)]
        first.append(contentsOf: sdu[0..<firstCount])
        var frames = [first]
        var start = firstCount
        while start < sdu.count {
            let end = min(sdu.count, start + mpsCount)
            frames.append(Array(sdu[start..<end]))
            start = end
        }
        return frames
    }
}

/// Reassembles SDUs from the K-frame payloads received on one credit-based channel, Core 5.4 Vol 3 Part A
/// §3.4.3, enforcing the receiver's rules: SDU length ≤ MTU, each K-frame payload ≤ MPS, and no more data than
/// the SDU length announced. Owned by the Host, one per channel; after an error the state is reset (the Host
/// disconnects the channel anyway).
public struct L2CAPSDUReassembler: Hashable, Sendable {
    /// The local receive MTU (largest SDU accepted).
    public var mtu: UInt16
    /// The local receive MPS (largest K-frame payload accepted).
    public var mps: UInt16

    private var expectedLength: Int?
    private var buffer: [UInt8] = []

    public init(mtu: UInt16, mps: UInt16) {
        self.mtu = mtu
        self.mps = mps
    }

    /// Whether the first K-frame of an SDU has arrived and more are expected.
    public var isReassembling: Bool { expectedLength != nil }

    /// How many octets of the current SDU are still missing (0 when idle).
    public var missingLength: Int {
        guard let expectedLength else { return 0 }
        return expectedLength - buffer.count
    }

    /// Feeds one K-frame information payload; returns the SDU when it is complete, nil while more K-frames are
    /// expected. Throws the rule the peer broke (and resets).
    public mutating func receive(_ payload: [UInt8]) throws(L2CAPSDUError) -> [UInt8]? {
        guard payload.count <= Int(mps) else {
            reset()
            throw .payloadExceedsMPS(payloadLength: payload.count, mps: mps)
        }
        if let expected = expectedLength {
            let received = buffer.count + payload.count
            guard received <= expected else {
                reset()
                throw .dataExceedsSDULength(sduLength: expected, received: received)
            }
            buffer.append(contentsOf: payload)
        } else {
            guard payload.count >= L2CAPSDUSegmenter.sduLengthFieldLength else {
                reset()
                throw .missingSDULength(payloadLength: payload.count)
            }
            let start = payload.startIndex
            let sduLength = Int(payload[start]) | Int(payload[start + 1]) << 8
            guard sduLength <= Int(mtu) else {
                reset()
                throw .sduLengthExceedsMTU(sduLength: sduLength, mtu: mtu)
            }
            let data = payload.dropFirst(L2CAPSDUSegmenter.sduLengthFieldLength)
            guard data.count <= sduLength else {
                reset()
                throw .dataExceedsSDULength(sduLength: sduLength, received: data.count)
            }
            expectedLength = sduLength
            buffer = []
            buffer.reserveCapacity(sduLength)
            buffer.append(contentsOf: data)
        }
        guard let expected = expectedLength, buffer.count == expected else { return nil }
        let sdu = buffer
        reset()
        return sdu
    }

    /// Drops any partial SDU.
    public mutating func reset() {
        expectedLength = nil
        buffer = []
    }
}
