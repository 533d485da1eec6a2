import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

private nonisolated(unsafe) let serviceUUID = CBUUID(string: "5E1F0000-0000-4000-8000-00000000A001")
private nonisolated(unsafe) let dynamicUUID = CBUUID(string: "5E1F0001-0000-4000-8000-00000000A001")
private nonisolated(unsafe) let cachedUUID = CBUUID(string: "5E1F0002-0000-4000-8000-00000000A001")
private let dynamicValue = Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) })
private let cachedValue = Data((0..<100).map { UInt8(truncatingIfNeeded: 200 &+ $0) })
private let writtenValue = Data((0..<100).map { UInt8(truncatingIfNeeded: 0x40 &+ $0) })

/// A peripheral app whose dynamic value is served from `didReceiveRead` (from each request's offset) and whose
/// writes are collected from `didReceiveWrite`, answered once per batch.
private final class RequestPeripheral: MainQueuePeripheral, @unchecked Sendable {
    var readOffsets: [(CBUUID, Int)] = []
    var writeBatches: [[(offset: Int, value: Data)]] = []
    var subscriptions: [String] = []

    override func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        let service = CBMutableService(type: serviceUUID, primary: true)
        service.characteristics = [
            CBMutableCharacteristic(type: dynamicUUID, properties: [.read, .write, .notify], value: nil, permissions: [.readable, .writeable]),
            CBMutableCharacteristic(type: cachedUUID, properties: [.read], value: cachedValue, permissions: [.readable]),
        ]
        peripheral.add(service)
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: "Requests", CBAdvertisementDataServiceUUIDsKey: [serviceUUID]])
    }

    override func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        readOffsets.append((request.characteristic.uuid, request.offset))
        guard request.offset <= dynamicValue.count else { return peripheral.respond(to: request, withResult: .invalidOffset) }
        request.value = dynamicValue.subdata(in: request.offset..<dynamicValue.count)
        peripheral.respond(to: request, withResult: .success)
    }

    override func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        writeBatches.append(requests.map { (offset: $0.offset, value: $0.value ?? Data()) })
        if let first = requests.first { peripheral.respond(to: first, withResult: .success) }
    }

    override func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        subscriptions.append("subscribe \(characteristic.uuid.uuidString.prefix(8))")
    }

    override func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {
        subscriptions.append("unsubscribe \(characteristic.uuid.uuidString.prefix(8))")
    }
}

/// A central app that reads the cached and the dynamic value, writes a long value with response, subscribes,
/// reads the RSSI and disconnects, one step after the other.
private final class RequestCentral: ConnectingCentral, @unchecked Sendable {
    var advertisedName: String?
    var advertisedServices: [CBUUID] = []
    var values: [CBUUID: Data] = [:]
    var maximumWriteLength = 0
    var done = false

    init() { super.init(service: serviceUUID) }

    override func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any],
                                 rssi RSSI: NSNumber) {
        guard self.peripheral == nil else { return }
        advertisedName = advertisementData[CBAdvertisementDataLocalNameKey] as? String
        advertisedServices = advertisementData[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID] ?? []
        super.centralManager(central, didDiscover: peripheral, advertisementData: advertisementData, rssi: RSSI)
    }

    override func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        maximumWriteLength = peripheral.maximumWriteValueLength(for: .withResponse)
        super.centralManager(central, didConnect: peripheral)
    }

    override func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        log.append("disconnected \(error == nil ? "cleanly" : "with an error")")
        done = true
    }

    private func characteristic(_ uuid: CBUUID) -> CBCharacteristic? {
        peripheral?.services?.first?.characteristics?.first { $0.uuid == uuid }
    }

    override func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        guard let cached = characteristic(cachedUUID) else { return }
        peripheral.readValue(for: cached)
    }

    override func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        values[characteristic.uuid] = characteristic.value
        log.append("read \(characteristic.uuid == cachedUUID ? "cached" : "dynamic") \(characteristic.value?.count ?? -1)")
        if characteristic.uuid == cachedUUID, let dynamic = self.characteristic(dynamicUUID) {
            peripheral.readValue(for: dynamic)
        } else if characteristic.uuid == dynamicUUID {
            peripheral.writeValue(writtenValue, for: characteristic, type: .withResponse)
        }
    }

    override func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        log.append("write \(error.map { "\($0)" } ?? "ok")")
        peripheral.setNotifyValue(true, for: characteristic)
    }

    override func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        log.append("notifying \(characteristic.isNotifying)")
        peripheral.readRSSI()
    }

    override func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: (any Error)?) {
        log.append(error == nil && RSSI.intValue < 0 && RSSI.intValue > -127 ? "rssi" : "rssi failed \(String(describing: error))")
        manager.cancelPeripheralConnection(peripheral)
    }
}

@Suite struct HostBackendRequestTests {
    /// At ATT_MTU 23 through two host stacks: the cached value is read (Read + Read Blob) without a callback; the
    /// dynamic one arrives as read requests with offsets 0, 22, 44... each answered from its offset; the long
    /// write (Prepare Write ×6 + Execute Write) reaches the app as one batch, answered once; the subscription and
    /// its end at disconnection reach the peripheral app; the advertisement carries the name and the service.
    @Test func requestsRepliesAndCachedValuesAtMinimumMTU() async throws {
        let apps = await makeOnMain(with: HostBackend.privateAirProvider(seed: 23, preferredATTMTU: 23)) { (RequestPeripheral(), RequestCentral()) }
        try await waitFor("the central's whole sequence, to its disconnection", until: { apps.value.1.done },
                          seen: { "central \(apps.value.1.log), peripheral \(apps.value.0.subscriptions)" })
        let central = await onMain {
            Box(value: (apps.value.1.log, apps.value.1.values, apps.value.1.advertisedName, apps.value.1.advertisedServices,
                        apps.value.1.maximumWriteLength))
        }
        let peripheral = await onMain {
            Box(value: (apps.value.0.readOffsets.map { "\($0.0 == dynamicUUID ? "dynamic" : "cached") \($0.1)" },
                        apps.value.0.writeBatches, apps.value.0.subscriptions))
        }
        #expect(central.value.0 == ["read cached 100", "read dynamic 300", "write ok", "notifying true", "rssi", "disconnected cleanly"])
        #expect(central.value.1[cachedUUID] == cachedValue)
        #expect(central.value.1[dynamicUUID] == dynamicValue)
        #expect(central.value.2 == "Requests")
        #expect(central.value.3 == [serviceUUID])
        #expect(central.value.4 == 512)
        #expect(peripheral.value.0 == stride(from: 0, to: 300, by: 22).map { "dynamic \($0)" })
        let batches = peripheral.value.1
        #expect(batches.count == 1)
        #expect(batches.first?.map(\.offset) == [0])
        #expect(batches.first?.first?.value == writtenValue)
        #expect(peripheral.value.2 == ["subscribe 5E1F0001", "unsubscribe 5E1F0001"])
    }
}
