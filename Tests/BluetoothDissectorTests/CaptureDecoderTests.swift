import ATT
import BluetoothCore
@testable import BluetoothDissector
import HCI
import L2CAP
import TestSupport
import Testing

/// A capture read in order (``CaptureDecoder``): ACL reassembly, the credit-based channels the signaling opened
/// (Core 5.4 Vol 3 Part A §4.22–§4.26), K-frames joined into SDUs and ATT decoded on EATT bearers, and extended
/// advertising data joined from command fragments and report pieces.
@Suite struct CaptureDecoderTests {
    static let handle: UInt16 = 0x0040

    /// One L2CAP frame on `cid` as ACL packets of at most `fragment` octets.
    static func acl(_ cid: UInt16, _ payload: [UInt8], fragment: Int = 251, handle: UInt16 = handle) throws -> [H4Frame] {
        let pdu = try L2CAPBasicFrame(channelID: L2CAPChannelIdentifier(cid), payload: payload).encode()
        var frames: [H4Frame] = []
        var start = 0
        while start < pdu.count {
            let end = min(pdu.count, start + fragment)
            let packet = try HCIACLDataPacket(handle: handle, packetBoundary: start == 0 ? .firstNonFlushable : .continuing,
                                              data: Array(pdu[start..<end]))
            frames.append(H4Frame(type: .aclData, packet: packet.encode()))
            start = end
        }
        return frames
    }

    static func signaling(_ command: L2CAPSignalingCommand, handle: UInt16 = handle) throws -> H4Frame {
        try acl(0x0005, command.encode(), handle: handle)[0]
    }

    /// A K-frame payload: the SDU length (when first) and the bytes.
    static func kFrame(sduLength: Int?, _ bytes: [UInt8]) -> [UInt8] {
        (sduLength.map { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } ?? []) + bytes
    }

    /// Opens enhanced channels: we (sent) ask for `ours`, the peer answers with `theirs` (0 = refused).
    static func openEnhanced(_ decoder: inout CaptureDecoder, identifier: UInt8 = 7, spsm: UInt16 = 0x0027,
                             ours: [UInt16], theirs: [UInt16]) throws {
        let request = L2CAPSignalingCommand.creditBasedConnectionRequest(identifier: identifier, L2CAPCreditBasedConnectionRequest(
            spsm: spsm, mtu: 517, mps: 247, initialCredits: 10, sourceCIDs: ours.map { L2CAPChannelIdentifier($0) }))
        let response = L2CAPSignalingCommand.creditBasedConnectionResponse(identifier: identifier, L2CAPCreditBasedConnectionResponse(
            mtu: 517, mps: 247, initialCredits: 10, result: .successful, destinationCIDs: theirs.map { L2CAPChannelIdentifier($0) }))
        _ = try decoder.dissection(of: signaling(request), direction: .sent)
        _ = try decoder.dissection(of: signaling(response), direction: .received)
    }

    static func find(_ label: String, in node: Dissection) -> Dissection? {
        if node.label == label { return node }
        for child in node.children { if let found = find(label, in: child) { return found } }
        return nil
    }

