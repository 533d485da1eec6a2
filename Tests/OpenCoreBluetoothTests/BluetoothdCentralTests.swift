import BlueZ
import BlueZTestSupport
import BluetoothCore
import BluetoothRuntime
import DBus
import GATT
import Foundation
import TestSupport
import Testing
@testable import OpenCoreBluetooth
import StackLauncher

private nonisolated(unsafe) let fakeServiceUUID = CBUUID(string: FakeBluetoothd.serviceUUID)
private nonisolated(unsafe) let fakeCharacteristicUUID = CBUUID(string: FakeBluetoothd.standardCharacteristics[0].uuid)

/// CoreBluetooth's central on bluetoothd's engine (StackLauncher's `BluetoothdStack`, the same backend as on our
/// host), against a bluetoothd stand-in on a real dbus-daemon: scan, connect, discover, read, notify, write,
/// disconnect, each mapped to the D-Bus calls BlueZ documents; and the BlueZ central's own agent and flow control.
@Suite(.timeLimit(.minutes(3)))
struct BluetoothdCentralTests {
    @Test func aCentralOnBluetoothd() async throws {
        guard let (bus, bluetoothd) = try await startBluetoothd() else { return }
        defer { bluetoothd.connection.close(); Task { await bus.stop() } }
        let address = bus.address
        let provider = CBBackendProvider(makeCentral: {
            EngineCentralBackend(launching: { _ throws(StackLaunchError) in try await BluetoothdStack.open(adapter: "hci0", busAddress: address) })
        }, makePeripheral: { nil })
        let log = CallLog(label: "bluez.central")
        let app = CentralRecorder(log: log)
        let kept = LockedBox<CBPeripheral?>(nil)
        app.onState = { central in if central.state == .poweredOn { central.scanForPeripherals(withServices: [fakeServiceUUID]) } }
        app.onDiscover = { central, peripheral, data, _ in
            guard kept.value == nil else { return }
            kept.value = peripheral
            central.stopScan()
            central.connect(peripheral)
        }
        app.onConnect = { peripheral in
            peripheral.delegate = app
            peripheral.discoverServices([fakeServiceUUID])
        }
        app.onServices = { peripheral in
            if let service = peripheral.services?.first { peripheral.discoverCharacteristics(nil, for: service) }
        }
        let writeLength = LockedBox<Int?>(nil)
        app.onCharacteristics = { peripheral, service in
            guard let characteristic = service.characteristics?.first else { return }
            // bluetoothd's MTU property (185), known once the services were resolved.
            writeLength.value = peripheral.maximumWriteValueLength(for: .withoutResponse)
            peripheral.readValue(for: characteristic)
        }
        app.onValue = { peripheral, characteristic, _ in
            if characteristic.value == Data([1, 2, 3]) { peripheral.setNotifyValue(true, for: characteristic) }
            if characteristic.value == Data([9]) { peripheral.writeValue(Data([7]), for: characteristic, type: .withResponse) }
        }
        let managerBox = LockedBox<CBCentralManager?>(nil)
        app.onWrite = { peripheral, _, _ in managerBox.value?.cancelPeripheralConnection(peripheral) }
        let manager = CBBackendRegistry.$taskProvider.withValue(provider) { CBCentralManager(delegate: app, queue: log.queue) }
        managerBox.value = manager
        try await waitFor("the exchange through bluetoothd", on: log.queue, until: { log.entries.contains("disconnect nil") },
                          seen: { "\(log.entries); bluetoothd saw \(bluetoothd.calls)" })
        let characteristicLine = "characteristics \(fakeCharacteristicUUID.uuidString),\(FakeBluetoothd.standardCharacteristics[1].uuid.uppercased())"
        #expect(log.entries.contains("discover Fake"))
        #expect(log.entries.contains(characteristicLine))
        #expect(log.entries.contains("value \(fakeCharacteristicUUID.uuidString) [1, 2, 3]"))
        #expect(log.entries.contains("value \(fakeCharacteristicUUID.uuidString) [9]"))
        #expect(log.entries.contains("wrote \(fakeCharacteristicUUID.uuidString)"))
        let calls = bluetoothd.calls
        // The engine scans for every device (CoreBluetooth's manager filters by service, as on our host).
        #expect(calls.first == #"SetDiscoveryFilter ["DuplicateData": <false>, "Transport": <"le">]"#)
        #expect(calls.contains("StartDiscovery ") && calls.contains("StopDiscovery ") && calls.contains("Connect "))
        #expect(calls.contains("ReadValue []") && calls.contains("StartNotify "))
        #expect(calls.contains(#"WriteValue [7] ["type": <"request">]"#))
        #expect(calls.last == "Disconnect ")
        #expect(writeLength.value == 182)
        withExtendedLifetime(manager) {}
    }

