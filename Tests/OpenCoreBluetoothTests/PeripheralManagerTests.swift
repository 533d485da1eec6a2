import BluetoothCore
import BluetoothRuntime
import Foundation
import Testing
@testable import OpenCoreBluetooth

private let central1 = CBBackendPeer(address: BluetoothAddress(0xCE_0000_0001, type: .random))
private let central2 = CBBackendPeer(address: BluetoothAddress(0xCE_0000_0002, type: .random))

/// A manager with one published service: a dynamic read/write/notify characteristic and a cached one.
private struct Fixture {
    let loop = ManualEventLoop()
    let backend: FakePeripheralBackend
    let log = CallLog()
    let recorder: PeripheralRecorder
    let manager: CBPeripheralManager
    let dynamic = CBMutableCharacteristic(type: CBUUID(string: "12345678-1234-1234-1234-1234567890AB"),
                                          properties: [.read, .write, .notify, .writeWithoutResponse], value: nil,
                                          permissions: [.readable, .writeable])
    let cached = CBMutableCharacteristic(type: CBUUID(string: "2A29"), properties: [.read], value: Data("OpenCoreBluetooth".utf8),
                                         permissions: [.readable])
    let service = CBMutableService(type: CBUUID(string: "180A"), primary: true)

    init(updateQueueCapacity: Int = 2) {
        backend = FakePeripheralBackend(loop: loop, updateQueueCapacity: updateQueueCapacity)
        recorder = PeripheralRecorder(log: log)
        let backend = self.backend
        let recorder = self.recorder
        let log = self.log
        manager = CBBackendRegistry.$taskProvider.withValue(provider(peripheral: backend)) {
            CBPeripheralManager(delegate: recorder, queue: log.queue, options: nil)
        }
        dynamic.descriptors = [CBMutableDescriptor(type: CBUUID(string: CBUUIDCharacteristicUserDescriptionString), value: "Dynamic")]
        service.characteristics = [dynamic, cached]
    }

    func publish() {
        settle(loop, log.queue)
        manager.add(service)
        settle(loop, log.queue)
    }

    var dynamicID: Int { dynamic.localID ?? -1 }
}

