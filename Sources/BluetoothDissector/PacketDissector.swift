public import BluetoothCore
import AdvertisingData
import ATT
public import HCI
import L2CAP
import SMP

/// Recognises a packet of any layer and describes it field by field (see the design note for the order).
public enum PacketDissector {
    /// The order in which kinds are tried when the caller does not name one.
    public static let recognitionOrder: [PacketKind] = [.h4, .hciEvent, .hciCommand, .acl, .l2cap, .ad, .att, .smp]

    /// Describes `bytes` as `kind`, or as the first kind in ``recognitionOrder`` that decodes all of them.
    public static func dissect(_ bytes: [UInt8], as kind: PacketKind? = nil) throws(DissectorError) -> DissectedPacket {
        var attempts: [DissectorError.Attempt] = []
        for candidate in kind.map({ [$0] }) ?? recognitionOrder {
            do {
                if kind == nil { try requireKnownType(bytes, as: candidate) }
                let (dissection, reencoded) = try describe(bytes, as: candidate)
                return DissectedPacket(kind: candidate, bytes: bytes, dissection: dissection, reencoded: reencoded)
            } catch {
                attempts.append(.init(kind: candidate, error: error))
            }
        }
        throw DissectorError(attempts: attempts)
    }

    /// When guessing, an opcode or code no table knows is a refusal: otherwise any three bytes would be an
    /// "unknown HCI command". (Forced with `--as`, unknown codes still decode and print as unknown.)
    static func requireKnownType(_ bytes: [UInt8], as kind: PacketKind) throws(DecodeError) {
        switch kind {
        case .hciCommand:
            if case .unknown(let opcode, _) = try HCICommand(decoding: bytes) {
                throw DecodeError(.unknownType, at: 0, "\(opcode) is not a command this decoder knows")
            }
        case .hciEvent:
            let event = try HCIEvent(decoding: bytes)
            if case .unknown = event {
                throw DecodeError(.unknownType, at: 0, "event code \(Dissection.hex8(bytes[0])) is not an event this decoder knows")
            }
            if case .leMeta(.unknown) = event {
                throw DecodeError(.unknownType, at: 2, "LE subevent is not one this decoder knows")
            }
        case .smp:
            if case .unknown(let code, _) = try SMPPDU(decoding: bytes) {
                throw DecodeError(.unknownType, at: 0, "\(code) is not an SMP code")
            }
        case .ad:
            let data = try AdvertisingData(decoding: bytes, kind: bytes.count > 31 ? .extended : .legacy)
            if data.encodedLength < bytes.count {
                throw DecodeError(
                    .trailingBytes, at: data.encodedLength,
                    "a zero length octet ends the advertising data after \(data.encodedLength) of \(bytes.count) bytes")
            }
            if let unknown = data.structures.first(where: { !$0.type.isKnown }) {
                throw DecodeError(.unknownType, at: 0, "AD type \(unknown.type.hexValue) is not an assigned AD type")
            }
        case .h4, .acl, .l2cap, .att:
            break
        }
    }

    /// One decoder: the dissection and our own re-encoding of the decoded value.
    static func describe(_ bytes: [UInt8], as kind: PacketKind) throws(DecodeError) -> (Dissection, [UInt8]?) {
        switch kind {
        case .h4:
            let frame = try H4Frame(decoding: bytes)
            let inner = try describe(frame: frame)
            return (Dissection("H4 \(frame.type.name ?? "packet")", nil, [
                Dissection("Packet Type", frame.type.description), inner.0,
            ]), inner.1.map { [frame.type.rawValue] + $0 })
        case .hciCommand:
            let command = try HCICommand(decoding: bytes)
            return (withAdvertisingData(command.dissection, payloads: advertisingPayloads(of: command)), command.encode())
        case .hciEvent:
            let event = try HCIEvent(decoding: bytes)
            return (withAdvertisingData(event.dissection, payloads: advertisingPayloads(of: event)), event.encode())
        case .acl:
            let packet = try HCIACLDataPacket(decoding: bytes)
            return (describe(acl: packet), packet.encode())
        case .l2cap:
            let frame = try L2CAPBasicFrame(decoding: bytes)
            return (describe(l2cap: frame), frame.encode())
        case .att:
            let pdu = try ATTPDU(decoding: bytes)
            return (pdu.dissection, pdu.encode())
        case .smp:
            let pdu = try SMPPDU(decoding: bytes)
            return (pdu.dissection, pdu.encode())
        case .ad:
            let data = try AdvertisingData(decoding: bytes, kind: bytes.count > 31 ? .extended : .legacy)
            return (Dissection("Advertising Data", "\(bytes.count) bytes", data.dissection.children), data.encode())
        }
    }

