import BlueZ
import BlueZTestSupport
import BluetoothCore
import BluetoothEngine
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
        let engine = BlueZEngine(adapter: "hci0", busAddress: bus.address,
                                 pairingAgent: BlueZPairingAgent(capability: .displayYesNo, passkey: nil),
                                 prompt: { line in lines.withLock { $0.append(line) } })
        defer { engine.shutdown() }
        try await Self.start(engine)
        #expect(bluetoothd.agentCapability == "DisplayYesNo")
        #expect(bluetoothd.calls.contains { $0.hasPrefix("RequestDefaultAgent") }, "\(bluetoothd.calls)")
        let device = DBusValue.objectPath(FakeBluetoothd.device)
        let confirmed = try await bluetoothd.askAgent("RequestConfirmation", [device, .uint32(123_456)])
        #expect(confirmed.kind == .methodReturn)
        #expect(lines.load().contains("pairing with 0A:1B:00:00:00:77: numeric comparison 123456 (confirmed)"), "\(lines.load())")
        await #expect(throws: DBusError.self) { _ = try await bluetoothd.askAgent("RequestPasskey", [device]) }
        #expect(lines.load().contains { $0.contains("set OCB_BLUEZ_PASSKEY") }, "\(lines.load())")
    }

    /// Starts `engine` (at most 60 s).
    static func start(_ engine: BlueZEngine) async throws {
        let started = LockedValue<Result<ControllerInfo, HostError>?>(nil)
        engine.start { started.store($0) }
        #expect(await poll(within: .seconds(60)) { started.load() != nil })
        _ = try #require(started.load()).get()
    }

    @Test func theAgentComesFromTheEnvironment() {
        let agent = BlueZPairingAgent.fromEnvironment(["OCB_BLUEZ_AGENT": "keyboarddisplay", "OCB_BLUEZ_PASSKEY": "012345"])
        #expect(agent?.capability == .keyboardDisplay)
        #expect(agent?.passkey == 12_345)
        #expect(BlueZPairingAgent.fromEnvironment([:]) == nil)
        #expect(BlueZPairingAgent.fromEnvironment(["OCB_BLUEZ_AGENT": "Telepathy"]) == nil)
        #expect(BlueZPairingAgent.fromEnvironment(["OCB_BLUEZ_AGENT": "NoInputNoOutput", "OCB_BLUEZ_PASSKEY": "1234567"])?.passkey == nil)
    }

    /// Write Commands: at most `commandWindow` unanswered by bluetoothd; the one that fills the window leaves the link
    /// not ready, and readiness comes back (once) when bluetoothd answered.
    @Test func writeCommandsWaitForBluetoothd() async throws {
        guard let (bus, bluetoothd) = try await startBluetoothd() else { return }
        defer { bluetoothd.connection.close(); Task { await bus.stop() } }
        let events = LockedValue<[String]>([])
        let engine = BlueZEngine(adapter: "hci0", busAddress: bus.address, pairingAgent: nil)
        engine.addEventHandler { event in
            let text: String
            switch event {
            case .advertisingReport: text = "advertisement"
            case .readyToSend: text = "ready"
            default: return
            }
            events.withLock { $0.append(text) }
        }
        defer { engine.shutdown() }
        try await Self.start(engine)
        engine.startScanning { _ in }
        #expect(await poll(within: .seconds(60)) { events.load().contains("advertisement") })
        engine.stopScanning()
        let peer = try BluetoothAddress(string: FakeBluetoothd.deviceAddress, type: .public)
        let connected = LockedValue<Result<Connection, HostError>?>(nil)
        engine.connect(to: peer) { connected.store($0) }
        #expect(await poll(within: .seconds(60)) { connected.load() != nil })
        let handle = try #require(connected.load()).get().handle
        func gatt(_ procedure: GATTProcedure) async throws -> GATTProcedureResult {
            let result = LockedValue<Result<GATTProcedureResult, GATTClientError>?>(nil)
            engine.gatt(connectionHandle: handle, procedure) { result.store($0) }
            #expect(await poll(within: .seconds(60)) { result.load() != nil })
            return try #require(result.load()).get()
        }
        guard case .services(let services) = try await gatt(.discoverAllPrimaryServices), let service = services.first,
              case .characteristics(let characteristics) = try await gatt(.discoverAllCharacteristics(range: service.range)),
              let characteristic = characteristics.first else {
            Issue.record("nothing discovered")
            return
        }

        bluetoothd.holdCommandWrites()
        var ready: [Bool] = []
        for index in 0..<BlueZEngine.commandWindow {
            _ = try await gatt(.writeWithoutResponse(handle: characteristic.valueHandle, value: [UInt8(index)]))
            ready.append(await withCheckedContinuation { continuation in
                engine.eventLoop.execute { continuation.resume(returning: engine.isReadyToSend(connectionHandle: handle)) }
            })
        }
        #expect(ready == Array(repeating: true, count: BlueZEngine.commandWindow - 1) + [false])
        #expect(await poll(within: .seconds(60)) { bluetoothd.heldCommandWrites == BlueZEngine.commandWindow })
        #expect(!events.load().contains("ready"))
        bluetoothd.releaseCommandWrites()
        #expect(await poll(within: .seconds(60)) { events.load().contains("ready") })
        #expect(events.load().filter { $0 == "ready" }.count == 1)
        #expect(bluetoothd.value(of: 0x0011) == [UInt8(BlueZEngine.commandWindow - 1)])
    }
}
