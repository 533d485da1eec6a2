public import BluetoothCore

/// The btsnoop capture format (RFC 1761 "snoop" adapted by Symbian; written by Android's Bluetooth stack and
/// `btmon`, read by Wireshark): a 16-byte file header, then records of a 24-byte header and the packet bytes.
/// Every integer is big-endian. Timestamps are microseconds since midnight, January 1st of year 0 AD.
public enum BTSnoop {
    /// "btsnoop\0".
    public static let identificationPattern: [UInt8] = Array("btsnoop".utf8) + [0]
    /// The only version defined.
    public static let version: UInt32 = 1
    /// The length of the file header.
    public static let fileHeaderLength = 16
    /// The length of a record header.
    public static let recordHeaderLength = 24
    /// The btsnoop timestamp of the Unix epoch (1970-01-01T00:00:00Z): 0x00DCDDB30F2F8000, Wireshark's
    /// `KUnixTimeBase` (wiretap/btsnoop.c) and Android's `kBtSnoopEpochDelta`.
    public static let unixEpochOffset: Int64 = 0x00DC_DDB3_0F2F_8000
    /// The btsnoop timestamp of 2000-01-01T00:00:00Z: 0x00E03AB44A676000. BlueZ (src/shared/btsnoop.c) writes
    /// `(unix seconds - 946684800) * 1000000 + this`, which is the same as adding ``unixEpochOffset``.
    public static let year2000Offset: Int64 = 0x00E0_3AB4_4A67_6000

    /// A btsnoop timestamp (microseconds since 0 AD) for a Unix time in microseconds.
    public static func timestamp(unixMicroseconds: Int64) -> Int64 { unixMicroseconds &+ unixEpochOffset }

    /// The Unix time in microseconds of a btsnoop timestamp.
    public static func unixMicroseconds(timestamp: Int64) -> Int64 { timestamp &- unixEpochOffset }

    /// A btsnoop timestamp as UTC text, "2026-11-22 01:28:21.123456 UTC" (proleptic Gregorian calendar).
    public static func formatTimestamp(_ timestamp: Int64) -> String {
        let unix = unixMicroseconds(timestamp: timestamp)
        // Floor division so times before 1970 still print correctly.
        var seconds = unix / 1_000_000
        var micros = unix % 1_000_000
        if micros < 0 { micros += 1_000_000; seconds -= 1 }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 { secondOfDay += 86_400; days -= 1 }
        // Days to civil date (H. Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPrime + 2) / 5 + 1
        let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2)) "
            + "\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))"
            + ".\(pad(micros, 6)) UTC"
    }
}

/// The datalink type of a btsnoop file: how each record's packet bytes are encapsulated.
public struct BTSnoopDatalink: OpenCode {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }
    public static let codeKind = "btsnoop datalink"

    /// 1001: HCI packets without the H4 indicator; the record flags tell command/event from data.
    public static let hciUnencapsulated = BTSnoopDatalink(1001)
    /// 1002: HCI UART (H4): each record starts with the packet indicator (what Android writes).
    public static let hciUART = BTSnoopDatalink(1002)
    /// 1003: HCI BCSP.
    public static let hciBCSP = BTSnoopDatalink(1003)
    /// 1004: HCI Three-wire UART (H5).
    public static let hciThreeWire = BTSnoopDatalink(1004)
    /// 2001: Linux Bluetooth monitor (what `btmon -w` writes).
    public static let linuxMonitor = BTSnoopDatalink(2001)

    public static let names: [UInt32: String] = [
        1001: "HCI un-encapsulated",
        1002: "HCI UART (H4)",
        1003: "HCI BCSP",
        1004: "HCI Three-wire UART (H5)",
        2001: "Linux Bluetooth monitor",
    ]

    /// Whether ``BTSnoopReader`` reads this datalink (1001, 1002 and 2001).
    public var isSupported: Bool { self == .hciUnencapsulated || self == .hciUART || self == .linuxMonitor }
}

/// The direction of a captured packet, from the record flags' bit 0.
public enum BTSnoopDirection: Hashable, Sendable, CustomStringConvertible {
    /// Host to controller (bit 0 clear).
    case sent
    /// Controller to host (bit 0 set).
    case received

    public var description: String {
        switch self {
        case .sent: "Sent (host to controller)"
        case .received: "Received (controller to host)"
        }
    }
}

