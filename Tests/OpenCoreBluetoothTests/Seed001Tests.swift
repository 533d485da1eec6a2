import BluetoothCore
import BluetoothRuntime
import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

/// Runs the loop and the main queue (the seeds use `queue: nil`) until both are idle.
private func settleMain(_ loop: ManualEventLoop) async {
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

private final class Ear: PeripheralBlueEar, CentralBlueEar, @unchecked Sendable {
    private let lock = NSLock()
    private var _events: [String] = []
    var events: [String] { lock.lock(); defer { lock.unlock() }; return _events }
    private func add(_ event: String) { lock.lock(); _events.append(event); lock.unlock() }

    func didStartConfiguration() { add("configuration") }
    func didStartAdvertising() { add("advertising") }
    func didSendData() { add("send") }
    func didReceiveData() { add("receive") }
    func didStartScanningPeripherals() { add("scanning") }
    func didConnectPeripheral(name: String?) { add("connect \(name ?? "")") }
    func didDisconnectPeripheral(name: String?) { add("disconnect \(name ?? "")") }
    func didFailConnection() { add("fail") }
}

private func plist(_ dictionary: [String: String]) throws -> [UInt8] {
    [UInt8](try PropertyListSerialization.data(fromPropertyList: dictionary, format: .binary, options: 0))
}

private func dictionary(_ bytes: [UInt8]) -> [String: String]? {
    (try? PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: nil)) as? [String: String]
}

@Suite struct Seed001Tests {
    /// The iOS peripheral of seed 001 against a fake central: it publishes, advertises, sends {"Hello": "Darkness"}
    /// to the subscriber and answers the central's write of {"Yo": "Lo"}.
    @Test func iOSPeripheralSeedRunsAgainstAFakeCentral() async throws {
        let loop = ManualEventLoop()
        let backend = FakePeripheralBackend(loop: loop, updateQueueCapacity: 4)
        let ear = Ear()
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(peripheral: backend)) {
            PeripheralBluetoothManager(delegate: ear)
        }
        await settleMain(loop)
        #expect(ear.events == ["configuration", "advertising"])
        let advertising = try #require(backend.advertising)
        #expect(advertising.name == "Peripheral - iOS")
        #expect(advertising.uuids.map(\.uuidString) == ["0CDBE648-EED0-11E6-BC64-92361F002671"])

        let central = CBBackendPeer(address: BluetoothAddress(0xC1_0000_0001, type: .random))
        let characteristic = try #require(backend.characteristicID(try BluetoothUUID(string: "199ab74c-eed0-11e6-bc64-92361f002672")))
        backend.connect(central, mtu: 185)
        backend.subscribe(central, to: characteristic)
        await settleMain(loop)
        backend.drainUpdates()
        await settleMain(loop)
        #expect(backend.delivered(to: central).map(dictionary) == [["Hello": "Darkness"]])

        let request = backend.write(central, [CBBackendWrite(characteristicID: characteristic, offset: 0, value: try plist(["Yo": "Lo"]))])
        await settleMain(loop)
        #expect(backend.responses(request)?.result == 0)
        #expect(ear.events == ["configuration", "advertising", "send", "receive"])
        #expect(manager.peripheralManager?.misuseLog == [])
    }

    /// The macOS central of seed 001 against a fake peripheral: scan for the service, connect, discover, subscribe,
    /// read {"Hello": "Darkness"} from the notification, write {"Yo": "Lo"}, disconnect.
    @Test func macOSCentralSeedRunsAgainstAFakePeripheral() async throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        let serviceUUID = try BluetoothUUID(string: "0cdbe648-eed0-11e6-bc64-92361f002671")
        let characteristicUUID = try BluetoothUUID(string: "199ab74c-eed0-11e6-bc64-92361f002672")
        let remote = FakeRemotePeripheral(address: 0xC2_0000_0001, name: "Peripheral - iOS", services: [
            FakeService(uuid: serviceUUID, characteristics: [
                FakeCharacteristic(uuid: characteristicUUID, properties: [.read, .notify, .writeWithoutResponse, .write]),
            ]),
        ], mtu: 185)
        backend.add(FakeRemotePeripheral(address: 0xC2_0000_0002, name: "Somebody else", services: []))
        backend.add(remote)
        let ear = Ear()
        let manager = CentralBluetoothManager(delegate: ear)
        CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            manager.scan()
        }
        await settleMain(loop)
        #expect(ear.events == ["configuration", "scanning", "connect Peripheral - iOS"])
        let handle = try #require(remote.valueHandle(of: characteristicUUID))
        #expect(remote.subscribed == [handle])

        backend.notify(remote, handle: handle, value: try plist(["Hello": "Darkness"]))
        await settleMain(loop)
        #expect(remote.writes.map { dictionary($0.value) } == [["Yo": "Lo"]])
        #expect(remote.writes.first?.withResponse == true)
        #expect(ear.events == ["configuration", "scanning", "connect Peripheral - iOS", "receive", "send", "disconnect Peripheral - iOS"])
        #expect(manager.discoveredPeripheral?.state == .disconnected)
        #expect(manager.centralManager?.isScanning == false)
        #expect(manager.centralManager?.misuseLog == [])
    }
}
