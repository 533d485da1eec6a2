public import Foundation

/// One thing that happened between the app and a simulated peripheral, as the peripheral saw it (Core 5.4 Vol 3
/// Part F §3.4, Part G §4 for ATT and GATT; Part H for SMP; Part A §4.20 and Vol 6 Part B §5.1.1 for the link's
/// parameters), in the order of the world's log: what a test asserts ("the app wrote 01 to 2A39 with response,
/// after subscribing", "the app paired, then read").
public struct SimulatedExchange: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        case connected
        case disconnected
        /// A read of the characteristic's value.
        case read(characteristic: String)
        /// A write of the characteristic's value, with or without response.
        case write(characteristic: String, value: Data, withResponse: Bool)
        /// A write of the characteristic's CCCD.
        case subscribe(characteristic: String, enabled: Bool)
        /// The link was paired (SMP, Vol 3 Part H §2.3): LE Secure Connections or legacy pairing.
        case paired(secureConnections: Bool)
        /// The link was encrypted with the keys of an earlier pairing (Vol 3 Part H §2.4.4).
        case encryptedWithBond
        /// Securing the link failed: the SMP Pairing Failed reason, or why in words (a timeout, a lost bond).
        case pairingFailed(reason: String)
        /// The link's connection interval changed (LE Connection Update, Vol 6 Part B §5.1.1).
        case connectionUpdated(interval: Duration)
    }

    /// The peripheral's name (its spec's).
    public var peripheral: String
    public var kind: Kind

    public var description: String {
        switch kind {
        case .connected: "\(peripheral): connected"
        case .disconnected: "\(peripheral): disconnected"
        case .read(let uuid): "\(peripheral): read \(uuid)"
        case .write(let uuid, let value, let withResponse):
            "\(peripheral): write \(value.map { String(format: "%02x", $0) }.joined()) to \(uuid) \(withResponse ? "with" : "without") response"
        case .subscribe(let uuid, let enabled): "\(peripheral): \(enabled ? "subscribe to" : "unsubscribe from") \(uuid)"
        case .paired(let secureConnections): "\(peripheral): paired (\(secureConnections ? "LE Secure Connections" : "legacy"))"
        case .encryptedWithBond: "\(peripheral): encrypted with the bond"
        case .pairingFailed(let reason): "\(peripheral): pairing failed: \(reason)"
        case .connectionUpdated(let interval): "\(peripheral): connection interval \(interval)"
        }
    }
}