/// The flags word of a btsnoop record: bit 0 direction (1 = received), bit 1 command/event (1) versus data (0).
public struct BTSnoopFlags: OptionSet, Hashable, Sendable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Bit 0: the packet was received (controller to host).
    public static let received = BTSnoopFlags(rawValue: 1 << 0)
    /// Bit 1: the packet is a command or an event (not data).
    public static let commandOrEvent = BTSnoopFlags(rawValue: 1 << 1)

    public var direction: BTSnoopDirection { contains(.received) ? .received : .sent }

    /// The flags Wireshark and Android use for a packet of `type` going in `direction`.
    public init(type: HCIPacketType, direction: BTSnoopDirection) {
        var flags: BTSnoopFlags = direction == .received ? .received : []
        if type == .command || type == .event { flags.insert(.commandOrEvent) }
        self = flags
    }
}

/// One btsnoop record: the 24-byte record header's fields and the included packet bytes.
public struct BTSnoopRecord: Hashable, Sendable {
    /// The length of the packet as it was on the wire.
    public var originalLength: UInt32
    public var flags: BTSnoopFlags
    /// Packets lost by the capture before this one, since the start.
    public var cumulativeDrops: UInt32
    /// Microseconds since midnight, January 1st 0 AD (see ``BTSnoop/timestamp(unixMicroseconds:)``).
    public var timestamp: Int64
    /// The packet bytes kept (Included Length of them).
    public var data: [UInt8]

    public init(originalLength: UInt32? = nil, flags: BTSnoopFlags, cumulativeDrops: UInt32 = 0, timestamp: Int64, data: [UInt8]) {
        self.originalLength = originalLength ?? UInt32(clamping: data.count)
        self.flags = flags
        self.cumulativeDrops = cumulativeDrops
        self.timestamp = timestamp
        self.data = data
    }

    /// The Included Length field (the data count).
    public var includedLength: UInt32 { UInt32(clamping: data.count) }
    public var direction: BTSnoopDirection { flags.direction }
    /// Whether the capture kept fewer bytes than the packet had.
    public var isSnapped: Bool { Int(originalLength) > data.count }
    /// The timestamp in microseconds since the Unix epoch.
    public var unixMicroseconds: Int64 { BTSnoop.unixMicroseconds(timestamp: timestamp) }

    /// The record header and data as written in the file. An Original Length below the data count is written as
    /// the data count, so that every record written can be read back.
    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: BTSnoop.recordHeaderLength + data.count)
        writer.writeBigEndian(max(originalLength, includedLength))
        writer.writeBigEndian(includedLength)
        writer.writeBigEndian(flags.rawValue)
        writer.writeBigEndian(cumulativeDrops)
        writer.writeBigEndian(timestamp)
        writer.write(data.prefix(Int(includedLength)))
        return writer.bytes
    }

    /// The monitor packet of a record of datalink 2001 (`btmon -w`): the flags are `index << 16 | opcode`, the data
    /// the payload (``HCIMonitorPacket``). Bit 0 of the opcode of an HCI packet is 1 for the controller's, so
    /// ``direction`` reads right for these records too.
    public func monitorPacket() throws(DecodeError) -> HCIMonitorPacket {
        try HCIMonitorPacket(opcode: UInt16(truncatingIfNeeded: flags.rawValue), index: UInt16(truncatingIfNeeded: flags.rawValue >> 16),
                             payload: data)
    }

    /// The HCI packet in this record as an H4 frame, given the file's datalink: with 1002 the data starts with the
    /// indicator; with 1001 the type comes from the flags (command or event by direction, otherwise ACL data);
    /// with 2001 from the monitor opcode (a record that is no HCI packet, a note for instance, throws).
    /// Throws ``DecodeError`` when the bytes are not one complete packet (a snapped record, for instance).
    public func frame(datalink: BTSnoopDatalink) throws(DecodeError) -> H4Frame {
        switch datalink {
        case .linuxMonitor:
            guard case .frame(let frame, _) = try monitorPacket().kind else {
                throw DecodeError(.unknownType, at: 0, "monitor opcode \(flags.rawValue & 0xFFFF) is not an HCI packet")
            }
            return frame
        case .hciUART:
            return try H4Frame(decoding: data)
        case .hciUnencapsulated:
            let type: HCIPacketType =
                flags.contains(.commandOrEvent) ? (flags.contains(.received) ? .event : .command) : .aclData
            return try H4Frame(decoding: [type.rawValue] + data)
        default:
            throw DecodeError(.unknownType, at: 0, "records of datalink \(datalink) are not HCI packets this reader knows")
        }
    }
}

