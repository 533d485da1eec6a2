public import BluetoothCore
import ATT
public import HCI
import L2CAP

/// Reads the packets of one host's capture in order, with the context a single packet lacks, as btmon does:
/// L2CAP PDUs reassembled from ACL fragments (Core 5.4 Vol 3 Part A §7.2.2), the credit-based channels the
/// signaling opened and the SDUs their K-frames carry (§3.4.3), ATT decoded on Enhanced ATT bearers (SPSM 0x0027,
/// Vol 3 Part F §3.2.11), extended advertising data joined from its command fragments (Vol 4 Part E §7.8.54) and
/// its report pieces (§7.7.65.13).
///
/// One decoder per host (per controller of a capture or monitor): handles and CIDs mean something only there.
/// Every piece of state is bounded (see ``ACLReassembler``, ``ExtendedReportAssembler`` and the channel tracker),
/// and a connection's state is dropped when it ends or its handle is given again. Hostile bytes give a
/// "Malformed" node, never a throw.
public struct CaptureDecoder: Sendable {
    /// The most extended advertising data joined from command fragments (the controller's maximum is 1,650).
    static let maximumJoinedAdvertisingData = 1650

    private var acl: [BTSnoopDirection: ACLReassembler] = [.sent: ACLReassembler(), .received: ACLReassembler()]
    private var channels = L2CAPChannelTracker()
    private var reports = ExtendedReportAssembler()
    /// Extended advertising or scan response data given in fragments, per (advertising handle, scan response).
    private var advertisingFragments: [AdvertisingDataKey: [UInt8]] = [:]

    private struct AdvertisingDataKey: Hashable, Sendable {
        var handle: UInt8
        var scanResponse: Bool
    }

    public init() {}

    /// The decoded packet of a record, or the reason it could not be decoded (kept as a node, never thrown: one
    /// bad record must not hide the rest of a capture).
    public mutating func dissection(of record: BTSnoopRecord, datalink: BTSnoopDatalink) -> Dissection {
        do {
            let frame = try record.frame(datalink: datalink)
            return try dissection(of: frame, direction: record.direction)
        } catch {
            return Dissection("Malformed packet", error.description, [Dissection("Data", Dissection.bytes(record.data))])
        }
    }

    /// One H4 frame going in `direction` (`.sent`: host to controller).
    public mutating func dissection(of frame: H4Frame, direction: BTSnoopDirection) throws(DecodeError) -> Dissection {
        switch frame.type {
        case .command:
            let command = try HCICommand(decoding: frame.packet)
            return PacketDissector.withAdvertisingData(command.dissection, payloads: advertisingPayloads(of: command))
        case .event:
            let event = try HCIEvent(decoding: frame.packet)
            observe(event)
            if case .leMeta(.extendedAdvertisingReport(let pieces)) = event { return joinedReports(event.dissection, pieces) }
            return PacketDissector.withAdvertisingData(event.dissection, payloads: PacketDissector.advertisingPayloads(of: event))
        case .aclData:
            return dissection(of: try HCIACLDataPacket(decoding: frame.packet), direction: direction)
        default:
            return try PacketDissector.describe(frame: frame).0
        }
    }

    // MARK: Connections

    private mutating func observe(_ event: HCIEvent) {
        switch event {
        case .disconnectionComplete(let status, let handle, _) where status == .success:
            forget(handle: handle)
        case .leMeta(.connectionComplete(let complete)) where complete.status == .success:
            forget(handle: complete.handle)
        case .leMeta(.enhancedConnectionComplete(let complete)) where complete.connection.status == .success,
             .leMeta(.enhancedConnectionCompleteV2(let complete, _, _)) where complete.connection.status == .success:
            forget(handle: complete.connection.handle)
        default:
            break
        }
    }

    private mutating func forget(handle: UInt16) {
        acl[.sent]?.dropState(for: handle)
        acl[.received]?.dropState(for: handle)
        channels.forget(handle: handle)
    }

    /// An ACL packet: the L2CAP frame it completes (decoded by channel), or where it stands in one.
    private mutating func dissection(of packet: HCIACLDataPacket, direction: BTSnoopDirection) -> Dissection {
        var node = packet.dissection
        let output = acl[direction, default: ACLReassembler()].receive(packet)
        if let error = output.error { node.children.append(Dissection("Reassembly", error.description)) }
        guard let pdu = output.pdu else {
            if output.error == nil, let announced = L2CAPBasicFrame.announcedPayloadLength(packet.data[...]), packet.packetBoundary.isStart {
                node.children.append(Dissection("L2CAP", "first fragment of a \(announced)-byte PDU (\(packet.data.count) bytes here)"))
            } else if output.error == nil {
                node.children.append(Dissection("L2CAP", "continuing fragment (\(packet.data.count) bytes)"))
            }
            return node
        }
        guard let frame = try? L2CAPBasicFrame(decoding: pdu.bytes) else { return node }
        var l2cap = PacketDissector.describe(l2cap: frame)
        if !packet.packetBoundary.isStart || packet.data.count != pdu.bytes.count {
            l2cap.value = "reassembled from ACL fragments"
        }
        switch frame.channelID {
        case .leSignaling:
            if let command = try? L2CAPSignalingCommand(decoding: frame.payload) {
                channels.observe(command, handle: packet.handle, direction: direction)
            }
        case let cid where cid.isLEDynamic:
            if let kFrame = channels.receive(frame.payload, handle: packet.handle, direction: direction, cid: cid.rawValue) {
                l2cap.children.append(Self.dissection(of: kFrame))
            }
        default:
            break
        }
        node.children.append(l2cap)
        return node
    }