    @Test("ATT on an EATT bearer: both ends of each accepted channel, none for a refused one, none before the response")
    func enhancedATTBearers() throws {
        var decoder = CaptureDecoder()
        let read = ATTPDU.readRequest(handle: 0x0003).encode()
        // Before any signaling a dynamic CID is only bytes.
        let early = try decoder.dissection(of: Self.acl(0x0050, Self.kFrame(sduLength: read.count, read))[0], direction: .sent)
        #expect(Self.find("K-frame", in: early) == nil)

        try Self.openEnhanced(&decoder, ours: [0x0040, 0x0041], theirs: [0x0050, 0x0000])
        let sent = try decoder.dissection(of: Self.acl(0x0050, Self.kFrame(sduLength: read.count, read))[0], direction: .sent)
        #expect(Self.find("K-frame", in: sent)?.children.first?.value == "Enhanced credit based, SPSM 0x0027 EATT")
        #expect(Self.find("Read Request", in: sent) != nil)
        let response = ATTPDU.readResponse(value: [0x51]).encode()
        let received = try decoder.dissection(of: Self.acl(0x0040, Self.kFrame(sduLength: response.count, response))[0], direction: .received)
        #expect(Self.find("Read Response", in: received) != nil)
        // The refused channel's CID and the accepted CID in the wrong direction are not channels.
        let refused = try decoder.dissection(of: Self.acl(0x0041, Self.kFrame(sduLength: response.count, response))[0], direction: .received)
        #expect(Self.find("K-frame", in: refused) == nil)
        let wrongWay = try decoder.dissection(of: Self.acl(0x0040, Self.kFrame(sduLength: read.count, read))[0], direction: .sent)
        #expect(Self.find("K-frame", in: wrongWay) == nil)
    }

    @Test("an SDU across K-frames, and a K-frame across ACL fragments, decode once whole")
    func segmentationAndFragmentation() throws {
        var decoder = CaptureDecoder()
        try Self.openEnhanced(&decoder, ours: [0x0040], theirs: [0x0060])
        let value = Array(0..<100).map { UInt8($0) }
        let write = ATTPDU.writeRequest(handle: 0x0010, value: value).encode()
        // K-frame 1: SDU length + 40 octets, K-frame 2: the rest, sent as ACL fragments of 27 octets.
        let first = try Self.acl(0x0060, Self.kFrame(sduLength: write.count, Array(write[0..<40])), fragment: 27)
        let second = try Self.acl(0x0060, Self.kFrame(sduLength: nil, Array(write[40...])), fragment: 27)
        #expect(first.count == 2 && second.count == 3)
        let firstStart = try decoder.dissection(of: first[0], direction: .sent)
        #expect(firstStart.children.contains { $0.label == "L2CAP" && $0.value?.hasPrefix("first fragment of a 42-byte PDU") == true })
        let firstEnd = try decoder.dissection(of: first[1], direction: .sent)
        #expect(Self.find("L2CAP Basic Frame", in: firstEnd)?.value == "reassembled from ACL fragments")
        #expect(Self.find("SDU Length", in: firstEnd)?.value == "\(write.count)")
        #expect(Self.find("SDU", in: firstEnd)?.value == "continues in the next K-frame")
        var last = Dissection("none")
        for frame in second { last = try decoder.dissection(of: frame, direction: .sent) }
        let decoded = try #require(Self.find("Write Request", in: last))
        #expect(decoded.renderText().contains("00 01 02 03"))
        #expect(Self.find("SDU Length", in: last) == nil)
    }

    @Test("an LE credit based channel on another PSM shows its SDUs as bytes; Disconnection forgets it")
    func leCreditBasedChannelAndDisconnection() throws {
        var decoder = CaptureDecoder()
        let request = L2CAPSignalingCommand.leCreditBasedConnectionRequest(identifier: 3, L2CAPLECreditBasedConnectionRequest(
            lePSM: 0x0080, sourceCID: L2CAPChannelIdentifier(0x0040), mtu: 100, mps: 50, initialCredits: 5))
        let response = L2CAPSignalingCommand.leCreditBasedConnectionResponse(identifier: 3, L2CAPLECreditBasedConnectionResponse(
            destinationCID: L2CAPChannelIdentifier(0x0040), mtu: 100, mps: 50, initialCredits: 5, result: .successful))
        // The peer asks (received), we answer (sent): the same CID number on both devices is two channel ends.
        _ = try decoder.dissection(of: Self.signaling(request), direction: .received)
        _ = try decoder.dissection(of: Self.signaling(response), direction: .sent)
        for direction in [BTSnoopDirection.sent, .received] {
            let node = try decoder.dissection(of: Self.acl(0x0040, Self.kFrame(sduLength: 3, [1, 2, 3]))[0], direction: direction)
            #expect(Self.find("K-frame", in: node)?.children.first?.value == "LE credit based, LE_PSM 0x0080")
            #expect(Self.find("SDU", in: node)?.value == "01 02 03 (3 bytes)")
        }
        // We disconnect: our request names the peer's end (destination) and ours (source).
        let disconnect = L2CAPSignalingCommand.disconnectionRequest(identifier: 4, L2CAPDisconnection(
            destinationCID: L2CAPChannelIdentifier(0x0040), sourceCID: L2CAPChannelIdentifier(0x0040)))
        _ = try decoder.dissection(of: Self.signaling(disconnect), direction: .sent)
        for direction in [BTSnoopDirection.sent, .received] {
            let node = try decoder.dissection(of: Self.acl(0x0040, Self.kFrame(sduLength: 3, [1, 2, 3]))[0], direction: direction)
            #expect(Self.find("K-frame", in: node) == nil)
        }
    }