@Suite struct PeripheralManagerTests {
    @Test func stateIsAsynchronousThenServiceIsPublishedAndAdvertised() throws {
        let fixture = Fixture()
        #expect(fixture.log.entries.isEmpty)
        #expect(fixture.manager.state == .unknown)
        fixture.publish()
        #expect(fixture.log.entries == ["state poweredOn", "added 180A"])
        let definition = try #require(fixture.backend.state.withLock { $0.services.values.first })
        #expect(definition.uuid == BluetoothUUID(0x180A))
        #expect(definition.characteristics.map(\.staticValue) == [nil, Array("OpenCoreBluetooth".utf8)])
        #expect(definition.characteristics[0].descriptors == [CBBackendLocalDescriptor(uuid: BluetoothUUID(0x2901), value: Array("Dynamic".utf8))])
        #expect(fixture.dynamic.service === fixture.service)

        let uuid: CBUUID? = fixture.service.uuid
        fixture.manager.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [uuid], CBAdvertisementDataLocalNameKey: "Peripheral - iOS"])
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.log.entries.last == "advertising")
        #expect(fixture.manager.isAdvertising)
        let advertising = try #require(fixture.backend.advertising)
        #expect(advertising.name == "Peripheral - iOS")
        #expect(advertising.uuids == [BluetoothUUID(0x180A)])
        fixture.manager.startAdvertising(nil)
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.log.entries.last == "advertising error")
        #expect((fixture.recorder.lastError as? CBError)?.code == .alreadyAdvertising)
        fixture.manager.stopAdvertising()
        #expect(!fixture.manager.isAdvertising)
        #expect(fixture.backend.advertising == nil)
        #expect(fixture.log.offQueue.isEmpty)
    }

    @Test func commandsBeforePoweredOnAreMisuse() {
        let loop = ManualEventLoop()
        let backend = FakePeripheralBackend(loop: loop, initialState: .poweredOff)
        let log = CallLog()
        let recorder = PeripheralRecorder(log: log)
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(peripheral: backend)) {
            CBPeripheralManager(delegate: recorder, queue: log.queue)
        }
        manager.add(CBMutableService(type: CBUUID(string: "180D"), primary: true))
        manager.startAdvertising([CBAdvertisementDataLocalNameKey: "x"])
        settle(loop, log.queue)
        #expect(manager.updateValue(Data([1]), for: CBMutableCharacteristic(type: CBUUID(string: "2A37"), properties: [.notify], value: nil, permissions: []), onSubscribedCentrals: nil) == false)
        #expect(log.entries == ["state poweredOff"])
        #expect(backend.state.withLock { $0.services.isEmpty && $0.advertising == nil })
        #expect(manager.misuseLog.count == 3)
        #expect(manager.misuseLog.allSatisfy { $0.contains("API MISUSE: <CBPeripheralManager: 0x") })
    }

    @Test func cachedValueIsServedWithoutACallback() throws {
        let fixture = Fixture()
        fixture.publish()
        let cachedID = try #require(fixture.cached.localID)
        let index = fixture.backend.read(central1, cachedID)
        settle(fixture.loop, fixture.log.queue)
        let read = try #require(fixture.backend.longRead(index))
        #expect(read.done)
        #expect(read.collected == Array("OpenCoreBluetooth".utf8))
        #expect(fixture.backend.staticServes == 1)
        #expect(!fixture.log.entries.contains { $0.hasPrefix("read") })
    }

    @Test func cachedValueMustBeReadOnly() {
        let fixture = Fixture()
        settle(fixture.loop, fixture.log.queue)
        let bad = CBMutableService(type: CBUUID(string: "FFF0"), primary: true)
        bad.characteristics = [CBMutableCharacteristic(type: CBUUID(string: "FFF1"), properties: [.read, .write], value: Data([1]), permissions: [.readable])]
        fixture.manager.add(bad)
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.log.entries.last == "added FFF0 error")
        #expect((fixture.recorder.lastError as? CBError)?.code == .invalidParameters)
        #expect(fixture.manager.misuseLog.count == 1)
        #expect(fixture.backend.state.withLock { $0.services.isEmpty })
    }

    @Test func longReadsArriveWithGrowingOffsets() throws {
        let value = Array(0..<50).map(UInt8.init)
        for (total, offsets) in [(50, [0, 22, 44]), (44, [0, 22, 44]), (10, [0])] {
            let fixture = Fixture()
            let payload = Data(value.prefix(total))
            fixture.recorder.onRead = { manager, request in
                guard request.offset <= payload.count else {
                    manager.respond(to: request, withResult: .invalidOffset)
                    return
                }
                request.value = payload.subdata(in: request.offset..<payload.count)
                manager.respond(to: request, withResult: .success)
            }
            fixture.publish()
            let index = fixture.backend.read(central1, fixture.dynamicID)
            settle(fixture.loop, fixture.log.queue)
            let read = try #require(fixture.backend.longRead(index))
            #expect(read.done)
            #expect(read.offsets == offsets)
            #expect(read.collected == Array(payload))
            #expect(fixture.log.entries.filter { $0.hasPrefix("read") } == offsets.map { "read \($0)" })
            #expect(fixture.manager.pendingBatchCount == 0)
        }
    }

    @Test func writeBatchTakesExactlyOneResponse() throws {
        let fixture = Fixture()
        var received: [CBATTRequest] = []
        fixture.recorder.onWrite = { manager, requests in
            received = requests
            manager.respond(to: requests[0], withResult: .success)
            manager.respond(to: requests[0], withResult: .success)
        }
        fixture.publish()
        let id = fixture.dynamicID
        let request = fixture.backend.write(central1, [
            CBBackendWrite(characteristicID: id, offset: 0, value: Array(repeating: 1, count: 18)),
            CBBackendWrite(characteristicID: id, offset: 18, value: Array(repeating: 2, count: 5)),
        ])
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.log.entries.last == "write 0:18,18:5")
        #expect(received.map(\.offset) == [0, 18])
        #expect(received.allSatisfy { $0.characteristic === fixture.dynamic })
        #expect(received[0].central === received[1].central)
        #expect(received[0].central.identifier == CBPeerIdentifier.identifier(for: central1.address))
        #expect(fixture.backend.responseCount(request) == 1)
        #expect(fixture.backend.responses(request)?.result == 0)
        #expect(fixture.manager.misuseLog.count == 1)
        #expect(fixture.manager.misuseLog[0].contains("already answered"))
        #expect(fixture.manager.pendingBatchCount == 0)
    }

    @Test func errorResultIsSentForTheBatchAndCommandsNeedNoResponse() throws {
        let fixture = Fixture()
        fixture.recorder.onWrite = { manager, requests in
            manager.respond(to: requests[0], withResult: requests.count > 1 ? .invalidAttributeValueLength : .success)
        }
        fixture.publish()
        let id = fixture.dynamicID
        let failing = fixture.backend.write(central1, [
            CBBackendWrite(characteristicID: id, offset: 0, value: [1]), CBBackendWrite(characteristicID: id, offset: 1, value: [2]),
        ])
        let command = fixture.backend.write(central1, [CBBackendWrite(characteristicID: id, offset: 0, value: [3])], responseRequired: false)
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.backend.responses(failing)?.result == 0x0D)
        #expect(fixture.backend.responseCount(command) == 0)
        #expect(fixture.manager.pendingBatchCount == 0)
        #expect(fixture.manager.misuseLog.isEmpty)
    }

    @Test func updateValueReturnsFalseWhenFullThenReadyFollows() throws {
        let fixture = Fixture(updateQueueCapacity: 2)
        var subscriber: CBCentral?
        fixture.recorder.onSubscribe = { _, central, _ in subscriber = central }
        fixture.publish()
        fixture.backend.connect(central1, mtu: 30)
        fixture.backend.subscribe(central1, to: fixture.dynamicID)
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.log.entries.last == "subscribed 12345678-1234-1234-1234-1234567890AB")
        let central = try #require(subscriber)
        #expect(central.maximumUpdateValueLength == 27)
        #expect(fixture.dynamic.subscribedCentrals?.count == 1)
        #expect(fixture.dynamic.isNotifying)

        let long = Data(repeating: 7, count: 40)
        #expect(fixture.manager.updateValue(long, for: fixture.dynamic, onSubscribedCentrals: nil))
        #expect(fixture.manager.updateValue(Data([2]), for: fixture.dynamic, onSubscribedCentrals: [central]))
        #expect(!fixture.manager.updateValue(Data([3]), for: fixture.dynamic, onSubscribedCentrals: nil))
        settle(fixture.loop, fixture.log.queue)
        #expect(!fixture.log.entries.contains("ready"))
        fixture.backend.drainUpdates()
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.log.entries.filter { $0 == "ready" }.count == 1)
        #expect(fixture.backend.delivered(to: central1) == [Array(repeating: 7, count: 27), [2]])
        // No false return, no ready callback.
        #expect(fixture.manager.updateValue(Data([4]), for: fixture.dynamic, onSubscribedCentrals: nil))
        fixture.backend.drainUpdates()
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.log.entries.filter { $0 == "ready" }.count == 1)
        // A central that is not subscribed is skipped.
        fixture.backend.connect(central2)
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.manager.updateValue(Data([5]), for: fixture.dynamic, onSubscribedCentrals: []))
        fixture.backend.drainUpdates()
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.backend.delivered(to: central2).isEmpty)
    }

    @Test func disconnectionUnsubscribes() throws {
        let fixture = Fixture()
        fixture.publish()
        fixture.backend.connect(central1)
        fixture.backend.subscribe(central1, to: fixture.dynamicID)
        fixture.backend.disconnect(central1)
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.log.entries.suffix(2) == ["subscribed 12345678-1234-1234-1234-1234567890AB", "unsubscribed 12345678-1234-1234-1234-1234567890AB"])
        #expect(fixture.dynamic.subscribedCentrals?.isEmpty == true)
        #expect(!fixture.dynamic.isNotifying)
    }

    @Test func l2capPublishAndIncomingChannel() throws {
        let fixture = Fixture()
        var channel: CBL2CAPChannel?
        fixture.recorder.onOpen = { channel = $0 }
        settle(fixture.loop, fixture.log.queue)
        fixture.manager.publishL2CAPChannel(withEncryption: false)
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.log.entries.last == "published 128")
        let fake = fixture.backend.openChannel(from: central1, psm: 0x80)
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.log.entries.last == "open 128")
        let open = try #require(channel)
        #expect(open.peer is CBCentral)
        open.inputStream.open()
        fake.inject([9, 8])
        settle(fixture.loop, fixture.log.queue)
        var buffer = [UInt8](repeating: 0, count: 4)
        #expect(open.inputStream.read(&buffer, maxLength: 4) == 2)
        #expect(buffer.prefix(2) == [9, 8])
    }
}

