import Foundation
@testable import OpenCoreBluetooth

/// A central-side delegate that logs every callback (name + detail) to a `CallLog` and runs optional hooks.
final class CentralRecorder: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    let log: CallLog
    var onState: ((CBCentralManager) -> Void)?
    var onDiscover: ((CBCentralManager, CBPeripheral, [String: Any], NSNumber) -> Void)?
    var onConnect: ((CBPeripheral) -> Void)?
    var onServices: ((CBPeripheral) -> Void)?
    var onCharacteristics: ((CBPeripheral, CBService) -> Void)?
    var onValue: ((CBPeripheral, CBCharacteristic, (any Error)?) -> Void)?
    var onWrite: ((CBPeripheral, CBCharacteristic, (any Error)?) -> Void)?
    var onNotifyState: ((CBPeripheral, CBCharacteristic) -> Void)?
    var onReady: ((CBPeripheral) -> Void)?
    var onOpen: ((CBL2CAPChannel?) -> Void)?
    var lastAdvertisement: [String: Any] = [:]
    var lastRSSI: NSNumber?
    var lastError: (any Error)?

    init(log: CallLog) { self.log = log }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        log.add("state \(central.state)")
        onState?(central)
    }
    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        log.add("discover \(peripheral.name ?? "-")")
        lastAdvertisement = advertisementData
        lastRSSI = RSSI
        onDiscover?(central, peripheral, advertisementData, RSSI)
    }
    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        log.add("connect \(peripheral.name ?? "-")")
        onConnect?(peripheral)
    }
    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {
        log.add("fail")
    }
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        log.add("disconnect \(error == nil ? "nil" : "error")")
        lastError = error
    }
    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        log.add("services \(peripheral.services?.map(\.uuid.uuidString).joined(separator: ",") ?? "nil")")
        onServices?(peripheral)
    }
    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        log.add("characteristics \(service.characteristics?.map(\.uuid.uuidString).joined(separator: ",") ?? "nil")")
        onCharacteristics?(peripheral, service)
    }
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        log.add("value \(characteristic.uuid.uuidString) \(characteristic.value.map { [UInt8]($0) } ?? [])\(error == nil ? "" : " error")")
        lastError = error
        onValue?(peripheral, characteristic, error)
    }
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        log.add("wrote \(characteristic.uuid.uuidString)\(error == nil ? "" : " error")")
        lastError = error
        onWrite?(peripheral, characteristic, error)
    }
    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        log.add("notifying \(characteristic.isNotifying)")
        lastError = error
        onNotifyState?(peripheral, characteristic)
    }
    func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: (any Error)?) {
        log.add("descriptors \(characteristic.descriptors?.map(\.uuid.uuidString).joined(separator: ",") ?? "nil")")
    }
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: (any Error)?) {
        log.add("descriptor value \(descriptor.value.map { "\($0)" } ?? "nil")")
    }
    func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: (any Error)?) {
        log.add("rssi \(RSSI)")
    }
    func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral) {
        log.add("ready")
        onReady?(peripheral)
    }
    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {
        log.add("open \(channel?.psm ?? 0)")
        onOpen?(channel)
    }
}

/// A peripheral-manager delegate that logs every callback and runs optional hooks.
final class PeripheralRecorder: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    let log: CallLog
    var onState: ((CBPeripheralManager) -> Void)?
    var onAdd: ((CBPeripheralManager, CBService, (any Error)?) -> Void)?
    var onRead: ((CBPeripheralManager, CBATTRequest) -> Void)?
    var onWrite: ((CBPeripheralManager, [CBATTRequest]) -> Void)?
    var onSubscribe: ((CBPeripheralManager, CBCentral, CBCharacteristic) -> Void)?
    var onReady: ((CBPeripheralManager) -> Void)?
    var onOpen: ((CBL2CAPChannel?) -> Void)?
    var lastError: (any Error)?

    init(log: CallLog) { self.log = log }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        log.add("state \(peripheral.state)")
        onState?(peripheral)
    }
    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?) {
        log.add("added \(service.uuid.uuidString)\(error == nil ? "" : " error")")
        lastError = error
        onAdd?(peripheral, service, error)
    }
    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {
        log.add("advertising\(error == nil ? "" : " error")")
        lastError = error
    }
    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        log.add("subscribed \(characteristic.uuid.uuidString)")
        onSubscribe?(peripheral, central, characteristic)
    }
    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {
        log.add("unsubscribed \(characteristic.uuid.uuidString)")
    }
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        log.add("read \(request.offset)")
        onRead?(peripheral, request)
    }
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        log.add("write \(requests.map { "\($0.offset):\($0.value?.count ?? 0)" }.joined(separator: ","))")
        onWrite?(peripheral, requests)
    }
    func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) {
        log.add("ready")
        onReady?(peripheral)
    }
    func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?) {
        log.add("published \(PSM)")
    }
    func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {
        log.add("open \(channel?.psm ?? 0)")
        onOpen?(channel)
    }
}