    @Test("Disconnection Complete and a new connection on the same handle forget the channels and partial PDUs")
    func connectionEndForgets() throws {
        var decoder = CaptureDecoder()
        try Self.openEnhanced(&decoder, ours: [0x0040], theirs: [0x0050])
        let read = ATTPDU.readRequest(handle: 3).encode()
        let partial = try Self.acl(0x0050, Self.kFrame(sduLength: read.count, read), fragment: 4)
        _ = try decoder.dissection(of: partial[0], direction: .sent)
        let disconnected = H4Frame(type: .event, packet: HCIEvent.disconnectionComplete(
            status: .success, handle: Self.handle, reason: HCIStatus(0x13)).encode())
        _ = try decoder.dissection(of: disconnected, direction: .received)
        let continuation = try decoder.dissection(of: partial[1], direction: .sent)
        #expect(Self.find("Reassembly", in: continuation)?.value?.contains("without a start") == true)
        let again = try decoder.dissection(of: Self.acl(0x0050, Self.kFrame(sduLength: read.count, read))[0], direction: .sent)
        #expect(Self.find("K-frame", in: again) == nil)
    }

    @Test("a K-frame carrying more than its SDU length says so and the next SDU decodes")
    func malformedKFrame() throws {
        var decoder = CaptureDecoder()
        try Self.openEnhanced(&decoder, ours: [0x0040], theirs: [0x0050])
        let bad = try decoder.dissection(of: Self.acl(0x0050, Self.kFrame(sduLength: 1, [1, 2, 3]))[0], direction: .sent)
        #expect(Self.find("Malformed SDU", in: bad)?.value?.contains("more than the announced SDU length 1") == true)
        let read = ATTPDU.readRequest(handle: 3).encode()
        let good = try decoder.dissection(of: Self.acl(0x0050, Self.kFrame(sduLength: read.count, read))[0], direction: .sent)
        #expect(Self.find("Read Request", in: good) != nil)
    }

    @Test("extended advertising data given in fragments is decoded on the last one")
    func advertisingDataFragments() throws {
        var decoder = CaptureDecoder()
        let name = Array("a name long enough for extended advertising data, in two commands".utf8)
        let data = [UInt8(name.count + 1), 0x09] + name
        func command(_ operation: LEAdvertisingDataOperation, _ bytes: ArraySlice<UInt8>) -> H4Frame {
            H4Frame(type: .command, packet: HCICommand.extended(.leSetExtendedAdvertisingData(
                LEExtendedAdvertisingData(advertisingHandle: 1, operation: operation, data: Array(bytes)))).encode())
        }
        let first = try decoder.dissection(of: command(.firstFragment, data[0..<30]), direction: .sent)
        #expect(Self.find("Advertising Data", in: first) == nil)
        let last = try decoder.dissection(of: command(.lastFragment, data[30...]), direction: .sent)
        let joined = try #require(Self.find("Advertising Data", in: last))
        #expect(joined.renderText().contains("in two commands"))
        let whole = try decoder.dissection(of: command(.complete, data[...]), direction: .sent)
        #expect(Self.find("Advertising Data", in: whole)?.value == "\(data.count) bytes")
        // A last fragment with no first is not guessed at.
        let orphan = try decoder.dissection(of: command(.lastFragment, data[30...]), direction: .sent)
        #expect(Self.find("Advertising Data", in: orphan) == nil)
    }

