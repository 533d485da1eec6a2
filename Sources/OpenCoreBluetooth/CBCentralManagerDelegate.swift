public import Foundation

/// The central manager's delegate (CoreBluetooth `CBCentralManagerDelegate`). Linux Swift has no `@objc
/// optional`: every optional callback has an empty default below; `centralManagerDidUpdateState(_:)` is required.
/// Signatures match Apple's to the type: a method that differs only "nearly matches" and is never called.
public protocol CBCentralManagerDelegate: NSObjectProtocol {
    /// The manager's `state` changed; the first call comes asynchronously after the manager is created. Required.
    func centralManagerDidUpdateState(_ central: CBCentralManager)
    /// A manager created with a restore identifier gets back the state a previous one kept, before its first state
    /// update; `dict` holds the `CBCentralManagerRestoredState…` keys.
    func centralManager(_ central: CBCentralManager, willRestoreState dict: [String: Any])
    /// A scan found `peripheral`: `advertisementData` uses the `CBAdvertisementData…` keys, `RSSI` is in dBm
    /// (127: not available).
    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber)
    /// `connect(_:options:)` succeeded: `peripheral` is connected.
    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral)
    /// `connect(_:options:)` failed; `peripheral` is disconnected again.
    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?)
    /// The link to `peripheral` is gone: `error` is nil after `cancelPeripheralConnection(_:)`, set otherwise. Not
    /// called when Bluetooth turns off, as on iOS 10 and later.
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?)
    /// iOS 17: the façade always calls this one; its default forwards to
    /// `centralManager(_:didDisconnectPeripheral:error:)`, so implementing it replaces the old one, as on Apple.
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral,
                        timestamp: CFAbsoluteTime, isReconnecting: Bool, error: (any Error)?)
    /// A peer matching `registerForConnectionEvents(options:)` connected or disconnected.
    func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent,
                        for peripheral: CBPeripheral)
    /// The peripheral's ANCS authorization changed. Never called on Linux, which has no ANCS.
    func centralManager(_ central: CBCentralManager, didUpdateANCSAuthorizationFor peripheral: CBPeripheral)
}

extension CBCentralManagerDelegate {
    public func centralManager(_ central: CBCentralManager, willRestoreState dict: [String: Any]) {}
    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {}
    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {}
    public func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {}
    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {}
    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral,
                               timestamp: CFAbsoluteTime, isReconnecting: Bool, error: (any Error)?) {
        centralManager(central, didDisconnectPeripheral: peripheral, error: error)
    }
    public func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent,
                               for peripheral: CBPeripheral) {}
    public func centralManager(_ central: CBCentralManager, didUpdateANCSAuthorizationFor peripheral: CBPeripheral) {}
}

/// A peripheral's delegate (CoreBluetooth `CBPeripheralDelegate`); every callback is optional.
public protocol CBPeripheralDelegate: NSObjectProtocol {
    /// The peripheral's `name` changed.
    func peripheralDidUpdateName(_ peripheral: CBPeripheral)
    /// The peer's database changed (Service Changed): `invalidatedServices` are gone from `services`; discover again.
    func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService])
    /// `readRSSI()` completed with `RSSI` in dBm, or failed.
    func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: (any Error)?)
    /// Deprecated by Apple (iOS 8, macOS 10.13) for `peripheral(_:didReadRSSI:error:)`, and still called for a
    /// delegate that implements only it: the default `didReadRSSI` forwards here (`peripheral.rssi` is set first).
    @available(iOS, deprecated: 8.0, message: "Use peripheral(_:didReadRSSI:error:)")
    @available(macOS, deprecated: 10.13, message: "Use peripheral(_:didReadRSSI:error:)")
    func peripheralDidUpdateRSSI(_ peripheral: CBPeripheral, error: (any Error)?)
    /// `discoverServices(_:)` completed; the services are in `peripheral.services`.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?)
    /// `discoverIncludedServices(_:for:)` completed; the services are in `service.includedServices`.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverIncludedServicesFor service: CBService, error: (any Error)?)
    /// `discoverCharacteristics(_:for:)` completed; the characteristics are in `service.characteristics`.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?)
    /// The characteristic's `value` was read, notified or indicated (apps cannot tell which), or a read failed.
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?)
    /// A write with response to the characteristic completed.
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?)
    /// `setNotifyValue(_:for:)` completed; see `characteristic.isNotifying`.
    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?)
    /// `discoverDescriptors(for:)` completed; the descriptors are in `characteristic.descriptors`.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: (any Error)?)
    /// A read of the descriptor completed; its value is in `descriptor.value`.
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: (any Error)?)
    /// A write to the descriptor completed.
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor descriptor: CBDescriptor, error: (any Error)?)
    /// `canSendWriteWithoutResponse` became true again: there is room for more writes without response.
    func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral)
    /// `openL2CAPChannel(_:)` completed with a channel, or failed; keep a strong reference to the channel.
    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?)
}

