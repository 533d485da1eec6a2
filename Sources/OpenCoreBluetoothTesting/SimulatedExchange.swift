public import Foundation

/// One thing that happened between the app and a simulated peripheral, as the peripheral saw it (Core 5.4 Vol 3
/// Part F §3.4, Part G §4), in the order of the world's log: what a test asserts ("the app wrote 01 to 2A39 with
/// response, after subscribing").
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
        }
    }
}
