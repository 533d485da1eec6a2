public import BluetoothCore
public import HCI

/// One packet of a link-layer capture: what the pseudo-header says of it and the PDU (header and payload).
public struct LinkLayerCapturedPacket: Hashable, Sendable {
    public var unixMicroseconds: Int64
    /// The RF channel (0...39, 2402 + 2k MHz); nil in captures without the pseudo-header (LINKTYPE 251).
    public var rfChannel: UInt8?
    public var phy: LEPhy
    /// The pseudo-header's PDU type: 0 advertising (or unspecified), 1 auxiliary advertising, 2 data from the
    /// central, 3 data from the peripheral; nil without the pseudo-header.
    public var pduType: UInt8?
    /// The sender's plaintext of an encrypted PDU, its MIC at the end of the payload.
    public var decrypted: Bool
    public var accessAddress: UInt32
    /// The PDU's 2-octet header and its payload.
    public var pdu: [UInt8]

    /// Whether it went on an advertising physical channel (by the pseudo-header, else by the access address).
    public var isAdvertising: Bool { pduType == 1 || accessAddress == AdvertisingChannelPDU.accessAddress }
}

/// Reads pcap files of LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR (256, what ``LinkLayerSniffer`` and sniffers such as
/// Nordic's and Ubertooth's write) and LINKTYPE_BLUETOOTH_LE_LL (251): the pcap header in either byte order with
/// micro- or nanosecond timestamps, then each record's pseudo-header, access address, coding indicator on the Coded
/// PHY, PDU and CRC (Core 5.4 Vol 6 Part B §2.1, §2.2). Hostile bytes: a header that is no pcap or of another link
/// type throws; a record cut short or longer than the snap length ends the reading with the packets before it and
/// the error.
public enum LinkLayerCaptureReader {
    public static let linkTypes: Set<UInt32> = [251, 256]
    /// Records longer than this are refused (pcap's usual snap length).
    public static let maximumRecordLength = 65_535

    /// Whether `bytes` start like a pcap file (any byte order, either timestamp resolution).
    public static func isPcap(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 4 else { return false }
        let magic = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
        return [0xA1B2_C3D4, 0xA1B2_3C4D, 0xD4C3_B2A1, 0x4D3C_B2A1].contains(magic)
    }

    /// The link type and the packets of a whole capture; `error` when the records stop before the end.
    public static func read(_ bytes: [UInt8]) throws(DecodeError) -> (linkType: UInt32, packets: [LinkLayerCapturedPacket], error: DecodeError?) {
        guard bytes.count >= 24, isPcap(bytes) else {
            throw DecodeError(.invalidValue, at: 0, "not a pcap capture (no pcap magic number in a 24-octet header)")
        }
        let magic = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
        let bigEndian = magic == 0xD4C3_B2A1 || magic == 0x4D3C_B2A1
        let nanoseconds = magic == 0xA1B2_3C4D || magic == 0x4D3C_B2A1
        func word(_ offset: Int) -> UInt32 {
            let b = bytes[offset..<(offset + 4)].map(UInt32.init)
            return bigEndian ? b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3] : b[3] << 24 | b[2] << 16 | b[1] << 8 | b[0]
        }
        let linkType = word(20) & 0x0FFF_FFFF
        guard linkTypes.contains(linkType) else {
            throw DecodeError(.invalidValue, at: 20, "link type \(linkType) is not a Bluetooth LE link-layer capture (251 or 256)")
        }
        var packets: [LinkLayerCapturedPacket] = []
        var offset = 24
        while offset < bytes.count {
            guard bytes.count - offset >= 16 else {
                return (linkType, packets, DecodeError(.truncated, at: offset, "record \(packets.count + 1): its header is cut short"))
            }
            let seconds = Int64(word(offset)), fraction = Int64(word(offset + 4)), length = Int(word(offset + 8))
            guard length <= maximumRecordLength, length <= bytes.count - offset - 16 else {
                return (linkType, packets, DecodeError(.truncated, at: offset + 8,
                                                       "record \(packets.count + 1): \(length) octets announced, \(bytes.count - offset - 16) left"))
            }
            let record = Array(bytes[(offset + 16)..<(offset + 16 + length)])
            let microseconds = seconds &* 1_000_000 &+ (nanoseconds ? fraction / 1000 : fraction)
            do {
                packets.append(try packet(record, linkType: linkType, unixMicroseconds: microseconds))
            } catch {
                return (linkType, packets, DecodeError(error.code, at: offset + 16 + error.offset, "record \(packets.count + 1): \(error.reason)"))
            }
            offset += 16 + length
        }
        return (linkType, packets, nil)
    }

    /// One record's contents.
    static func packet(_ record: [UInt8], linkType: UInt32, unixMicroseconds: Int64) throws(DecodeError) -> LinkLayerCapturedPacket {
        var r = ByteReader(record)
        var rfChannel: UInt8?, pduType: UInt8?, phy = LEPhy.le1M, decrypted = false
        if linkType == 256 {
            rfChannel = try r.readUInt8("RF Channel")
            _ = try r.readBytes(7, "signal and noise power, offenses, reference access address")
            let flags = try r.readUInt16("Flags")
            pduType = UInt8(flags >> 7 & 0x07)
            phy = [LEPhy.le1M, .le2M, .leCoded, .le1M][Int(flags >> 14)]
            decrypted = flags & 0x0008 != 0
        }
        let accessAddress = try r.readUInt32("Access Address")
        if phy == .leCoded { _ = try r.readUInt8("Coding Indicator") }
        let header = try r.readBytes(2, "PDU header")
        let payload = try r.readBytes(Int(header[1]), "PDU payload")
        return LinkLayerCapturedPacket(unixMicroseconds: unixMicroseconds, rfChannel: rfChannel, phy: phy, pduType: pduType,
                                       decrypted: decrypted, accessAddress: accessAddress, pdu: header + payload)
    }
}
