import BluetoothCore
import HCI
import L2CAP

/// The credit-based L2CAP channels open on the connections of a capture, learnt from the signaling the capture
/// shows, and the SDUs their K-frames carry (Core 5.4 Vol 3 Part A §3.4.3 K-frames; §4.22–§4.23 LE Credit Based
/// Connection Request/Response; §4.25–§4.26 Credit Based Connection Request/Response; §4.6–§4.7 Disconnection).
///
/// A capture is taken at one host: a frame the host sends (`.sent`) carries the peer's CID, a frame it receives
/// carries its own. So a channel is known by (handle, direction, CID): the two ends of one channel have two keys,
/// and the same CID number used by both devices for different channels never collides. The reader is lenient: it
/// does not hold K-frames to the announced MTU or MPS (a capture is evidence, not a peer to police), only to the
/// SDU length each first K-frame announces. Everything is bounded: at most ``maximumChannels`` channels and
/// ``maximumPendingRequests`` unanswered requests (beyond them the oldest are forgotten), and each partial SDU is
/// at most 65,535 octets by construction of the 16-bit SDU length.
struct L2CAPChannelTracker: Sendable {
    /// What a channel carries and how it was opened.
    struct Channel: Sendable {
        /// The (S)PSM the channel was requested on.
        var psm: UInt16
        /// Whether it was opened with the enhanced (Credit Based) or the LE Credit Based request.
        var isEnhanced: Bool
        /// The SDU being reassembled from this direction's K-frames.
        var sdu = L2CAPSDUReassembler(mtu: .max, mps: .max)
        /// When the channel was learnt (to forget the oldest first).
        var order: Int
    }

    /// One end of a channel as a frame shows it.
    struct Key: Hashable, Sendable {
        var handle: UInt16
        var direction: BTSnoopDirection
        var cid: UInt16
    }

    /// A request not answered yet: who sent it (handle, direction) and its identifier.
    private struct RequestKey: Hashable, Sendable {
        var handle: UInt16
        var direction: BTSnoopDirection
        var identifier: UInt8
    }

    private struct Request: Sendable {
        var psm: UInt16
        var isEnhanced: Bool
        var sourceCIDs: [UInt16]
        var order: Int
    }

    /// What one K-frame was: where it belongs, and the SDU it completes or the rule it broke.
    struct KFrame: Sendable {
        var channel: Channel
        /// The SDU length field, when this K-frame starts an SDU.
        var sduLength: Int?
        /// The SDU this K-frame completes.
        var completedSDU: [UInt8]?
        /// Why the K-frame does not fit the SDU in progress (the partial SDU is dropped).
        var error: L2CAPSDUError?
    }

    static let maximumChannels = 512
    static let maximumPendingRequests = 256

    private var channels: [Key: Channel] = [:]
    private var requests: [RequestKey: Request] = [:]
    private var counter = 0

    /// How many channel ends are known (for tests of the bounds).
    var channelCount: Int { channels.count }

    /// The channel a frame on `cid` belongs to, if the capture showed it being opened.
    func channel(handle: UInt16, direction: BTSnoopDirection, cid: UInt16) -> Channel? {
        channels[Key(handle: handle, direction: direction, cid: cid)]
    }