extension BTSnoopRecord: Dissectable {
    public var dissection: Dissection {
        var flagNames: [String] = [flags.contains(.received) ? "Received" : "Sent"]
        flagNames.append(flags.contains(.commandOrEvent) ? "Command/Event" : "Data")
        let digits = String(flags.rawValue, radix: 16, uppercase: true)
        let flagsHex = "0x" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
        return Dissection("btsnoop Record", nil, [
            Dissection("Original Length", "\(originalLength)"),
            Dissection("Included Length", "\(includedLength)"),
            Dissection("Packet Flags", "\(flagsHex) (\(flagNames.joined(separator: ", ")))"),
            Dissection("Cumulative Drops", "\(cumulativeDrops)"),
            Dissection("Timestamp", "\(timestamp) (\(BTSnoop.formatTimestamp(timestamp)))"),
            Dissection("Packet Data", Dissection.bytes(data)),
        ])
    }
}

/// The 16-byte btsnoop file header: identification pattern, version, datalink.
public struct BTSnoopFileHeader: Hashable, Sendable {
    public var version: UInt32
    public var datalink: BTSnoopDatalink

    public init(version: UInt32 = BTSnoop.version, datalink: BTSnoopDatalink = .hciUART) {
        self.version = version
        self.datalink = datalink
    }

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: BTSnoop.fileHeaderLength)
        writer.write(BTSnoop.identificationPattern)
        writer.writeBigEndian(version)
        writer.writeBigEndian(datalink.rawValue)
        return writer.bytes
    }
}

extension BTSnoopFileHeader: Dissectable {
    public var dissection: Dissection {
        Dissection("btsnoop File Header", nil, [
            Dissection("Identification Pattern", "btsnoop\\0"),
            Dissection("Version Number", "\(version)"),
            Dissection("Datalink Type", datalink.description),
        ])
    }
}

/// Why a btsnoop file could not be read. Offsets are from the start of the file.
public enum BTSnoopError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Fewer than 16 bytes.
    case truncatedHeader(available: Int)
    /// The file does not start with "btsnoop\0".
    case badMagic([UInt8])
    /// A version other than 1.
    case unsupportedVersion(UInt32)
    /// A datalink other than 1001 or 1002.
    case unsupportedDatalink(BTSnoopDatalink)
    /// A record's Included Length exceeds its Original Length.
    case includedLengthExceedsOriginal(recordOffset: Int, included: UInt32, original: UInt32)
    /// The file ends inside a record (typically a capture cut short); the records before it are valid.
    case truncatedRecord(recordOffset: Int, expected: Int, available: Int)

    /// Where the problem is, in bytes from the start of the file.
    public var offset: Int {
        switch self {
        case .truncatedHeader: 0
        case .badMagic: 0
        case .unsupportedVersion: 8
        case .unsupportedDatalink: 12
        case .includedLengthExceedsOriginal(let offset, _, _), .truncatedRecord(let offset, _, _): offset
        }
    }

    public var description: String {
        switch self {
        case .truncatedHeader(let available):
            "btsnoop file header truncated: \(available) of 16 bytes"
        case .badMagic(let bytes):
            "not a btsnoop file: identification pattern is \(Hex.encode(bytes, separator: " "))"
        case .unsupportedVersion(let version):
            "unsupported btsnoop version \(version) (expected 1)"
        case .unsupportedDatalink(let datalink):
            "unsupported btsnoop datalink \(datalink.name ?? "") (\(datalink.rawValue)); 1001 and 1002 are read"
        case .includedLengthExceedsOriginal(let offset, let included, let original):
            "record at offset \(offset): included length \(included) exceeds original length \(original)"
        case .truncatedRecord(let offset, let expected, let available):
            "record at offset \(offset) truncated: \(available) of \(expected) bytes present"
        }
    }

    /// The same problem as a ``DecodeError``.
    public var decodeError: DecodeError {
        let code: DecodeError.Code =
            switch self {
            case .truncatedHeader, .truncatedRecord: .truncated
            case .badMagic, .unsupportedDatalink: .unknownType
            case .unsupportedVersion: .invalidValue
            case .includedLengthExceedsOriginal: .invalidLength
            }
        return DecodeError(code, at: offset, description)
    }
}

/// Produces a btsnoop capture as bytes: the file header first, then one record per packet. Foundation-free: the
/// caller writes ``takeBytes()`` (or ``bytes``) to a file, a pipe or a socket.
public struct BTSnoopWriter: Sendable {
    public let header: BTSnoopFileHeader
    /// Bytes produced and not yet taken.
    public private(set) var bytes: [UInt8]

    /// Starts a capture; the file header is the first output.
    public init(datalink: BTSnoopDatalink = .hciUART) {
        header = BTSnoopFileHeader(datalink: datalink)
        bytes = header.encode()
    }

    /// Returns the pending output and clears it (for incremental writes to a file).
    public mutating func takeBytes() -> [UInt8] {
        defer { bytes = [] }
        return bytes
    }

    /// Appends a record as is.
    public mutating func write(_ record: BTSnoopRecord) {
        bytes.append(contentsOf: record.encode())
    }