    /// `OCB_BLUEZ_AGENT`: our agent becomes bluetoothd's default, confirms a Numeric Comparison (printed) and refuses
    /// a passkey to type when none is given.
    @Test func anAgentOfOursAnswersBluetoothdsPrompts() async throws {
        guard let (bus, bluetoothd) = try await startBluetoothd() else { return }
        defer { bluetoothd.connection.close(); Task { await bus.stop() } }
        let lines = LockedValue<[String]>([])
        let backend = BlueZCentral(adapter: "hci0", busAddress: bus.address, report: { _ in },
                                   pairingAgent: BlueZPairingAgent(capability: .displayYesNo, passkey: nil),
                                   prompt: { line in lines.withLock { $0.append(line) } })
        let powered = LockedBox(false)
        backend.start { event in if case .stateChanged(.poweredOn) = event { powered.value = true } }
        defer { backend.shutdown() }
        let ready = await poll(within: .seconds(60)) { powered.value }
        #expect(ready)
        #expect(bluetoothd.agentCapability == "DisplayYesNo")
        #expect(bluetoothd.calls.contains { $0.hasPrefix("RequestDefaultAgent") }, "\(bluetoothd.calls)")
        let device = DBusValue.objectPath(FakeBluetoothd.device)
        let confirmed = try await bluetoothd.askAgent("RequestConfirmation", [device, .uint32(123_456)])
        #expect(confirmed.kind == .methodReturn)
        #expect(lines.load().contains("pairing with 0A:1B:00:00:00:77: numeric comparison 123456 (confirmed)"), "\(lines.load())")
        await #expect(throws: DBusError.self) { _ = try await bluetoothd.askAgent("RequestPasskey", [device]) }
        #expect(lines.load().contains { $0.contains("set OCB_BLUEZ_PASSKEY") }, "\(lines.load())")
    }

    @Test func theAgentComesFromTheEnvironment() {
        let agent = BlueZPairingAgent.fromEnvironment(["OCB_BLUEZ_AGENT": "keyboarddisplay", "OCB_BLUEZ_PASSKEY": "012345"])
        #expect(agent?.capability == .keyboardDisplay)
        #expect(agent?.passkey == 12_345)
        #expect(BlueZPairingAgent.fromEnvironment([:]) == nil)
        #expect(BlueZPairingAgent.fromEnvironment(["OCB_BLUEZ_AGENT": "Telepathy"]) == nil)
        #expect(BlueZPairingAgent.fromEnvironment(["OCB_BLUEZ_AGENT": "NoInputNoOutput", "OCB_BLUEZ_PASSKEY": "1234567"])?.passkey == nil)
    }

    /// Write Commands: at most `commandWindow` unanswered by bluetoothd; the one that fills the window says "no room",
    /// and readiness comes back once bluetoothd answered.
    @Test func writeCommandsWaitForBluetoothd() async throws {
        guard let (bus, bluetoothd) = try await startBluetoothd() else { return }
        defer { bluetoothd.connection.close(); Task { await bus.stop() } }
        let events = LockedValue<[String]>([])
        let backend = BlueZCentral(adapter: "hci0", busAddress: bus.address, report: { _ in }, pairingAgent: nil)
        backend.start { event in
            let text: String
            switch event {
            case .stateChanged(let state): text = "state \(state)"
            case .advertisement: text = "advertisement"
            case .connected: text = "connected"
            case .readyToSendWriteWithoutResponse: text = "ready"
            default: return
            }
            events.withLock { $0.append(text) }
        }
        defer { backend.shutdown() }
        #expect(await poll(within: .seconds(60)) { events.load().contains("state \(BlueZAdapterState.poweredOn)") })
        backend.startScan(serviceUUIDs: nil, allowDuplicates: false)
        #expect(await poll(within: .seconds(60)) { events.load().contains("advertisement") })
        backend.stopScan()
        let peer = try BluetoothAddress(string: FakeBluetoothd.deviceAddress, type: .public)
        backend.connect(peer)
        #expect(await poll(within: .seconds(60)) { events.load().contains("connected") })
        let services = LockedValue<[BlueZRemoteService]?>(nil)
        backend.discoverServices(peer, uuids: nil) { services.store(try? $0.get()) }
        #expect(await poll(within: .seconds(60)) { services.load() != nil })
        let service = try #require(services.load()?.first)
        let characteristics = LockedValue<[GATTDiscoveredCharacteristic]?>(nil)
        backend.discoverCharacteristics(peer, in: service, uuids: nil) { characteristics.store(try? $0.get()) }
        #expect(await poll(within: .seconds(60)) { characteristics.load() != nil })
        let characteristic = try #require(characteristics.load()?.first)

        bluetoothd.holdCommandWrites()
        var answers: [Bool] = []
        for index in 0..<BlueZCentral.commandWindow {
            answers.append(backend.writeWithoutResponse(peer, handle: characteristic.valueHandle, value: [UInt8(index)]))
        }
        #expect(answers == Array(repeating: true, count: BlueZCentral.commandWindow - 1) + [false])
        #expect(await poll(within: .seconds(60)) { bluetoothd.heldCommandWrites == BlueZCentral.commandWindow })
        #expect(!events.load().contains("ready"))
        bluetoothd.releaseCommandWrites()
        #expect(await poll(within: .seconds(60)) { events.load().contains("ready") })
        #expect(events.load().filter { $0 == "ready" }.count == 1)
        #expect(bluetoothd.value(of: 0x0011) == [UInt8(BlueZCentral.commandWindow - 1)])
    }
}
