public import BluetoothCore

/// The data of an L2CAP Command Reject, Core 5.4 Vol 3 Part A §4.1: a reason and reason-specific data
/// (Table 4.4).
public enum L2CAPCommandReject: Hashable, Sendable, Codable {
    /// 0x0000, no data.
    case commandNotUnderstood
    /// 0x0001, with the receiver's signaling MTU (MTU_sig).
    case signalingMTUExceeded(actualMTU: UInt16)
    /// 0x0002, with the local and remote endpoint CIDs of the rejected request.
    case invalidCIDInRequest(localCID: L2CAPChannelIdentifier, remoteCID: L2CAPChannelIdentifier)
    /// A reason this build does not know, with its data (at most 4 octets on the wire). Building this case
    /// with a known reason does not round-trip; use the named cases.
    case other(reason: L2CAPSignalingRejectReason, data: [UInt8])

    public var reason: L2CAPSignalingRejectReason {
        switch self {
        case .commandNotUnderstood: .commandNotUnderstood
        case .signalingMTUExceeded: .signalingMTUExceeded
        case .invalidCIDInRequest: .invalidCIDInRequest
        case .other(let reason, _): reason
        }
    }
}

/// The data of a Disconnection Request or Response, Core 5.4 Vol 3 Part A §4.6 and §4.7.
public struct L2CAPDisconnection: Hashable, Sendable {
    /// The channel to close, as named by the receiver of the request.
    public var destinationCID: L2CAPChannelIdentifier
    /// The channel to close, as named by the sender of the request.
    public var sourceCID: L2CAPChannelIdentifier

    public init(destinationCID: L2CAPChannelIdentifier, sourceCID: L2CAPChannelIdentifier) {
        self.destinationCID = destinationCID
        self.sourceCID = sourceCID
    }
}

/// Connection Parameter Update Request, Core 5.4 Vol 3 Part A §4.20 (sent by the Peripheral on LE).
public struct L2CAPConnectionParameterUpdateRequest: Hashable, Sendable, Codable {
    /// Minimum connection interval in units of 1.25 ms (6...3200).
    public var intervalMin: UInt16
    /// Maximum connection interval in units of 1.25 ms (6...3200, at least `intervalMin`).
    public var intervalMax: UInt16
    /// Peripheral latency in connection events (below 500, and within the supervision timeout).
    public var peripheralLatency: UInt16
    /// Supervision timeout in units of 10 ms (10...3200).
    public var timeoutMultiplier: UInt16

    public static let intervalRange: ClosedRange<UInt16> = 6...3200
    public static let timeoutRange: ClosedRange<UInt16> = 10...3200
    public static let maximumPeripheralLatency: UInt16 = 499

    public init(intervalMin: UInt16, intervalMax: UInt16, peripheralLatency: UInt16, timeoutMultiplier: UInt16) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.peripheralLatency = peripheralLatency
        self.timeoutMultiplier = timeoutMultiplier
    }

    /// Checks the ranges of §4.20; the receiving Central answers *Connection Parameters rejected* when this
    /// throws (`invalidValue`, naming the field).
    public func validate() throws(DecodeError) {
        guard Self.intervalRange.contains(intervalMin) else {
            throw DecodeError(.invalidValue, at: 4, "Interval Min \(intervalMin) outside 6...3200")
        }
        guard Self.intervalRange.contains(intervalMax) else {
            throw DecodeError(.invalidValue, at: 6, "Interval Max \(intervalMax) outside 6...3200")
        }
        guard intervalMin <= intervalMax else {
            throw DecodeError(.invalidValue, at: 4, "Interval Min \(intervalMin) above Interval Max \(intervalMax)")
        }
        guard peripheralLatency <= Self.maximumPeripheralLatency else {
            throw DecodeError(.invalidValue, at: 8, "Peripheral Latency \(peripheralLatency) not below 500")
        }
        guard Self.timeoutRange.contains(timeoutMultiplier) else {
            throw DecodeError(.invalidValue, at: 10, "Timeout Multiplier \(timeoutMultiplier) outside 10...3200")
        }
        // Latency ≤ timeout / (intervalMax × 2) − 1, i.e. (latency + 1) × intervalMax × 1.25 ms × 2 ≤ timeout × 10 ms.
        let needed = (Int(peripheralLatency) + 1) * Int(intervalMax)
        guard needed <= 4 * Int(timeoutMultiplier) else {
            throw DecodeError(
                .invalidValue, at: 8,
                "Peripheral Latency \(peripheralLatency) too large: supervision timeout \(Int(timeoutMultiplier) * 10) ms "
                    + "must be at least (1 + latency) × Interval Max × 2"
            )
        }
    }
}

