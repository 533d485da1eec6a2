public import BluetoothCore

/// Why an ``H4Framer`` stopped: an unknown packet indicator or a length above the configured cap. Either way
/// the framer has lost synchronisation with the byte stream (UART has no resynchronisation mechanism in
/// Core 5.4 Vol 4 Part A §2; recovery is a transport reset).
public struct H4FramingError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// The packet indicator names no packet type this framer knows.
        case unknownPacketType(UInt8)
        /// The header announces more parameter/data octets than the framer accepts.
        case lengthAboveCap(type: HCIPacketType, length: Int, cap: Int)
    }

    /// The offset in the stream (bytes since creation or the last ``H4Framer/reset()``) of the packet indicator
    /// of the offending frame.
    public var offset: Int
    public var reason: Reason

    public init(offset: Int, reason: Reason) {
        self.offset = offset
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .unknownPacketType(let octet):
            "unknown HCI packet indicator \(Dissection.hex8(octet)) at stream offset \(offset)"
        case .lengthAboveCap(let type, let length, let cap):
            "\(type.name ?? type.description) at stream offset \(offset) announces \(length) bytes, above the cap of \(cap)"
        }
    }

    /// The same problem as a ``DecodeError`` (`unknownType` or `invalidLength`), for callers that report those.
    public var decodeError: DecodeError {
        switch reason {
        case .unknownPacketType: DecodeError(.unknownType, at: offset, description)
        case .lengthAboveCap: DecodeError(.invalidLength, at: offset, description)
        }
    }
}

/// An incremental deframer for the HCI UART transport (Core 5.4 Vol 4 Part A §2): feed it the bytes as they
/// arrive, in chunks of any size, and it returns each complete ``H4Frame`` once, in order.
///
/// The length of each packet comes from its header (Vol 4 Part E §5.4). An unknown indicator or a length above
/// ``maximumPayloadLength`` *poisons* the stream: ``append(_:)`` returns the frames completed before the bad
/// indicator, records ``failure`` and ignores every later byte until ``reset()``.
///
/// Memory is bounded: the framer keeps at most one partial frame (header plus ``maximumPayloadLength`` octets).
/// A plain value; the transport's reader owns it.
public struct H4Framer: Sendable {
    /// The largest parameter/data length accepted for any packet type (the cap that poisons the stream).
    public let maximumPayloadLength: Int
    /// Set once the stream is poisoned; cleared by ``reset()``.
    public private(set) var failure: H4FramingError?
    /// Bytes consumed since creation or the last ``reset()`` (bytes fed after poisoning are not counted).
    public private(set) var streamOffset: Int = 0

    /// The frame being assembled: its type and stream offset, then header and payload bytes so far.
    private var currentType: HCIPacketType?
    private var currentOffset = 0
    private var current: [UInt8] = []
    /// The total packet length (header + payload) once the header is complete.
    private var currentTotal: Int?

    /// - Parameter maximumPayloadLength: the cap on the announced parameter/data length; defaults to 65535
    ///   (no cap beyond the ACL length field). A host typically sets its ACL buffer size here.
    public init(maximumPayloadLength: Int = 65535) {
        self.maximumPayloadLength = max(0, maximumPayloadLength)
    }

    /// Whether the stream is poisoned (see ``failure``).
    public var isPoisoned: Bool { failure != nil }

    /// How many bytes of a partial frame are buffered.
    public var bufferedByteCount: Int { currentType == nil ? 0 : current.count + 1 }

    /// Forgets any partial frame and the poisoned state; the next byte is read as a packet indicator.
    public mutating func reset() {
        failure = nil
        streamOffset = 0
        currentType = nil
        current = []
        currentTotal = nil
    }

    /// Consumes `bytes` and returns the frames they complete. Returns nothing (and consumes nothing) once the
    /// stream is poisoned; check ``failure`` after each call.
    public mutating func append(_ bytes: some Collection<UInt8>) -> [H4Frame] {
        appendBytes(bytes)
    }

    /// ``append(_:)-(Collection<UInt8>)`` for what a transport reads: a concrete type, so the loop below is specialised
    /// here rather than run through the generic witness tables from another module (10% of a receiver's CPU).
    public mutating func append(_ bytes: ArraySlice<UInt8>) -> [H4Frame] {
        appendBytes(bytes)
    }

    /// ``append(_:)-(Collection<UInt8>)`` for whole arrays (specialised, as above).
    public mutating func append(_ bytes: [UInt8]) -> [H4Frame] {
        appendBytes(bytes)
    }

    private mutating func appendBytes<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [H4Frame] {
        var frames: [H4Frame] = []
        guard failure == nil else { return frames }
        var index = bytes.startIndex
        while index != bytes.endIndex {
            guard let type = currentType else {
                let octet = bytes[index]
                let type = HCIPacketType(octet)
                guard let headerLength = type.headerLength else {
                    failure = H4FramingError(offset: streamOffset, reason: .unknownPacketType(octet))
                    return frames
                }
                currentType = type
                currentOffset = streamOffset
                current = []
                current.reserveCapacity(headerLength)
                currentTotal = nil
                streamOffset += 1
                bytes.formIndex(after: &index)
                continue
            }
            let headerLength = type.headerLength ?? 0
            // How many more bytes we want now: the rest of the header, or the rest of the packet.
            let wanted = (currentTotal ?? headerLength) - current.count
            if wanted > 0 {
                let end = bytes.index(index, offsetBy: wanted, limitedBy: bytes.endIndex) ?? bytes.endIndex
                let taken = bytes.distance(from: index, to: end)
                current.append(contentsOf: bytes[index..<end])
                streamOffset += taken
                index = end
            }
            if currentTotal == nil, current.count >= headerLength {
                let length = type.payloadLength(header: current) ?? 0
                guard length <= maximumPayloadLength else {
                    failure = H4FramingError(
                        offset: currentOffset,
                        reason: .lengthAboveCap(type: type, length: length, cap: maximumPayloadLength))
                    currentType = nil
                    current = []
                    return frames
                }
                currentTotal = headerLength + length
                current.reserveCapacity(headerLength + length)
            }
            if let total = currentTotal, current.count >= total {
                frames.append(H4Frame(type: type, packet: current))
                currentType = nil
                current = []
                currentTotal = nil
            }
        }
        return frames
    }
}

extension H4Framer {
    /// Encodes a frame for the UART (indicator octet, then the packet); the same as ``H4Frame/encode()``.
    public static func encode(_ frame: H4Frame) -> [UInt8] { frame.encode() }

    /// Encodes frames back to back, as a stream.
    public static func encode(_ frames: some Collection<H4Frame>) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(frames.reduce(0) { $0 + 1 + $1.packet.count })
        for frame in frames {
            bytes.append(frame.type.rawValue)
            bytes.append(contentsOf: frame.packet)
        }
        return bytes
    }
}