@Suite struct PeripheralManagerEdgeTests {
    @Test func removedServiceIsGoneAndPowerLossClearsSubscriptions() throws {
        let fixture = Fixture()
        fixture.publish()
        fixture.backend.connect(central1)
        fixture.backend.subscribe(central1, to: fixture.dynamicID)
        fixture.manager.startAdvertising([CBAdvertisementDataLocalNameKey: "x"])
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.dynamic.subscribedCentrals?.count == 1)
        fixture.backend.setPower(.poweredOff)
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.log.entries.last == "state poweredOff")
        #expect(!fixture.manager.isAdvertising)
        #expect(fixture.dynamic.subscribedCentrals?.isEmpty == true)
        // Still published at poweredOff (only below it is the database cleared).
        #expect(fixture.dynamic.localID != nil)
        fixture.backend.setPower(.poweredOn)
        settle(fixture.loop, fixture.log.queue)
        fixture.manager.remove(fixture.service)
        #expect(fixture.dynamic.localID == nil)
        #expect(fixture.backend.state.withLock { $0.services.isEmpty })
        // An update for a characteristic that is no longer published sends nothing.
        #expect(fixture.manager.updateValue(Data([1]), for: fixture.dynamic, onSubscribedCentrals: nil) == false)
        #expect(fixture.loop.pendingWorkDescription == "nothing")
    }

    @Test func unsupportedDescriptorIsRefused() {
        let fixture = Fixture()
        settle(fixture.loop, fixture.log.queue)
        let service = CBMutableService(type: CBUUID(string: "FFF0"), primary: true)
        let characteristic = CBMutableCharacteristic(type: CBUUID(string: "FFF1"), properties: [.notify], value: nil, permissions: [])
        characteristic.descriptors = [CBMutableDescriptor(type: CBUUID(string: CBUUIDClientCharacteristicConfigurationString), value: NSNumber(value: 1))]
        service.characteristics = [characteristic]
        fixture.manager.add(service)
        settle(fixture.loop, fixture.log.queue)
        #expect(fixture.log.entries.last == "added FFF0 error")
        #expect(fixture.manager.misuseLog.first?.contains("User Description") == true)
    }

    @Test func readAnsweredWithAnErrorEndsTheRead() throws {
        let fixture = Fixture()
        fixture.recorder.onRead = { manager, request in manager.respond(to: request, withResult: .insufficientAuthorization) }
        fixture.publish()
        let index = fixture.backend.read(central1, fixture.dynamicID)
        settle(fixture.loop, fixture.log.queue)
        let read = try #require(fixture.backend.longRead(index))
        #expect(read.done)
        #expect(read.error == 0x08)
        #expect(read.offsets == [0])
    }
}
