public import Foundation
import OpenCoreBluetooth

/// What a simulated peripheral's app answers: each request of the central under test, as Nordic's
/// `CBMPeripheralSpecDelegate` does, with a ``SimulatedResponse`` that can also be late, missing or a dropped link.
/// Every method has a default (reads answer the characteristic's value, writes and subscriptions succeed), so a
/// delegate writes only what its test is about. Called on the peripheral's own queue, one request at a time; it may
/// call the peripheral's `simulate…` methods.
public protocol SimulatedPeripheralDelegate: AnyObject, Sendable {
    /// A Read or Read Blob Request: the value from `offset`.
    func peripheral(_ peripheral: SimulatedPeripheral, didReceiveReadRequestFor characteristic: SimulatedCharacteristic,
                    offset: Int) -> SimulatedResponse<Data>
    /// A Write Request (or an Execute Write of a long value): success keeps `data` as the value.
    func peripheral(_ peripheral: SimulatedPeripheral, didReceiveWriteRequestFor characteristic: SimulatedCharacteristic,
                    data: Data) -> SimulatedResponse<Void>
    /// A Write Command (no answer is sent; the value is kept).
    func peripheral(_ peripheral: SimulatedPeripheral, didReceiveWriteCommandFor characteristic: SimulatedCharacteristic, data: Data)
    /// A write of the characteristic's CCCD: the app subscribing (`enabled`) or unsubscribing.
    func peripheral(_ peripheral: SimulatedPeripheral, didReceiveSetNotifyRequest enabled: Bool,
                    for characteristic: SimulatedCharacteristic) -> SimulatedResponse<Void>
    /// A central's subscription took effect (after the answer to its CCCD write): the place to send it a first
    /// value, as `peripheralManager(_:central:didSubscribeTo:)` does.
    func peripheral(_ peripheral: SimulatedPeripheral, didSubscribeTo characteristic: SimulatedCharacteristic)
    /// A central turned its notifications or indications off, or its link ended.
    func peripheral(_ peripheral: SimulatedPeripheral, didUnsubscribeFrom characteristic: SimulatedCharacteristic)
    /// A central connected.
    func peripheralDidConnect(_ peripheral: SimulatedPeripheral)
    /// A central's link ended.
    func peripheralDidDisconnect(_ peripheral: SimulatedPeripheral)
}

extension SimulatedPeripheralDelegate {
    public func peripheral(_ peripheral: SimulatedPeripheral, didReceiveReadRequestFor characteristic: SimulatedCharacteristic,
                           offset: Int) -> SimulatedResponse<Data> {
        let value = peripheral.value(of: characteristic.cbUUID) ?? characteristic.value
        return offset <= value.count ? .success(value.subdata(in: offset..<value.count)) : .error(.invalidOffset)
    }
    public func peripheral(_ peripheral: SimulatedPeripheral, didReceiveWriteRequestFor characteristic: SimulatedCharacteristic,
                           data: Data) -> SimulatedResponse<Void> { .success(()) }
    public func peripheral(_ peripheral: SimulatedPeripheral, didReceiveWriteCommandFor characteristic: SimulatedCharacteristic, data: Data) {}
    public func peripheral(_ peripheral: SimulatedPeripheral, didReceiveSetNotifyRequest enabled: Bool,
                           for characteristic: SimulatedCharacteristic) -> SimulatedResponse<Void> { .success(()) }
    public func peripheral(_ peripheral: SimulatedPeripheral, didSubscribeTo characteristic: SimulatedCharacteristic) {}
    public func peripheral(_ peripheral: SimulatedPeripheral, didUnsubscribeFrom characteristic: SimulatedCharacteristic) {}
    public func peripheralDidConnect(_ peripheral: SimulatedPeripheral) {}
    public func peripheralDidDisconnect(_ peripheral: SimulatedPeripheral) {}
}

/// The delegate of a peripheral declared without one: every default.
final class DefaultSimulatedPeripheralDelegate: SimulatedPeripheralDelegate {}