    @Test("extended report pieces: more to come, then joined on the last; a truncated one says so")
    func advertisingReportPieces() throws {
        var decoder = CaptureDecoder()
        let structures: [UInt8] = [0x05, 0xFF, 0x4C, 0x00, 0x01, 0x02] + [0x04, 0x09, 0x61, 0x62, 0x63]
        func report(_ status: UInt16, _ data: ArraySlice<UInt8>, address: UInt64 = 0xC0_00_00_00_00_01) -> H4Frame {
            H4Frame(type: .event, packet: HCIEvent.leMeta(.extendedAdvertisingReport([LEExtendedAdvertisingReport(
                eventType: status << 5, addressType: .random, address: BluetoothAddress(address), secondaryPHY: .le2M,
                advertisingSID: 2, rssi: -50, data: Array(data))])).encode())
        }
        let piece = try decoder.dissection(of: report(1, structures[0..<6]), direction: .received)
        #expect(Self.find("Advertising Data", in: piece)?.value == "6 bytes so far, more to come")
        let end = try decoder.dissection(of: report(0, structures[6...]), direction: .received)
        let joined = try #require(Self.find("Report", in: end))
        #expect(joined.children.contains { $0.label == "Pieces" && $0.value == "joined with the 6 bytes of the reports before" })
        #expect(joined.renderText().contains("abc"))
        _ = try decoder.dissection(of: report(1, structures[0..<6], address: 2), direction: .received)
        let truncated = try decoder.dissection(of: report(2, structures[6..<8], address: 2), direction: .received)
        #expect(Self.find("Advertising Data", in: truncated)?.value == "truncated after 8 bytes")
    }

    @Test("hostile captures: random records never crash, channels stay bounded")
    func hostileCaptures() throws {
        var decoder = CaptureDecoder()
        var generator = SeededGenerator(seed: 0xCA97)
        for _ in 0..<20_000 {
            let length = Int.random(in: 0..<40, using: &generator)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if !bytes.isEmpty { bytes[0] = [0x01, 0x02, 0x04][Int.random(in: 0..<3, using: &generator)] }
            let record = BTSnoopRecord(flags: Bool.random(using: &generator) ? .received : [], timestamp: 0, data: bytes)
            _ = decoder.dissection(of: record, datalink: .hciUART)
        }
        // A peer that opens channels forever: the tracker keeps the newest 512 channel ends.
        var tracker = L2CAPChannelTracker()
        for index in 0..<2_000 {
            let identifier = UInt8(truncatingIfNeeded: index)
            tracker.observe(.leCreditBasedConnectionRequest(identifier: identifier, L2CAPLECreditBasedConnectionRequest(
                lePSM: 0x0080, sourceCID: L2CAPChannelIdentifier(UInt16(0x40 + index % 0x7F00)), mtu: 23, mps: 23,
                initialCredits: 1)), handle: 1, direction: .received)
            tracker.observe(.leCreditBasedConnectionResponse(identifier: identifier, L2CAPLECreditBasedConnectionResponse(
                destinationCID: L2CAPChannelIdentifier(UInt16(0x40 + index % 0x7F00)), mtu: 23, mps: 23, initialCredits: 1,
                result: .successful)), handle: 1, direction: .sent)
        }
        #expect(tracker.channelCount <= L2CAPChannelTracker.maximumChannels)
        #expect(tracker.channel(handle: 1, direction: .sent, cid: 0x40 + 1_999) != nil, "the newest channel is kept")
    }
}