/// LE Credit Based Connection Request, Core 5.4 Vol 3 Part A §4.22.
public struct L2CAPLECreditBasedConnectionRequest: Hashable, Sendable {
    /// The LE Protocol/Service Multiplexer (0x0001...0x007F SIG-assigned, 0x0080...0x00FF dynamic).
    public var lePSM: UInt16
    /// The channel endpoint on the requesting device.
    public var sourceCID: L2CAPChannelIdentifier
    /// The largest SDU the requester can receive (at least 23).
    public var mtu: UInt16
    /// The largest K-frame payload the requester can receive (23...65533).
    public var mps: UInt16
    /// The number of K-frames the peer may send at once.
    public var initialCredits: UInt16

    public static let minimumMTU: UInt16 = 23
    public static let mpsRange: ClosedRange<UInt16> = 23...65533

    public init(lePSM: UInt16, sourceCID: L2CAPChannelIdentifier, mtu: UInt16, mps: UInt16, initialCredits: UInt16) {
        self.lePSM = lePSM
        self.sourceCID = sourceCID
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
    }

    /// Checks MTU ≥ 23 and MPS in 23...65533 (answer: *unacceptable parameters*).
    public func validate() throws(DecodeError) {
        guard mtu >= Self.minimumMTU else { throw DecodeError(.invalidValue, at: 8, "MTU \(mtu) below 23") }
        guard Self.mpsRange.contains(mps) else {
            throw DecodeError(.invalidValue, at: 10, "MPS \(mps) outside 23...65533")
        }
    }
}

/// LE Credit Based Connection Response, Core 5.4 Vol 3 Part A §4.23.
public struct L2CAPLECreditBasedConnectionResponse: Hashable, Sendable {
    /// The channel endpoint on the responding device (0x0000 when refused).
    public var destinationCID: L2CAPChannelIdentifier
    public var mtu: UInt16
    public var mps: UInt16
    public var initialCredits: UInt16
    public var result: L2CAPConnectionResult

    public init(
        destinationCID: L2CAPChannelIdentifier, mtu: UInt16, mps: UInt16, initialCredits: UInt16,
        result: L2CAPConnectionResult
    ) {
        self.destinationCID = destinationCID
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
        self.result = result
    }

    /// On success, checks MTU ≥ 23 and MPS in 23...65533 (other fields are ignored on refusal).
    public func validate() throws(DecodeError) {
        guard result == .successful else { return }
        guard mtu >= L2CAPLECreditBasedConnectionRequest.minimumMTU else {
            throw DecodeError(.invalidValue, at: 6, "MTU \(mtu) below 23")
        }
        guard L2CAPLECreditBasedConnectionRequest.mpsRange.contains(mps) else {
            throw DecodeError(.invalidValue, at: 8, "MPS \(mps) outside 23...65533")
        }
    }
}

/// Flow Control Credit Indication, Core 5.4 Vol 3 Part A §4.24.
public struct L2CAPFlowControlCreditIndication: Hashable, Sendable {
    /// The channel the credits are for: the sender's own (source) CID, which the receiver knows as its destination CID.
    public var cid: L2CAPChannelIdentifier
    /// Credits granted (1...65535).
    public var credits: UInt16

    public init(cid: L2CAPChannelIdentifier, credits: UInt16) {
        self.cid = cid
        self.credits = credits
    }

    /// Checks credits ≥ 1.
    public func validate() throws(DecodeError) {
        guard credits >= 1 else { throw DecodeError(.invalidValue, at: 6, "Credits 0 outside 1...65535") }
    }
}

/// L2CAP Credit Based Connection Request (enhanced credit based mode), Core 5.4 Vol 3 Part A §4.25.
public struct L2CAPCreditBasedConnectionRequest: Hashable, Sendable {
    public var spsm: UInt16
    /// At least 64.
    public var mtu: UInt16
    /// 64...65533.
    public var mps: UInt16
    public var initialCredits: UInt16
    /// 1 to 5 channel endpoints on the requester.
    public var sourceCIDs: [L2CAPChannelIdentifier]