    /// Appends a record for an HCI packet: with datalink 1002 the data includes the indicator octet, with 1001 it
    /// does not (and an SCO or ISO packet cannot be told from ACL data there). Flags follow Android and Wireshark.
    public mutating func write(
        _ frame: H4Frame, direction: BTSnoopDirection, unixMicroseconds: Int64, cumulativeDrops: UInt32 = 0
    ) {
        let data = header.datalink == .hciUnencapsulated ? frame.packet : frame.encode()
        write(BTSnoopRecord(
            flags: BTSnoopFlags(type: frame.type, direction: direction), cumulativeDrops: cumulativeDrops,
            timestamp: BTSnoop.timestamp(unixMicroseconds: unixMicroseconds), data: data))
    }
}

/// Reads a btsnoop capture from bytes (Foundation-free: the caller reads the file). The header is checked at
/// init; ``next()`` returns records one by one, `nil` at a clean end, and throws for a bad or truncated record,
/// after which it returns `nil`.
public struct BTSnoopReader: Sendable {
    public let header: BTSnoopFileHeader
    private let bytes: [UInt8]
    /// The offset of the next record.
    public private(set) var offset: Int
    private var finished = false

    public var datalink: BTSnoopDatalink { header.datalink }

    public init(bytes: [UInt8]) throws(BTSnoopError) {
        guard bytes.count >= BTSnoop.fileHeaderLength else { throw .truncatedHeader(available: bytes.count) }
        let magic = Array(bytes[0..<8])
        guard magic == BTSnoop.identificationPattern else { throw .badMagic(magic) }
        var reader = ByteReader(bytes[8..<16], baseOffset: 8)
        let version = (try? reader.readBigEndian(UInt32.self, "version")) ?? 0
        let datalink = BTSnoopDatalink((try? reader.readBigEndian(UInt32.self, "datalink")) ?? 0)
        guard version == BTSnoop.version else { throw .unsupportedVersion(version) }
        guard datalink.isSupported else { throw .unsupportedDatalink(datalink) }
        self.header = BTSnoopFileHeader(version: version, datalink: datalink)
        self.bytes = bytes
        self.offset = BTSnoop.fileHeaderLength
    }

    /// The next record, or `nil` at the end of the file.
    public mutating func next() throws(BTSnoopError) -> BTSnoopRecord? {
        guard !finished, offset < bytes.count else { return nil }
        let recordOffset = offset
        let available = bytes.count - recordOffset
        guard available >= BTSnoop.recordHeaderLength else {
            finished = true
            throw .truncatedRecord(recordOffset: recordOffset, expected: BTSnoop.recordHeaderLength, available: available)
        }
        var reader = ByteReader(bytes[recordOffset...], baseOffset: 0)
        do {
            let original = try reader.readBigEndian(UInt32.self, "original length")
            let included = try reader.readBigEndian(UInt32.self, "included length")
            let flags = try reader.readBigEndian(UInt32.self, "flags")
            let drops = try reader.readBigEndian(UInt32.self, "cumulative drops")
            let timestamp = Int64(bitPattern: try reader.readBigEndian(UInt64.self, "timestamp"))
            guard included <= original else {
                finished = true
                throw BTSnoopError.includedLengthExceedsOriginal(recordOffset: recordOffset, included: included, original: original)
            }
            let expected = BTSnoop.recordHeaderLength + Int(included)
            guard available >= expected else {
                finished = true
                throw BTSnoopError.truncatedRecord(recordOffset: recordOffset, expected: expected, available: available)
            }
            let data = try reader.readBytes(Int(included), "packet data")
            offset = recordOffset + expected
            return BTSnoopRecord(
                originalLength: original, flags: BTSnoopFlags(rawValue: flags), cumulativeDrops: drops,
                timestamp: timestamp, data: data)
        } catch let error as BTSnoopError {
            throw error
        } catch {
            // Unreachable: the lengths were checked above. Report it as truncation rather than trapping.
            finished = true
            throw .truncatedRecord(recordOffset: recordOffset, expected: BTSnoop.recordHeaderLength, available: available)
        }
    }

    /// Every record of a capture and the error that stopped reading, if any (a truncated final record is
    /// reported there; the records before it are returned).
    public static func readAll(_ bytes: [UInt8]) throws(BTSnoopError) -> (header: BTSnoopFileHeader, records: [BTSnoopRecord], error: BTSnoopError?) {
        var reader = try BTSnoopReader(bytes: bytes)
        var records: [BTSnoopRecord] = []
        while true {
            do {
                guard let record = try reader.next() else { break }
                records.append(record)
            } catch {
                return (reader.header, records, error)
            }
        }
        return (reader.header, records, nil)
    }
}