    /// Learns from one signaling command seen on `handle` going in `direction`.
    mutating func observe(_ command: L2CAPSignalingCommand, handle: UInt16, direction: BTSnoopDirection) {
        switch command {
        case .leCreditBasedConnectionRequest(let identifier, let request):
            remember(RequestKey(handle: handle, direction: direction, identifier: identifier),
                     psm: request.lePSM, isEnhanced: false, sourceCIDs: [request.sourceCID.rawValue])
        case .creditBasedConnectionRequest(let identifier, let request):
            remember(RequestKey(handle: handle, direction: direction, identifier: identifier),
                     psm: request.spsm, isEnhanced: true, sourceCIDs: request.sourceCIDs.map(\.rawValue))
        case .leCreditBasedConnectionResponse(let identifier, let response):
            guard let request = answer(handle: handle, responseDirection: direction, identifier: identifier) else { return }
            guard response.result == .successful else { return }
            open(handle: handle, responseDirection: direction, request: request,
                 pairs: zip(request.sourceCIDs, [response.destinationCID.rawValue]))
        case .creditBasedConnectionResponse(let identifier, let response):
            guard let request = answer(handle: handle, responseDirection: direction, identifier: identifier) else { return }
            // Some channels of a request may be refused (destination CID 0x0000) while others open (§4.26).
            open(handle: handle, responseDirection: direction, request: request,
                 pairs: zip(request.sourceCIDs, response.destinationCIDs.map(\.rawValue)))
        case .disconnectionRequest(_, let disconnection), .disconnectionResponse(_, let disconnection):
            // The destination CID is the receiver's end (frames going this way carry it), the source CID the
            // sender's (frames coming back carry it); the response repeats the request's values (§4.6–§4.7).
            let request: Bool = if case .disconnectionRequest = command { true } else { false }
            let towardsReceiver = request ? direction : direction.reversed
            let destination = request ? disconnection.destinationCID : disconnection.sourceCID
            let source = request ? disconnection.sourceCID : disconnection.destinationCID
            channels[Key(handle: handle, direction: towardsReceiver, cid: destination.rawValue)] = nil
            channels[Key(handle: handle, direction: towardsReceiver.reversed, cid: source.rawValue)] = nil
        default:
            break
        }
    }

    /// Reads one K-frame's information payload on a known channel; nil when the capture never showed the channel
    /// open.
    mutating func receive(_ payload: [UInt8], handle: UInt16, direction: BTSnoopDirection, cid: UInt16) -> KFrame? {
        let key = Key(handle: handle, direction: direction, cid: cid)
        guard var channel = channels[key] else { return nil }
        var frame = KFrame(channel: channel)
        if !channel.sdu.isReassembling, payload.count >= L2CAPSDUSegmenter.sduLengthFieldLength {
            frame.sduLength = Int(payload[0]) | Int(payload[1]) << 8
        }
        do {
            frame.completedSDU = try channel.sdu.receive(payload)
        } catch {
            frame.error = error
        }
        channels[key] = channel
        frame.channel = channel
        return frame
    }

    /// Forgets every channel and request of a connection (it ended, or its handle was given again).
    mutating func forget(handle: UInt16) {
        channels = channels.filter { $0.key.handle != handle }
        requests = requests.filter { $0.key.handle != handle }
    }

    private mutating func remember(_ key: RequestKey, psm: UInt16, isEnhanced: Bool, sourceCIDs: [UInt16]) {
        counter += 1
        requests[key] = Request(psm: psm, isEnhanced: isEnhanced, sourceCIDs: sourceCIDs, order: counter)
        if requests.count > Self.maximumPendingRequests, let oldest = requests.min(by: { $0.value.order < $1.value.order }) {
            requests[oldest.key] = nil
        }
    }

    /// The request a response in `responseDirection` answers: the one sent the other way with its identifier.
    private mutating func answer(handle: UInt16, responseDirection: BTSnoopDirection, identifier: UInt8) -> Request? {
        requests.removeValue(forKey: RequestKey(handle: handle, direction: responseDirection.reversed, identifier: identifier))
    }

    /// Opens each (requester's source CID, responder's destination CID) pair the response accepted: the requester
    /// sends to the responder's CID, the responder to the requester's.
    private mutating func open(handle: UInt16, responseDirection: BTSnoopDirection, request: Request,
                               pairs: Zip2Sequence<[UInt16], [UInt16]>) {
        for (source, destination) in pairs where destination != 0 {
            counter += 1
            let channel = Channel(psm: request.psm, isEnhanced: request.isEnhanced, order: counter)
            channels[Key(handle: handle, direction: responseDirection.reversed, cid: destination)] = channel
            channels[Key(handle: handle, direction: responseDirection, cid: source)] = channel
        }
        while channels.count > Self.maximumChannels, let oldest = channels.min(by: { $0.value.order < $1.value.order }) {
            channels[oldest.key] = nil
        }
    }
}

extension BTSnoopDirection {
    /// The other direction.
    var reversed: BTSnoopDirection { self == .sent ? .received : .sent }
}