    public static let minimumMTU: UInt16 = 64
    public static let mpsRange: ClosedRange<UInt16> = 64...65533
    public static let channelCountRange: ClosedRange<Int> = 1...5

    public init(spsm: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16, sourceCIDs: [L2CAPChannelIdentifier]) {
        self.spsm = spsm
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
        self.sourceCIDs = sourceCIDs
    }

    /// Checks MTU ≥ 64, MPS in 64...65533 and 1 to 5 source CIDs.
    public func validate() throws(DecodeError) {
        guard mtu >= Self.minimumMTU else { throw DecodeError(.invalidValue, at: 6, "MTU \(mtu) below 64") }
        guard Self.mpsRange.contains(mps) else { throw DecodeError(.invalidValue, at: 8, "MPS \(mps) outside 64...65533") }
        guard Self.channelCountRange.contains(sourceCIDs.count) else {
            throw DecodeError(.invalidLength, at: 12, "\(sourceCIDs.count) source CIDs, expected 1 to 5")
        }
    }
}

/// L2CAP Credit Based Connection Response, Core 5.4 Vol 3 Part A §4.26.
public struct L2CAPCreditBasedConnectionResponse: Hashable, Sendable {
    public var mtu: UInt16
    public var mps: UInt16
    public var initialCredits: UInt16
    public var result: L2CAPConnectionResult
    /// Up to 5 channel endpoints on the responder, in request order; 0x0000 for refused channels.
    public var destinationCIDs: [L2CAPChannelIdentifier]

    public static let maximumChannelCount = 5

    public init(
        mtu: UInt16, mps: UInt16, initialCredits: UInt16, result: L2CAPConnectionResult,
        destinationCIDs: [L2CAPChannelIdentifier]
    ) {
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
        self.result = result
        self.destinationCIDs = destinationCIDs
    }

    /// Checks at most 5 destination CIDs and, when any channel was accepted, MTU ≥ 64 and MPS in 64...65533.
    public func validate() throws(DecodeError) {
        guard destinationCIDs.count <= Self.maximumChannelCount else {
            throw DecodeError(.invalidLength, at: 12, "\(destinationCIDs.count) destination CIDs, expected at most 5")
        }
        guard destinationCIDs.contains(where: { $0 != .null }) else { return }
        guard mtu >= L2CAPCreditBasedConnectionRequest.minimumMTU else {
            throw DecodeError(.invalidValue, at: 4, "MTU \(mtu) below 64")
        }
        guard L2CAPCreditBasedConnectionRequest.mpsRange.contains(mps) else {
            throw DecodeError(.invalidValue, at: 6, "MPS \(mps) outside 64...65533")
        }
    }
}

/// Credit Based Reconfigure Request, Core 5.4 Vol 3 Part A §4.27.
public struct L2CAPCreditBasedReconfigureRequest: Hashable, Sendable {
    /// At least 64.
    public var mtu: UInt16
    /// 64...65533.
    public var mps: UInt16
    /// 1 to 5 channel endpoints on the receiver of the request.
    public var destinationCIDs: [L2CAPChannelIdentifier]

    public init(mtu: UInt16, mps: UInt16, destinationCIDs: [L2CAPChannelIdentifier]) {
        self.mtu = mtu
        self.mps = mps
        self.destinationCIDs = destinationCIDs
    }

    /// Checks MTU ≥ 64, MPS in 64...65533 and 1 to 5 destination CIDs.
    public func validate() throws(DecodeError) {
        guard mtu >= L2CAPCreditBasedConnectionRequest.minimumMTU else {
            throw DecodeError(.invalidValue, at: 4, "MTU \(mtu) below 64")
        }
        guard L2CAPCreditBasedConnectionRequest.mpsRange.contains(mps) else {
            throw DecodeError(.invalidValue, at: 6, "MPS \(mps) outside 64...65533")
        }
        guard L2CAPCreditBasedConnectionRequest.channelCountRange.contains(destinationCIDs.count) else {
            throw DecodeError(.invalidLength, at: 8, "\(destinationCIDs.count) destination CIDs, expected 1 to 5")
        }
    }
}