extension CBPeripheralDelegate {
    public func peripheralDidUpdateName(_ peripheral: CBPeripheral) {}
    public func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService]) {}
    public func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: (any Error)?) {
        peripheralDidUpdateRSSI(peripheral, error: error)
    }
    public func peripheralDidUpdateRSSI(_ peripheral: CBPeripheral, error: (any Error)?) {}
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {}
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverIncludedServicesFor service: CBService, error: (any Error)?) {}
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {}
    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {}
    public func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {}
    public func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {}
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: (any Error)?) {}
    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: (any Error)?) {}
    public func peripheral(_ peripheral: CBPeripheral, didWriteValueFor descriptor: CBDescriptor, error: (any Error)?) {}
    public func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral) {}
    public func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {}
}

/// The peripheral manager's delegate (CoreBluetooth `CBPeripheralManagerDelegate`);
/// `peripheralManagerDidUpdateState(_:)` is required, the rest have empty defaults.
public protocol CBPeripheralManagerDelegate: NSObjectProtocol {
    /// The manager's `state` changed; the first call comes asynchronously after the manager is created. Required.
    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager)
    /// A manager created with a restore identifier gets back the state a previous one kept, before its first state
    /// update; `dict` holds the `CBPeripheralManagerRestoredState…` keys.
    func peripheralManager(_ peripheral: CBPeripheralManager, willRestoreState dict: [String: Any])
    /// `startAdvertising(_:)` completed, or failed.
    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?)
    /// `add(_:)` published the service, or failed.
    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?)
    /// `central` enabled notifications or indications of `characteristic`: a cue to start sending updates.
    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic)
    /// `central` disabled notifications and indications of `characteristic`, or disconnected.
    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic)
    /// A central reads a dynamic value from `request.offset`: set `request.value` and call `respond(to:withResult:)`
    /// once.
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest)
    /// A central writes: treat `requests` as one unit and call `respond(to:withResult:)` once, with the first request.
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest])
    /// The update queue has room again after `updateValue(_:for:onSubscribedCentrals:)` returned false.
    func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager)
    /// `publishL2CAPChannel(withEncryption:)` completed with the PSM the stack chose, or failed.
    func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?)
    /// `unpublishL2CAPChannel(_:)` completed, or failed.
    func peripheralManager(_ peripheral: CBPeripheralManager, didUnpublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?)
    /// A central opened a channel on a published PSM; keep a strong reference to the channel.
    func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: (any Error)?)
}

extension CBPeripheralManagerDelegate {
    public func peripheralManager(_ peripheral: CBPeripheralManager, willRestoreState dict: [String: Any]) {}
    public func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {}
    public func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?) {}
    public func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {}
    public func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {}
    public func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {}
    public func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {}
    public func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) {}
    public func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?) {}
    public func peripheralManager(_ peripheral: CBPeripheralManager, didUnpublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?) {}
    public func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {}
}
