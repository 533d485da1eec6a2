import DequeModule

/// The state of one LE Credit Based Flow Control channel inside ``L2CAPLink``, Core 5.4 Vol 3 Part A §3.4 and
/// §4.22 to §4.24: both sides' MTU and MPS, the two credit counts, the queue of K-frames waiting for credits and
/// the SDU reassembler.
struct L2CAPCreditBasedChannel: Sendable {
    enum State: Hashable, Sendable {
        /// Our LE Credit Based Connection Request with this identifier awaits its response.
        case connecting(identifier: UInt8)
        case open
        /// Our Disconnection Request with this identifier awaits its response; `notify` says whether the owner
        /// still has to be told (false when it was told already, on a violation or a bad connection response).
        case disconnecting(identifier: UInt8, notify: Bool)
    }

    /// The most credits a side may hold (§4.24).
    static let maximumCredits = Int(UInt16.max)

    var state: State
    let localCID: L2CAPChannelIdentifier
    var remoteCID: L2CAPChannelIdentifier = .null
    let psm: UInt16
    /// LE Credit Based Flow Control (§4.22) or Enhanced Credit Based Flow Control (§4.25).
    let mode: L2CAPChannelMode
    /// Ours; raised by a Credit Based Reconfigure Request we sent (§4.27), enhanced mode only.
    var localMTU: UInt16
    var localMPS: UInt16
    /// Our Credit Based Reconfigure Request's new MTU and MPS while it awaits its response.
    var reconfiguring: (mtu: UInt16, mps: UInt16)?
    var remoteMTU: UInt16 = 0
    var remoteMPS: UInt16 = 0
    let isInitiator: Bool
    /// The credits the peer gave us: how many K-frames we may still send.
    var sendCredits = 0
    /// The credits we gave the peer and it has not used yet.
    var peerCredits: Int
    /// The level automatic credit return tops the peer back up to.
    let initialCredits: UInt16
    let creditPolicy: L2CAPChannelCreditPolicy
    /// Encoded basic frames (K-frames) waiting for credits, oldest first.
    private var queue: Deque<[UInt8]> = []
    var reassembler: L2CAPSDUReassembler

    init(
        state: State, localCID: L2CAPChannelIdentifier, psm: UInt16, localMTU: UInt16, localMPS: UInt16,
        initialCredits: UInt16, creditPolicy: L2CAPChannelCreditPolicy, isInitiator: Bool,
        mode: L2CAPChannelMode = .leCreditBased
    ) {
        self.state = state
        self.localCID = localCID
        self.psm = psm
        self.mode = mode
        self.localMTU = localMTU
        self.localMPS = localMPS
        self.initialCredits = initialCredits
        self.peerCredits = Int(initialCredits)
        self.creditPolicy = creditPolicy
        self.isInitiator = isInitiator
        self.reassembler = L2CAPSDUReassembler(mtu: localMTU, mps: localMPS)
    }

    var info: L2CAPChannelInfo {
        L2CAPChannelInfo(
            localCID: localCID, remoteCID: remoteCID, psm: psm, localMTU: localMTU, localMPS: localMPS,
            remoteMTU: remoteMTU, remoteMPS: remoteMPS, isInitiator: isInitiator, mode: mode)
    }

    var isOpen: Bool { state == .open }

    var queuedFrameCount: Int { queue.count }

    /// Queues the K-frame payloads of one SDU (already segmented to the peer's MPS) as basic frames.
    mutating func enqueue(_ payloads: [[UInt8]]) {
        for payload in payloads {
            queue.append(Self.basicFrame(remoteCID, payload))
        }
    }

    /// Takes as many queued K-frames as there are credits, one credit each.
    mutating func takeSendable() -> [[UInt8]] {
        let count = min(sendCredits, queuedFrameCount)
        guard count > 0 else { return [] }
        var frames: [[UInt8]] = []
        frames.reserveCapacity(count)
        for _ in 0..<count { frames.append(queue.removeFirst()) }
        sendCredits -= count
        return frames
    }

    /// Drops everything queued or partly received (the channel is closing).
    mutating func discardData() {
        queue = []
        reassembler.reset()
    }

    /// The credits to grant now under the automatic policy (0 for none).
    var automaticCreditReturn: Int {
        guard case .automatic(let threshold) = creditPolicy else { return 0 }
        let level = Int(threshold ?? initialCredits / 2)
        guard peerCredits <= level, peerCredits < Int(initialCredits) else { return 0 }
        return Int(initialCredits) - peerCredits
    }

    /// A basic frame on `cid` (the payload is at most an MPS, so it fits the 16-bit length).
    static func basicFrame(_ cid: L2CAPChannelIdentifier, _ payload: [UInt8]) -> [UInt8] {
        var frame: [UInt8] = []
        frame.reserveCapacity(L2CAPBasicFrame.headerLength + payload.count)
        frame.append(UInt8(truncatingIfNeeded: payload.count))
        frame.append(UInt8(truncatingIfNeeded: payload.count >> 8))
        frame.append(UInt8(truncatingIfNeeded: cid.rawValue))
        frame.append(UInt8(truncatingIfNeeded: cid.rawValue >> 8))
        frame.append(contentsOf: payload)
        return frame
    }
}
