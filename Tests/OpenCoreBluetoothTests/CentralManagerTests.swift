import BluetoothCore
import BluetoothRuntime
import Foundation
import Testing
@testable import OpenCoreBluetooth

private let heartRate = BluetoothUUID(0x180D)
private let measurement = BluetoothUUID(0x2A37)
private let location = BluetoothUUID(0x2A38)

private func heartRateMonitor(address: UInt64 = 0xC0FFEE_000001, mtu: Int = 23) -> FakeRemotePeripheral {
    FakeRemotePeripheral(address: address, name: "HRM", services: [
        FakeService(uuid: heartRate, characteristics: [
            FakeCharacteristic(uuid: measurement, properties: [.notify], value: [0x00, 60]),
            FakeCharacteristic(uuid: location, properties: [.read, .write, .writeWithoutResponse], value: [0x01],
                               descriptors: [(BluetoothUUID(0x2901), Array("Sensor location".utf8))]),
        ]),
    ], mtu: mtu)
}

@Suite struct CentralManagerTests {
    @Test func firstStateCallbackIsAsynchronousAndOnTheGivenQueue() {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            CBCentralManager(delegate: recorder, queue: log.queue, options: [CBCentralManagerOptionShowPowerAlertKey: true])
        }
        #expect(manager.state == .unknown)
        #expect(log.entries.isEmpty)
        settle(loop, log.queue)
        #expect(log.entries == ["state poweredOn"])
        #expect(log.offQueue.isEmpty)
        #expect(manager.state == .poweredOn)
        #expect(CBManager.authorization == .allowedAlways)
    }

    @Test func withoutABackendTheManagerIsUnsupported() {
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        let manager = CBBackendRegistry.$taskProvider.withValue(CBBackendProvider(makeCentral: { nil }, makePeripheral: { nil })) {
            CBCentralManager(delegate: recorder, queue: log.queue)
        }
        log.queue.sync {}
        #expect(log.entries == ["state unsupported"])
        #expect(manager.state == .unsupported)
    }

    @Test func wholeCentralFlowRunsInOrderOnThePrivateQueue() throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        let remote = heartRateMonitor()
        backend.add(remote)
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        var kept: CBPeripheral?
        recorder.onState = { $0.state == .poweredOn ? $0.scanForPeripherals(withServices: [CBUUID(string: "180D")]) : () }
        recorder.onDiscover = { central, peripheral, _, _ in
            kept = peripheral
            peripheral.delegate = recorder
            central.stopScan()
            central.connect(peripheral)
        }
        recorder.onConnect = { $0.discoverServices(nil) }
        recorder.onServices = { peripheral in
            if let service = peripheral.services?.first { peripheral.discoverCharacteristics(nil, for: service) }
        }
        recorder.onCharacteristics = { peripheral, service in
            guard let characteristics = service.characteristics else { return }
            peripheral.readValue(for: characteristics[1])
            peripheral.writeValue(Data([0x02]), for: characteristics[1], type: .withResponse)
            peripheral.setNotifyValue(true, for: characteristics[0])
        }
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            CBCentralManager(delegate: recorder, queue: log.queue)
        }
        settle(loop, log.queue)
        let handle = try #require(remote.valueHandle(of: measurement))
        backend.notify(remote, handle: handle, value: [0x00, 72])
        settle(loop, log.queue)
        let peripheral = try #require(kept)
        manager.cancelPeripheralConnection(peripheral)
        #expect(peripheral.state == .disconnecting)
        settle(loop, log.queue)

        #expect(log.entries == [
            "state poweredOn", "discover HRM", "connect HRM", "services 180D", "characteristics 2A37,2A38",
            "value 2A38 [1]", "wrote 2A38", "notifying true", "value 2A37 [0, 72]", "disconnect nil",
        ])
        #expect(log.offQueue.isEmpty)
        #expect(peripheral.state == .disconnected)
        #expect(peripheral.services == nil)
        #expect(remote.writes.map(\.value) == [[0x02]])
        #expect(recorder.lastRSSI == -50)
        #expect(recorder.lastAdvertisement[CBAdvertisementDataLocalNameKey] as? String == "HRM")
        #expect((recorder.lastAdvertisement[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID]) == [CBUUID(string: "180D")])
        #expect((recorder.lastAdvertisement[CBAdvertisementDataIsConnectable] as? NSNumber)?.boolValue == true)
        #expect(manager.isScanning == false)
        #expect(backend.commands.contains("stopScan"))
    }

    @Test func commandsBeforePoweredOnAreMisuseAndIgnored() {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop, initialState: .poweredOff)
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            CBCentralManager(delegate: recorder, queue: log.queue)
        }
        // Before the first state callback: state is .unknown.
        manager.scanForPeripherals(withServices: nil, options: nil)
        #expect(manager.isScanning == false)
        settle(loop, log.queue)
        #expect(log.entries == ["state poweredOff"])
        manager.scanForPeripherals(withServices: nil)
        manager.stopScan()
        #expect(manager.retrievePeripherals(withIdentifiers: [UUID()]).isEmpty)
        #expect(backend.commands.isEmpty)
        #expect(manager.misuseLog.count == 3)
        #expect(manager.misuseLog.allSatisfy {
            $0.hasPrefix("[CoreBluetooth] API MISUSE: <CBCentralManager: 0x") && $0.hasSuffix("can only accept this command while in the powered on state")
        })
    }

    @Test func scanCoalescesDuplicatesUnlessAskedAndFiltersByService() {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        backend.add(heartRateMonitor())
        backend.add(FakeRemotePeripheral(address: 0xC0FFEE_000002, name: "Other", services: [FakeService(uuid: BluetoothUUID(0x180F), characteristics: [])]))
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        var kept: [CBPeripheral] = []
        recorder.onDiscover = { _, peripheral, _, _ in kept.append(peripheral) }
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            CBCentralManager(delegate: recorder, queue: log.queue)
        }
        settle(loop, log.queue)
        manager.scanForPeripherals(withServices: [CBUUID(string: "0000180D-0000-1000-8000-00805F9B34FB")])
        settle(loop, log.queue)
        backend.advertiseAll()
        settle(loop, log.queue)
        #expect(log.entries == ["state poweredOn", "discover HRM"])
        #expect(manager.isScanning)

        manager.scanForPeripherals(withServices: nil, options: [CBCentralManagerScanOptionAllowDuplicatesKey: true])
        settle(loop, log.queue)
        backend.advertiseAll()
        settle(loop, log.queue)
        #expect(log.entries == ["state poweredOn", "discover HRM", "discover HRM", "discover Other", "discover HRM", "discover Other"])
        // The same device is the same object while someone holds it.
        #expect(kept[0] === kept[1])
    }

    @Test func discoveredPeripheralsAreHeldWeakly() throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        let remote = heartRateMonitor()
        backend.add(remote)
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        weak var seen: CBPeripheral?
        recorder.onDiscover = { _, peripheral, _, _ in seen = peripheral }
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            CBCentralManager(delegate: recorder, queue: log.queue)
        }
        settle(loop, log.queue)
        manager.scanForPeripherals(withServices: nil)
        settle(loop, log.queue)
        #expect(log.entries.contains("discover HRM"))
        #expect(seen == nil)
        #expect(manager.livePeripheralCount == 0)
        // Still retrievable by its identifier (a new object), since the identifier is known.
        let identifier = CBPeerIdentifier.identifier(for: remote.peer.address)
        let retrieved = manager.retrievePeripherals(withIdentifiers: [UUID(), identifier])
        #expect(retrieved.count == 1)
        #expect(retrieved.first?.identifier == identifier)
        #expect(retrieved.first?.state == .disconnected)
    }

    @Test func releasingAConnectedPeripheralCancelsItsConnection() throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        let remote = heartRateMonitor()
        backend.add(remote)
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        var kept: CBPeripheral?
        recorder.onDiscover = { central, peripheral, _, _ in
            kept = peripheral
            central.stopScan()
            central.connect(peripheral)
        }
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            CBCentralManager(delegate: recorder, queue: log.queue)
        }
        settle(loop, log.queue)
        manager.scanForPeripherals(withServices: nil)
        settle(loop, log.queue)
        #expect(kept?.state == .connected)
        #expect(backend.state.withLock { $0.cancels }.isEmpty)
        log.queue.sync { kept = nil }
        settle(loop, log.queue)
        #expect(backend.state.withLock { $0.cancels } == [remote.peer])
        #expect(backend.state.withLock { $0.connected }.isEmpty)
        #expect(manager.misuseLog.last?.contains("Cancelling connection for unused peripheral") == true)
        // Nobody is told: the disconnection has no peripheral to report.
        #expect(log.entries == ["state poweredOn", "discover HRM", "connect HRM"])
    }

    @Test func writeWithoutResponseFlowControlAndMaximumLengths() throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop, writeQueueCapacity: 3)
        let remote = heartRateMonitor(mtu: 185)
        backend.add(remote)
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        var kept: CBPeripheral?
        var target: CBCharacteristic?
        recorder.onDiscover = { central, peripheral, _, _ in
            kept = peripheral
            peripheral.delegate = recorder
            central.connect(peripheral)
        }
        recorder.onConnect = { $0.discoverServices([CBUUID(string: "180D")]) }
        recorder.onServices = { $0.discoverCharacteristics([CBUUID(string: "2A38")], for: $0.services![0]) }
        recorder.onCharacteristics = { _, service in target = service.characteristics?.first }
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            CBCentralManager(delegate: recorder, queue: log.queue)
        }
        settle(loop, log.queue)
        manager.scanForPeripherals(withServices: nil)
        settle(loop, log.queue)
        let peripheral = try #require(kept)
        let characteristic = try #require(target)
        #expect(peripheral.maximumWriteValueLength(for: .withoutResponse) == 182)
        #expect(peripheral.maximumWriteValueLength(for: .withResponse) == 512)
        #expect(peripheral.canSendWriteWithoutResponse)
        var sent = 0
        while peripheral.canSendWriteWithoutResponse && sent < 10 {
            peripheral.writeValue(Data(repeating: UInt8(sent), count: 300), for: characteristic, type: .withoutResponse)
            sent += 1
        }
        #expect(sent == 3)
        settle(loop, log.queue)
        #expect(remote.writes.count == 3)
        #expect(remote.writes.allSatisfy { $0.value.count == 182 && !$0.withResponse })
        #expect(!log.entries.contains("ready"))
        backend.drainWriteQueue(remote.peer)
        settle(loop, log.queue)
        #expect(log.entries.last == "ready")
        #expect(peripheral.canSendWriteWithoutResponse)
        // No callback for writes without response.
        #expect(!log.entries.contains { $0.hasPrefix("wrote") })
    }

    @Test func attErrorsReachTheAppAsCBATTError() throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        let remote = heartRateMonitor()
        remote.writeError = 0x03
        backend.add(remote)
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        var kept: CBPeripheral?
        recorder.onDiscover = { central, peripheral, _, _ in
            kept = peripheral
            peripheral.delegate = recorder
            central.connect(peripheral)
        }
        recorder.onConnect = { $0.discoverServices(nil) }
        recorder.onServices = { $0.discoverCharacteristics(nil, for: $0.services![0]) }
        recorder.onCharacteristics = { peripheral, service in
            peripheral.writeValue(Data([9]), for: service.characteristics![1], type: .withResponse)
        }
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            CBCentralManager(delegate: recorder, queue: log.queue)
        }
        settle(loop, log.queue)
        manager.scanForPeripherals(withServices: nil)
        settle(loop, log.queue)
        #expect(kept != nil)
        #expect(log.entries.last == "wrote 2A38 error")
        let error = try #require(recorder.lastError as? CBATTError)
        #expect(error.code == .writeNotPermitted)
        #expect(CBATTError.errorDomain == "CBATTErrorDomain")
        var matched = false
        do { throw error } catch CBATTError.writeNotPermitted { matched = true } catch {}
        #expect(matched)

        // A dropped link reports an error.
        backend.dropLink(remote.peer)
        settle(loop, log.queue)
        #expect(log.entries.last == "disconnect error")
        #expect((recorder.lastError as? CBError)?.code == .connectionTimeout)
    }

    @Test func descriptorsReadAndCCCDWriteIsMisuse() throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        backend.add(heartRateMonitor())
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        var kept: CBPeripheral?
        var characteristics: [CBCharacteristic] = []
        recorder.onDiscover = { central, peripheral, _, _ in
            kept = peripheral
            peripheral.delegate = recorder
            central.connect(peripheral)
        }
        recorder.onConnect = { $0.discoverServices(nil) }
        recorder.onServices = { $0.discoverCharacteristics(nil, for: $0.services![0]) }
        recorder.onCharacteristics = { peripheral, service in
            characteristics = service.characteristics ?? []
            characteristics.forEach(peripheral.discoverDescriptors(for:))
        }
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            CBCentralManager(delegate: recorder, queue: log.queue)
        }
        settle(loop, log.queue)
        manager.scanForPeripherals(withServices: nil)
        settle(loop, log.queue)
        let peripheral = try #require(kept)
        #expect(log.entries.suffix(2) == ["descriptors 2902", "descriptors 2901"])
        let userDescription = try #require(characteristics[1].descriptors?.first)
        peripheral.readValue(for: userDescription)
        settle(loop, log.queue)
        #expect(log.entries.last == "descriptor value Sensor location")
        let cccd = try #require(characteristics[0].descriptors?.first)
        peripheral.writeValue(Data([1, 0]), for: cccd)
        #expect(manager.misuseLog.last?.contains("must be configured using setNotifyValue:forCharacteristic:") == true)
        peripheral.readRSSI()
        settle(loop, log.queue)
        #expect(log.entries.last == "rssi -50")

        // A delegate with only the deprecated peripheralDidUpdateRSSI(_:error:) still hears of it (as on Apple's
        // systems), with `rssi` already set; one with both gets only didReadRSSI.
        let legacy = LegacyRSSIDelegate()
        peripheral.delegate = legacy
        peripheral.readRSSI()
        settle(loop, log.queue)
        #expect(legacy.calls == ["legacy -50 nil"])
        let both = BothRSSIDelegate()
        peripheral.delegate = both
        peripheral.readRSSI()
        settle(loop, log.queue)
        #expect(both.calls == ["didReadRSSI -50"])
        peripheral.delegate = recorder
    }

    @Test func poweringOffStopsScanAndSilentlyDisconnects() throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        backend.add(heartRateMonitor())
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        var kept: CBPeripheral?
        recorder.onDiscover = { central, peripheral, _, _ in
            kept = peripheral
            central.connect(peripheral)
        }
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            CBCentralManager(delegate: recorder, queue: log.queue)
        }
        settle(loop, log.queue)
        manager.scanForPeripherals(withServices: nil)
        settle(loop, log.queue)
        #expect(kept?.state == .connected)
        backend.setPower(.poweredOff)
        settle(loop, log.queue)
        #expect(manager.isScanning == false)
        #expect(kept?.state == .disconnected)
        #expect(log.entries == ["state poweredOn", "discover HRM", "connect HRM", "state poweredOff"])
    }

    @Test func retrievePeripheralsReturnsTheLiveObjectInRequestOrder() throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        let first = heartRateMonitor(address: 0xC0FFEE_000001)
        let second = heartRateMonitor(address: 0xC0FFEE_000002)
        backend.add(first)
        backend.add(second)
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            CBCentralManager(delegate: recorder, queue: log.queue)
        }
        settle(loop, log.queue)
        let ids = [second, first].map { CBPeerIdentifier.identifier(for: $0.peer.address) }
        let retrieved = manager.retrievePeripherals(withIdentifiers: ids)
        #expect(retrieved.map(\.identifier) == ids)
        #expect(manager.retrievePeripherals(withIdentifiers: [ids[0]]).first === retrieved[0])
        #expect(manager.retrieveConnectedPeripherals(withServices: [CBUUID(string: "180D")]).isEmpty)
    }

    @Test func l2capChannelStreamsCarryBytesBothWays() throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        backend.add(heartRateMonitor())
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        var kept: CBPeripheral?
        var channel: CBL2CAPChannel?
        recorder.onDiscover = { central, peripheral, _, _ in
            kept = peripheral
            peripheral.delegate = recorder
            central.connect(peripheral)
        }
        recorder.onConnect = { $0.openL2CAPChannel(0x0081) }
        recorder.onOpen = { channel = $0 }
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            CBCentralManager(delegate: recorder, queue: log.queue)
        }
        settle(loop, log.queue)
        manager.scanForPeripherals(withServices: nil)
        settle(loop, log.queue)
        #expect(kept != nil)
        let fake = try #require(channel?.backend as? FakeChannel)
        do {
            let open = try #require(channel)
            #expect(open.psm == 0x0081)
            #expect(open.peer.identifier == kept?.identifier)
            let input: InputStream = open.inputStream
            let output: OutputStream = open.outputStream
            input.open()
            output.open()
            let message = Array("hello, channel".utf8)
            #expect(output.write(message, maxLength: message.count) == 8)  // 8 credits
            #expect(!output.hasSpaceAvailable)
            fake.grantCredits(100)
            settle(loop, log.queue)
            #expect(output.hasSpaceAvailable)
            #expect(output.write(Array(message.dropFirst(8)), maxLength: message.count - 8) == message.count - 8)
            #expect(fake.sent == message)
            fake.inject([1, 2, 3])
            fake.inject([4])
            settle(loop, log.queue)
            var buffer = [UInt8](repeating: 0, count: 16)
            #expect(input.hasBytesAvailable)
            #expect(input.read(&buffer, maxLength: 16) == 4)
            #expect(Array(buffer.prefix(4)) == [1, 2, 3, 4])
        }
        channel = nil
        log.queue.sync {}
        #expect(fake.isClosed)
    }
}

/// Implements only the deprecated RSSI callback.
final class LegacyRSSIDelegate: NSObject, CBPeripheralDelegate, @unchecked Sendable {
    var calls: [String] = []
    func peripheralDidUpdateRSSI(_ peripheral: CBPeripheral, error: (any Error)?) {
        calls.append("legacy \(peripheral.rssi.map { "\($0)" } ?? "none") \(error.map { "\($0)" } ?? "nil")")
    }
}

/// Implements both RSSI callbacks: only the current one is called.
final class BothRSSIDelegate: NSObject, CBPeripheralDelegate, @unchecked Sendable {
    var calls: [String] = []
    func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: (any Error)?) {
        calls.append("didReadRSSI \(RSSI)")
    }
    func peripheralDidUpdateRSSI(_ peripheral: CBPeripheral, error: (any Error)?) {
        calls.append("legacy")
    }
}
