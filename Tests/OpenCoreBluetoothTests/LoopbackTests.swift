import BluetoothCore
import BluetoothRuntime
import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

private func settleMainQueue(_ loop: ManualEventLoop) async {
    var idle = 0
    for _ in 0..<10_000 {
        let ran = loop.run()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.main.async { continuation.resume() }
        }
        if ran == 0 && !loop.hasPendingWork {
            idle += 1
            if idle >= 3 { return }
        } else {
            idle = 0
        }
    }
}

private final class Events: PeripheralBlueEar, CentralBlueEar, @unchecked Sendable {
    let role: String
    let lock = NSLock()
    var list: [String] = []
    init(role: String) { self.role = role }
    private func add(_ event: String) { lock.lock(); list.append(event); lock.unlock() }
    var events: [String] { lock.lock(); defer { lock.unlock() }; return list }
    func didStartConfiguration() { add("configuration") }
    func didStartAdvertising() { add("advertising") }
    func didSendData() { add("send") }
    func didReceiveData() { add("receive") }
    func didStartScanningPeripherals() { add("scanning") }
    func didConnectPeripheral(name: String?) { add("connect \(name ?? "")") }
    func didDisconnectPeripheral(name: String?) { add("disconnect \(name ?? "")") }
    func didFailConnection() { add("fail") }
}

@Suite struct LoopbackTests {
    /// Seed 001's two BluetoothManagers against each other through both façades (main queue, as in the seed): the
    /// central receives {"Hello": "Darkness"} by notification and writes {"Yo": "Lo"}, which the peripheral receives.
    @Test func seed001ManagersTalkToEachOther() async throws {
        let loop = ManualEventLoop()
        let air = LoopbackAir(loop: loop, mtu: 185)
        let peripheralEvents = Events(role: "peripheral")
        let centralEvents = Events(role: "central")
        let peripheralApp = CBBackendRegistry.$taskProvider.withValue(air.provider) {
            PeripheralBluetoothManager(delegate: peripheralEvents)
        }
        await settleMainQueue(loop)
        let centralApp = CentralBluetoothManager(delegate: centralEvents)
        CBBackendRegistry.$taskProvider.withValue(air.provider) { centralApp.scan() }
        await settleMainQueue(loop)
        #expect(peripheralEvents.events == ["configuration", "advertising", "send", "receive"])
        #expect(centralEvents.events == ["configuration", "scanning", "connect Peripheral - iOS", "receive", "send", "disconnect Peripheral - iOS"])
        #expect(peripheralApp.peripheralManager?.misuseLog == [])
        #expect(centralApp.centralManager?.misuseLog == [])
        #expect(peripheralApp.characterisctic?.subscribedCentrals?.isEmpty == true)
    }

    /// A long dynamic value read through both façades arrives whole; the peripheral's app saw each Read Blob offset.
    /// A long write arrives as one batch of prepared chunks, answered once.
    @Test func longReadAndLongWriteThroughBothFacades() async throws {
        let loop = ManualEventLoop()
        let air = LoopbackAir(loop: loop, mtu: 23)
        let value = Data((0..<100).map { UInt8($0) })
        let peripheralLog = CallLog(label: "peripheral")
        let centralLog = CallLog(label: "central")
        let peripheralRecorder = PeripheralRecorder(log: peripheralLog)
        let centralRecorder = CentralRecorder(log: centralLog)
        var written: [CBATTRequest] = []
        peripheralRecorder.onRead = { manager, request in
            request.value = value.subdata(in: request.offset..<value.count)
            manager.respond(to: request, withResult: .success)
        }
        peripheralRecorder.onWrite = { manager, requests in
            written = requests
            manager.respond(to: requests[0], withResult: .success)
        }
        let characteristic = CBMutableCharacteristic(type: CBUUID(string: "FFF1"), properties: [.read, .write], value: nil, permissions: [.readable, .writeable])
        let service = CBMutableService(type: CBUUID(string: "FFF0"), primary: true)
        service.characteristics = [characteristic]
        peripheralRecorder.onState = { manager in
            manager.add(service)
            manager.startAdvertising([CBAdvertisementDataLocalNameKey: "Loop", CBAdvertisementDataServiceUUIDsKey: [CBUUID(string: "FFF0")]])
        }
        var kept: CBPeripheral?
        var remoteCharacteristic: CBCharacteristic?
        centralRecorder.onState = { $0.scanForPeripherals(withServices: [CBUUID(string: "FFF0")]) }
        centralRecorder.onDiscover = { central, peripheral, _, _ in
            kept = peripheral
            peripheral.delegate = centralRecorder
            central.stopScan()
            central.connect(peripheral)
        }
        centralRecorder.onConnect = { $0.discoverServices(nil) }
        centralRecorder.onServices = { $0.discoverCharacteristics(nil, for: $0.services![0]) }
        centralRecorder.onCharacteristics = { peripheral, service in
            remoteCharacteristic = service.characteristics?.first
            peripheral.readValue(for: service.characteristics![0])
        }
        let (peripheralManager, centralManager) = CBBackendRegistry.$taskProvider.withValue(air.provider) {
            (CBPeripheralManager(delegate: peripheralRecorder, queue: peripheralLog.queue),
             CBCentralManager(delegate: centralRecorder, queue: centralLog.queue))
        }
        for _ in 0..<50 {
            loop.run()
            peripheralLog.queue.sync {}
            centralLog.queue.sync {}
        }
        #expect(kept?.state == .connected)
        #expect(peripheralLog.entries.filter { $0.hasPrefix("read") } == ["read 0", "read 22", "read 44", "read 66", "read 88"])
        #expect(remoteCharacteristic?.value == value)
        #expect(centralLog.entries.last == "value FFF1 \(Array(value))")
        #expect(peripheralLog.offQueue.isEmpty && centralLog.offQueue.isEmpty)

        let long = Data(repeating: 0xAB, count: 50)
        kept?.writeValue(long, for: try #require(remoteCharacteristic), type: .withResponse)
        for _ in 0..<20 {
            loop.run()
            peripheralLog.queue.sync {}
            centralLog.queue.sync {}
        }
        #expect(written.map(\.offset) == [0, 18, 36])
        #expect(written.reduce(Data()) { $0 + ($1.value ?? Data()) } == long)
        #expect(centralLog.entries.last == "wrote FFF1")
        #expect(peripheralManager.pendingBatchCount == 0)
        #expect(peripheralManager.misuseLog.isEmpty && centralManager.misuseLog.isEmpty)
    }
}