    /// A K-frame: the channel it belongs to, its place in the SDU, and the SDU it completes (ATT on an EATT
    /// bearer, bytes otherwise).
    private static func dissection(of frame: L2CAPChannelTracker.KFrame) -> Dissection {
        let psm = frame.channel.psm
        let name = AssignedNumbers.psmNames[psm].map { " \($0)" } ?? ""
        var node = Dissection("K-frame", nil, [
            Dissection("Channel", "\(frame.channel.isEnhanced ? "Enhanced credit based" : "LE credit based"), "
                       + "\(frame.channel.isEnhanced ? "SPSM" : "LE_PSM") \(Dissection.hex16(psm))\(name)"),
        ])
        if let sduLength = frame.sduLength { node.children.append(Dissection("SDU Length", "\(sduLength)")) }
        if let error = frame.error {
            node.children.append(Dissection("Malformed SDU", error.description))
        } else if let sdu = frame.completedSDU {
            if psm == enhancedATTPSM {
                do {
                    node.children.append(try ATTPDU(decoding: sdu).dissection)
                } catch {
                    node.children.append(Dissection("Malformed payload", error.description))
                }
            } else {
                node.children.append(Dissection("SDU", Dissection.bytes(sdu)))
            }
        } else {
            node.children.append(Dissection("SDU", "continues in the next K-frame"))
        }
        return node
    }

    /// SPSM 0x0027: Enhanced ATT bearers (Assigned Numbers, L2CAP SPSM).
    static let enhancedATTPSM: UInt16 = 0x0027

    // MARK: Advertising data

    /// The advertising data a command completes: given whole, or the last of its fragments.
    private mutating func advertisingPayloads(of command: HCICommand) -> [[UInt8]?] {
        let (data, scanResponse): (LEExtendedAdvertisingData, Bool)
        switch command {
        case .extended(.leSetExtendedAdvertisingData(let fragment)): (data, scanResponse) = (fragment, false)
        case .extended(.leSetExtendedScanResponseData(let fragment)): (data, scanResponse) = (fragment, true)
        case .reset, .extended(.leClearAdvertisingSets):
            advertisingFragments = [:]
            return []
        case .extended(.leRemoveAdvertisingSet(let handle)):
            advertisingFragments = advertisingFragments.filter { $0.key.handle != handle }
            return []
        default:
            return PacketDissector.advertisingPayloads(of: command)
        }
        let key = AdvertisingDataKey(handle: data.advertisingHandle, scanResponse: scanResponse)
        switch data.operation {
        case .complete:
            advertisingFragments[key] = nil
            return [data.data]
        case .firstFragment:
            advertisingFragments[key] = data.data
        case .intermediateFragment:
            advertisingFragments[key]?.append(contentsOf: data.data)
        case .lastFragment:
            guard let start = advertisingFragments.removeValue(forKey: key) else { return [] }
            return [start + data.data]
        default:
            return []
        }
        if let held = advertisingFragments[key], held.count > Self.maximumJoinedAdvertisingData {
            advertisingFragments[key] = nil
        }
        return []
    }

    /// Each extended report's piece joined with the ones before it: the whole advertisement on its last piece.
    private mutating func joinedReports(_ node: Dissection, _ pieces: [LEExtendedAdvertisingReport]) -> Dissection {
        var payloads: [[UInt8]?] = []
        var notes: [Dissection?] = []
        for piece in pieces {
            let held = reports.pendingLength(of: piece)
            switch reports.add(piece) {
            case .complete(let whole):
                payloads.append(whole.data)
                notes.append(held > 0 ? Dissection("Pieces", "joined with the \(held) bytes of the reports before") : nil)
            case .pending:
                payloads.append(nil)
                notes.append(Dissection("Advertising Data", "\(held + piece.data.count) bytes so far, more to come"))
            case .dropped:
                payloads.append(nil)
                notes.append(Dissection("Advertising Data", "truncated after \(held + piece.data.count) bytes"))
            }
        }
        var result = PacketDissector.withAdvertisingData(node, payloads: payloads)
        var index = 0
        for child in result.children.indices where result.children[child].label == "Report" {
            if index < notes.count, let note = notes[index] { result.children[child].children.append(note) }
            index += 1
        }
        return result
    }
}
