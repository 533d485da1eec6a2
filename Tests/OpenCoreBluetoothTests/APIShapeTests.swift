import BluetoothRuntime
import Foundation
import Testing
// Deliberately not @testable: this file sees OpenCoreBluetooth as an app does, so subclassing and overriding
// compile only where the API is `open`, and an unused result warns unless it is `@discardableResult`.
import OpenCoreBluetooth

/// A central manager subclass as apps and mocking libraries write them (issue 12 item 3).
private final class CountingCentralManager: CBCentralManager, @unchecked Sendable {
    var scans = 0
    var stops = 0
    var delegateChanges = 0

    override var delegate: (any CBCentralManagerDelegate)? {
        didSet { delegateChanges += 1 }
    }

    override func scanForPeripherals(withServices serviceUUIDs: [CBUUID]?, options: [String: Any]? = nil) {
        scans += 1
        super.scanForPeripherals(withServices: serviceUUIDs, options: options)
    }

    override func stopScan() {
        stops += 1
        super.stopScan()
    }
}

private final class CountingPeripheralManager: CBPeripheralManager, @unchecked Sendable {
    var added: [CBMutableService] = []

    override func add(_ service: CBMutableService) {
        added.append(service)
        super.add(service)
    }
}

private final class TaggedService: CBMutableService, @unchecked Sendable {
    let tag = "tagged"
}

private final class TracedCharacteristic: CBMutableCharacteristic, @unchecked Sendable {
    var valueChanges = 0

    override var value: Data? {
        didSet { valueChanges += 1 }
    }
}

private final class TaggedDescriptor: CBMutableDescriptor, @unchecked Sendable {
    let tag = "described"
}

/// The compile-level API shape of issue 12 item 3: open classes, discardable results, the errors' user info.
@Suite struct APIShapeTests {
    @Test func aCentralManagerSubclassOverridesAndWorks() throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        backend.add(FakeRemotePeripheral(address: 0xC0FFEE_0000A1, name: "Sub", services: []))
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        var found: CBPeripheral?
        recorder.onDiscover = { central, peripheral, _, _ in
            found = peripheral
            central.stopScan()
        }
        // The inherited convenience initializer.
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            CountingCentralManager(delegate: recorder, queue: log.queue)
        }
        settle(loop, log.queue)
        #expect(manager.state == .poweredOn)
        #expect(log.entries == ["state poweredOn"])

        // Called through the base class: the overrides run.
        let base: CBCentralManager = manager
        log.queue.sync { base.scanForPeripherals(withServices: nil) }
        settle(loop, log.queue)
        #expect(manager.scans == 1)
        #expect(manager.stops == 1)
        #expect(!manager.isScanning)
        let peripheral = try #require(found)
        #expect(peripheral.name == "Sub")
        let changes = manager.delegateChanges
        manager.delegate = nil
        #expect(manager.delegateChanges == changes + 1)

        // Apple's methods whose result Swift lets an app ignore: no warning here (the build has none).
        log.queue.sync {
            base.retrievePeripherals(withIdentifiers: [peripheral.identifier])
            base.retrieveConnectedPeripherals(withServices: [CBUUID(string: "180D")])
            CBCentralManager.supports(.extendedScanAndConnect)
            peripheral.maximumWriteValueLength(for: .withoutResponse)
        }
        #expect(log.queue.sync { base.retrievePeripherals(withIdentifiers: [peripheral.identifier]) }.first === peripheral)
    }

    @Test func mutableAttributeAndPeripheralManagerSubclassesArePublished() throws {
        let loop = ManualEventLoop()
        let backend = FakePeripheralBackend(loop: loop)
        let log = CallLog()
        let recorder = PeripheralRecorder(log: log)
        var addedService: CBService?
        recorder.onAdd = { _, service, _ in addedService = service }
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(peripheral: backend)) {
            CountingPeripheralManager(delegate: recorder, queue: log.queue)
        }
        let characteristic = TracedCharacteristic(type: CBUUID(string: "2A29"), properties: [.read], value: nil,
                                                  permissions: [.readable])
        characteristic.value = Data("OpenCoreBluetooth".utf8)
        characteristic.descriptors = [TaggedDescriptor(type: CBUUID(string: CBUUIDCharacteristicUserDescriptionString),
                                                       value: "Maker")]
        #expect(characteristic.valueChanges == 1)
        let service = TaggedService(type: CBUUID(string: "180A"), primary: true)
        service.characteristics = [characteristic]

        settle(loop, log.queue)
        log.queue.sync { manager.add(service) }
        settle(loop, log.queue)
        #expect(manager.added.count == 1)
        #expect(log.entries == ["state poweredOn", "added 180A"])
        let published = try #require(addedService as? TaggedService)
        #expect(published === service)
        #expect(published.tag == "tagged")
        #expect((published.characteristics?.first as? TracedCharacteristic) === characteristic)
        #expect((characteristic.descriptors?.first as? TaggedDescriptor)?.tag == "described")
        #expect(characteristic.value == Data("OpenCoreBluetooth".utf8))
    }

    @Test func errorsKeepTheirUserInfo() {
        let info: [String: Any] = ["peer": "AA:BB", "attempt": 3, NSLocalizedDescriptionKey: "It went away."]
        let error = CBError(.peripheralDisconnected, userInfo: info)
        #expect(error.userInfo["peer"] as? String == "AA:BB")
        #expect(error.userInfo["attempt"] as? Int == 3)
        #expect(error.localizedDescription == "It went away.")
        #expect(error.errorUserInfo["attempt"] as? Int == 3)
        #expect(CBError(.notConnected).userInfo.isEmpty)
        #expect(CBError(.notConnected).errorUserInfo[NSLocalizedDescriptionKey] as? String == "The device is not connected.")

        let att = CBATTError(.insufficientEncryption, userInfo: ["handle": 0x2A])
        #expect(att.userInfo["handle"] as? Int == 0x2A)
        #expect(att.errorUserInfo["handle"] as? Int == 0x2A)
        #expect(att.errorUserInfo[NSLocalizedDescriptionKey] != nil)
        #expect(CBATTError(attErrorCode: 0x80).userInfo.isEmpty)

        // Through `any Error`, as a delegate receives it.
        let received: any Error = error
        #expect((received as? CBError)?.userInfo["peer"] as? String == "AA:BB")
    }

    @Test func theMisspeltUnknownDeviceShortcut() {
        #expect(CBError.unkownDevice == CBError.unknownDevice)
        #expect(CBError.unkownDevice.rawValue == 12)
        let error: any Error = CBError(.unknownDevice)
        var caught = false
        switch error {
        case CBError.unkownDevice: caught = true
        default: break
        }
        #expect(caught)
    }
}