    /// The packet inside an H4 frame (or a btsnoop record), by its type.
    public static func describe(frame: H4Frame) throws(DecodeError) -> (Dissection, [UInt8]?) {
        switch frame.type {
        case .command:
            return try describe(frame.packet, as: .hciCommand)
        case .event:
            return try describe(frame.packet, as: .hciEvent)
        case .aclData:
            return try describe(frame.packet, as: .acl)
        default:
            return (frame.dissection, frame.packet)
        }
    }

    /// An ACL packet, with the L2CAP frame inside when it starts a PDU that fits in this one packet.
    static func describe(acl packet: HCIACLDataPacket) -> Dissection {
        var node = packet.dissection
        guard packet.packetBoundary.isStart else { return node }
        if let frame = try? L2CAPBasicFrame(decoding: packet.data) {
            node.children.append(describe(l2cap: frame))
        } else if let announced = L2CAPBasicFrame.announcedPayloadLength(packet.data[...]) {
            node.children.append(Dissection(
                "L2CAP", "first fragment of a \(announced)-byte PDU (\(packet.data.count) bytes here)"))
        }
        return node
    }

    /// An L2CAP frame, with its payload decoded by channel: ATT, LE signaling, SMP.
    static func describe(l2cap frame: L2CAPBasicFrame) -> Dissection {
        var node = frame.dissection
        let payload = frame.payload
        let inner: Dissection?
        switch frame.channelID {
        case .attributeProtocol:
            inner = attempt { () throws(DecodeError) in try ATTPDU(decoding: payload).dissection }
        case .leSignaling:
            inner = attempt { () throws(DecodeError) in try L2CAPSignalingCommand(decoding: payload).dissection }
        case .securityManager:
            inner = attempt { () throws(DecodeError) in try SMPPDU(decoding: payload).dissection }
        default:
            inner = nil
        }
        if let inner { node.children.append(inner) }
        return node
    }

    /// A payload's dissection, or a node saying why it did not decode.
    private static func attempt(_ body: () throws(DecodeError) -> Dissection) -> Dissection {
        do {
            return try body()
        } catch {
            return Dissection("Malformed payload", error.description)
        }
    }

    /// The advertising data a command carries whole: legacy advertising or scan response data, or an extended
    /// one given in a single command (Operation "complete data"). Fragments need a capture's context
    /// (``CaptureDecoder`` joins them).
    static func advertisingPayloads(of command: HCICommand) -> [[UInt8]?] {
        switch command {
        case .leSetAdvertisingData(let data), .leSetScanResponseData(let data): [data]
        case .extended(.leSetExtendedAdvertisingData(let data)), .extended(.leSetExtendedScanResponseData(let data)):
            data.operation == .complete ? [data.data] : []
        default: []
        }
    }

    /// The advertising data of each report of an event, in order; nil for a report whose data is only part of
    /// the advertiser's (an extended report with more to come or truncated, or the last piece of a series).
    static func advertisingPayloads(of event: HCIEvent) -> [[UInt8]?] {
        switch event {
        case .leMeta(.advertisingReport(let reports)): reports.map(\.data)
        case .leMeta(.extendedAdvertisingReport(let reports)):
            reports.map { $0.dataStatus == 0 ? $0.data : nil }
        default: []
        }
    }

    /// Appends the decoded advertising data after the raw bytes: to the root for commands, to each "Report" node
    /// (in order, skipping nil payloads) for advertising reports.
    static func withAdvertisingData(_ node: Dissection, payloads: [[UInt8]?], title: String = "Advertising Data") -> Dissection {
        guard !payloads.isEmpty else { return node }
        var remaining = payloads[...]
        var result = node
        if !appendToReports(&result, remaining: &remaining, title: title), let only = payloads.first, let only {
            result.children.append(advertisingDataNode(only, title: title))
        }
        return result
    }

    private static func appendToReports(_ node: inout Dissection, remaining: inout ArraySlice<[UInt8]?>, title: String) -> Bool {
        var found = false
        for index in node.children.indices {
            if node.children[index].label == "Report", let payload = remaining.popFirst() {
                if let payload { node.children[index].children.append(advertisingDataNode(payload, title: title)) }
                found = true
            } else if appendToReports(&node.children[index], remaining: &remaining, title: title) {
                found = true
            }
        }
        return found
    }

    private static func advertisingDataNode(_ payload: [UInt8], title: String) -> Dissection {
        if payload.isEmpty { return Dissection(title, "(empty)") }
        do {
            let data = try AdvertisingData(decoding: payload, kind: payload.count > 31 ? .extended : .legacy)
            return Dissection(title, payload.count > 31 ? "\(payload.count) bytes" : nil, data.dissection.children)
        } catch {
            return Dissection(title, "malformed: \(error)")
        }
    }
}
