import BluetoothCore
import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

#if canImport(Glibc)
import Glibc
#endif

private nonisolated(unsafe) let restoredServiceUUID = CBUUID(string: "5E570000-0000-4000-8000-00000000C0DE")
private nonisolated(unsafe) let staticCharacteristicUUID = CBUUID(string: "5E570001-0000-4000-8000-00000000C0DE")
private nonisolated(unsafe) let dynamicCharacteristicUUID = CBUUID(string: "5E570002-0000-4000-8000-00000000C0DE")
private nonisolated(unsafe) let includedServiceUUID = CBUUID(string: "180F")
private let staticValue = Data("kept across launches".utf8)

/// Waits until `condition` holds, at most `seconds` of real time (real stacks over an in-process air).
private func eventually(_ seconds: Double = 60, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}

private func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "ocb-restoration-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

private func mode(_ path: String) -> mode_t? {
    var info = stat()
    return stat(path, &info) == 0 ? info.st_mode & 0o777 : nil
}

/// A value shared between the test and the delegate queues.
private final class Shared<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var _value: T
    init(_ value: T) { _value = value }
    var value: T {
        get { lock.withLock { _value } }
        set { lock.withLock { _value = newValue } }
    }
}

/// A central delegate that logs its callbacks (restore first) and keeps the restored dictionary and peripherals.
private final class RestoringCentral: NSObject, CBCentralManagerDelegate, @unchecked Sendable {
    let log: CallLog
    let restored = Shared<[String: Any]?>(nil)
    let peripherals = Shared<[CBPeripheral]>([])
    var onState: ((CBCentralManager) -> Void)?
    var onDiscover: ((CBCentralManager, CBPeripheral) -> Void)?

    init(log: CallLog) { self.log = log }

    func centralManager(_ central: CBCentralManager, willRestoreState dict: [String: Any]) {
        let list = dict[CBCentralManagerRestoredStatePeripheralsKey] as? [CBPeripheral] ?? []
        log.add("restore \(list.map { "\($0.identifier.uuidString) \($0.state.rawValue)" }) state \(central.state.rawValue)")
        restored.value = dict
        peripherals.value = list
    }
    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        log.add("state \(central.state.rawValue) scanning \(central.isScanning)")
        onState?(central)
    }
    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        log.add("discover \(peripheral.identifier.uuidString)")
        onDiscover?(central, peripheral)
    }
    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        log.add("connect \(peripheral.identifier.uuidString)")
    }
    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {
        log.add("fail \(peripheral.identifier.uuidString)")
    }
}

/// A peripheral-manager delegate that logs its callbacks and keeps the restored dictionary.
private final class RestoringPeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    let log: CallLog
    let restored = Shared<[String: Any]?>(nil)
    var onState: ((CBPeripheralManager) -> Void)?
    var onAdd: ((CBPeripheralManager, CBService) -> Void)?

    init(log: CallLog) { self.log = log }

    func peripheralManager(_ peripheral: CBPeripheralManager, willRestoreState dict: [String: Any]) {
        log.add("restore state \(peripheral.state.rawValue)")
        restored.value = dict
    }
    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        log.add("state \(peripheral.state.rawValue) advertising \(peripheral.isAdvertising)")
        onState?(peripheral)
    }
    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?) {
        log.add("added \(service.uuid.uuidString)\(error.map { " \($0)" } ?? "")")
        onAdd?(peripheral, service)
    }
    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {
        log.add("advertising\(error.map { " \($0)" } ?? "")")
    }
}

/// The seed-like service: a battery service included by ours, a static characteristic with a user description,
/// a dynamic read/write/notify one.
private func makeServices() -> [CBMutableService] {
    let included = CBMutableService(type: includedServiceUUID, primary: false)
    let service = CBMutableService(type: restoredServiceUUID, primary: true)
    let fixed = CBMutableCharacteristic(type: staticCharacteristicUUID, properties: [.read], value: staticValue,
                                        permissions: [.readable])
    fixed.descriptors = [CBMutableDescriptor(type: CBUUID(string: CBUUIDCharacteristicUserDescriptionString), value: "Kept")]
    let dynamic = CBMutableCharacteristic(type: dynamicCharacteristicUUID, properties: [.read, .write, .notify],
                                          value: nil, permissions: [.readable, .writeable])
    service.characteristics = [fixed, dynamic]
    service.includedServices = [included]
    return [included, service]
}

@Suite(.serialized) struct StateRestorationTests {
    /// Run 1: a central with a restore identifier scans for a service and connects to the peripheral advertising
    /// it; the restoration file (0600) then holds the peripheral's identifier and the scan. The manager and the
    /// peripheral are released (the app terminated). Run 2: a new manager with the same identifier gets
    /// `willRestoreState` first, on its queue, before its first state update, with the peripheral (`.connecting`)
    /// and the scan's services and options; once powered on it is scanning already (didDiscover follows) and the
    /// restored peripheral connects without a `connect` call from the app. Stopping both removes the file.
    @Test func centralRestoresItsConnectionAndScanInTheNextLaunch() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let provider = HostBackend.privateAirProvider(seed: 71)
        let path = StateRestorationStore(directory: directory, role: .central, identifier: "com.example.central").path
        let options: [String: Any] = [CBCentralManagerOptionRestoreIdentifierKey: "com.example.central"]

        let peripheralLog = CallLog(label: "restore.peripheral")
        let peripheralApp = RestoringPeripheral(log: peripheralLog)
        peripheralApp.onState = { manager in
            if manager.state == .poweredOn { makeServices().forEach(manager.add) }
        }
        peripheralApp.onAdd = { manager, service in
            guard service.uuid == restoredServiceUUID else { return }
            manager.startAdvertising([CBAdvertisementDataLocalNameKey: "Restorable",
                                      CBAdvertisementDataServiceUUIDsKey: [restoredServiceUUID]])
        }
        let peripheralManager = CBBackendRegistry.$taskProvider.withValue(provider) {
            CBPeripheralManager(delegate: peripheralApp, queue: peripheralLog.queue)
        }
        defer { withExtendedLifetime(peripheralManager) {} }

        // Run 1.
        let log1 = CallLog(label: "restore.central1")
        let app1 = RestoringCentral(log: log1)
        let found = Shared<CBPeripheral?>(nil)
        app1.onState = { manager in
            guard manager.state == .poweredOn else { return }
            manager.scanForPeripherals(withServices: [restoredServiceUUID],
                                       options: [CBCentralManagerScanOptionAllowDuplicatesKey: false])
        }
        app1.onDiscover = { manager, peripheral in
            guard found.value == nil else { return }
            found.value = peripheral
            manager.connect(peripheral)
        }
        let central1 = Shared<CBCentralManager?>(CBBackendRegistry.$taskProvider.withValue(provider) {
            StateRestorationStore.$taskDirectory.withValue(directory) {
                CBCentralManager(delegate: app1, queue: log1.queue, options: options)
            }
        })
        #expect(await eventually { log1.entries.contains { $0.hasPrefix("connect") } })
        let identifier = try #require(found.value?.identifier)
        #expect(log1.entries.first?.hasPrefix("state") == true, "no restoration in a first launch: \(log1.entries)")
        #expect(mode(path) == 0o600)
        let stored = try #require(try StateRestorationStore.read(CentralRestorationSnapshot.self, at: path).get())
        #expect(stored.peripherals.map(\.identifier) == [identifier.uuidString])
        #expect(stored.peripherals.first?.name == "Restorable")
        #expect(stored.scan == CentralRestorationSnapshot.Scan(services: [restoredServiceUUID.uuidString],
                                                                allowDuplicates: false, solicitedServices: []))

        // The app terminates: its peripheral and manager go away, the state stays.
        log1.queue.sync {
            found.value = nil
            central1.value = nil
        }
        #expect(await eventually { central1.value == nil })
        #expect(FileManager.default.fileExists(atPath: path))

        // Run 2: the same identifier.
        let log2 = CallLog(label: "restore.central2")
        let app2 = RestoringCentral(log: log2)
        let central2 = CBBackendRegistry.$taskProvider.withValue(provider) {
            StateRestorationStore.$taskDirectory.withValue(directory) {
                CBCentralManager(delegate: app2, queue: log2.queue, options: options)
            }
        }
        #expect(await eventually { log2.entries.contains("connect \(identifier.uuidString)") })
        #expect(await eventually { log2.entries.contains("discover \(identifier.uuidString)") })
        let entries = log2.entries
        #expect(entries.first == "restore [\"\(identifier.uuidString) \(CBPeripheralState.connecting.rawValue)\"] state \(CBManagerState.unknown.rawValue)")
        #expect(entries.dropFirst().first == "state \(CBManagerState.poweredOn.rawValue) scanning true")
        #expect(log2.offQueue == [])
        let state = try #require(app2.restored.value)
        #expect((state[CBCentralManagerRestoredStateScanServicesKey] as? [CBUUID]) == [restoredServiceUUID])
        let scanOptions = try #require(state[CBCentralManagerRestoredStateScanOptionsKey] as? [String: Any])
        #expect((scanOptions[CBCentralManagerScanOptionAllowDuplicatesKey] as? NSNumber) == NSNumber(value: false))
        let restoredPeripheral = try #require(app2.peripherals.value.first)
        // The GAP Device Name, read once the link is made again (advertised: "Restorable"); the read follows
        // didConnect, as on iOS (peripheralDidUpdateName), so it is awaited rather than expected at once.
        #expect(await eventually { log2.queue.sync { restoredPeripheral.name } == EnginePeripheralBackend.deviceName })
        #expect(restoredPeripheral.state == .connected)
        #expect(central2.misuseLog == [])

        // Nothing left to restore: the file goes.
        log2.queue.sync {
            central2.stopScan()
            central2.cancelPeripheralConnection(restoredPeripheral)
        }
        #expect(await eventually { !FileManager.default.fileExists(atPath: path) })
    }

    /// Run 1: a peripheral manager with a restore identifier publishes two services (one including the other; a
    /// static characteristic with a user description, a dynamic one) and advertises; the file (0600) holds them.
    /// The manager is released. Run 2: `willRestoreState` first, with the services rebuilt (UUIDs, properties,
    /// permissions, static value, descriptor, included service) and the advertisement data; once powered on it is
    /// advertising without any didAdd / didStartAdvertising; a central on the air finds it by its service and name,
    /// connects and reads the static value from the republished database.
    @Test func peripheralManagerRepublishesAndAdvertisesInTheNextLaunch() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let provider = HostBackend.privateAirProvider(seed: 72)
        let options: [String: Any] = [CBPeripheralManagerOptionRestoreIdentifierKey: "peripheral/42"]
        let path = StateRestorationStore(directory: directory, role: .peripheral, identifier: "peripheral/42").path
        #expect(path.hasSuffix("/peripheral-peripheral%2F42.json"))

        let log1 = CallLog(label: "restore.pm1")
        let app1 = RestoringPeripheral(log: log1)
        app1.onState = { manager in
            if manager.state == .poweredOn { makeServices().forEach(manager.add) }
        }
        app1.onAdd = { manager, service in
            guard service.uuid == restoredServiceUUID else { return }
            manager.startAdvertising([CBAdvertisementDataLocalNameKey: "Restored",
                                      CBAdvertisementDataServiceUUIDsKey: [restoredServiceUUID]])
        }
        let manager1 = Shared<CBPeripheralManager?>(CBBackendRegistry.$taskProvider.withValue(provider) {
            StateRestorationStore.$taskDirectory.withValue(directory) {
                CBPeripheralManager(delegate: app1, queue: log1.queue, options: options)
            }
        })
        #expect(await eventually { log1.entries.contains("advertising") })
        #expect(mode(path) == 0o600)
        let stored = try #require(try StateRestorationStore.read(PeripheralRestorationSnapshot.self, at: path).get())
        #expect(stored.services.map(\.uuid) == [includedServiceUUID.uuidString, restoredServiceUUID.uuidString])
        #expect(stored.services.last?.includedServices == [0])
        #expect(stored.advertisement == PeripheralRestorationSnapshot.Advertisement(
            localName: "Restored", serviceUUIDs: [restoredServiceUUID.uuidString]))
        log1.queue.sync { manager1.value = nil }

        // Run 2.
        let log2 = CallLog(label: "restore.pm2")
        let app2 = RestoringPeripheral(log: log2)
        let manager2 = CBBackendRegistry.$taskProvider.withValue(provider) {
            StateRestorationStore.$taskDirectory.withValue(directory) {
                CBPeripheralManager(delegate: app2, queue: log2.queue, options: options)
            }
        }
        #expect(await eventually { log2.entries.count >= 2 })
        #expect(log2.entries.prefix(2) == ["restore state \(CBManagerState.unknown.rawValue)",
                                            "state \(CBManagerState.poweredOn.rawValue) advertising true"])
        let state = try #require(app2.restored.value)
        let services = try #require(state[CBPeripheralManagerRestoredStateServicesKey] as? [CBMutableService])
        #expect(services.map(\.uuid) == [includedServiceUUID, restoredServiceUUID])
        #expect(services.map(\.isPrimary) == [false, true])
        #expect(services.last?.includedServices?.first === services.first)
        let characteristics = (services.last?.characteristics ?? []).compactMap { $0 as? CBMutableCharacteristic }
        #expect(characteristics.map(\.uuid) == [staticCharacteristicUUID, dynamicCharacteristicUUID])
        #expect(characteristics.map(\.properties) == [[.read], [.read, .write, .notify]])
        #expect(characteristics.map(\.permissions) == [[.readable], [.readable, .writeable]])
        #expect(characteristics.map(\.value) == [staticValue, nil])
        #expect(characteristics.first?.descriptors?.first?.value as? String == "Kept")
        #expect(characteristics.first?.descriptors?.first?.uuid == CBUUID(string: CBUUIDCharacteristicUserDescriptionString))
        let advertisement = try #require(state[CBPeripheralManagerRestoredStateAdvertisementDataKey] as? [String: Any])
        #expect(advertisement[CBAdvertisementDataLocalNameKey] as? String == "Restored")
        #expect(advertisement[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID] == [restoredServiceUUID])

        // On the air: found by service and name, connected, the static value read from the republished database.
        let centralLog = CallLog(label: "restore.reader")
        let reader = CentralRecorder(log: centralLog)
        let target = Shared<CBPeripheral?>(nil)
        reader.onState = { manager in
            if manager.state == .poweredOn { manager.scanForPeripherals(withServices: [restoredServiceUUID]) }
        }
        reader.onDiscover = { manager, peripheral, _, _ in
            guard target.value == nil else { return }
            target.value = peripheral
            manager.stopScan()
            manager.connect(peripheral)
        }
        reader.onConnect = { peripheral in
            peripheral.delegate = reader
            peripheral.discoverServices([restoredServiceUUID])
        }
        reader.onServices = { peripheral in
            if let service = peripheral.services?.first { peripheral.discoverCharacteristics([staticCharacteristicUUID], for: service) }
        }
        reader.onCharacteristics = { peripheral, service in
            if let characteristic = service.characteristics?.first { peripheral.readValue(for: characteristic) }
        }
        let central = CBBackendRegistry.$taskProvider.withValue(provider) {
            CBCentralManager(delegate: reader, queue: centralLog.queue)
        }
        let expected = "value \(staticCharacteristicUUID.uuidString) \([UInt8](staticValue))"
        #expect(await eventually { centralLog.entries.contains(expected) }, "\(centralLog.entries) \(log2.entries)")
        #expect(centralLog.entries.contains("discover Restored"))
        #expect(!log2.entries.contains { $0.hasPrefix("added") || $0.hasPrefix("advertising") }, "\(log2.entries)")
        #expect(manager2.misuseLog == [])
        withExtendedLifetime(central) {}
    }

    /// Without a restore identifier (or with restoration off) nothing is written and nothing is restored.
    @Test func withoutAnIdentifierNothingIsKept() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let provider = HostBackend.privateAirProvider(seed: 73)
        let log = CallLog(label: "restore.none")
        let app = RestoringPeripheral(log: log)
        app.onState = { manager in
            if manager.state == .poweredOn { makeServices().forEach(manager.add) }
        }
        app.onAdd = { manager, service in
            if service.uuid == restoredServiceUUID { manager.startAdvertising([CBAdvertisementDataLocalNameKey: "None"]) }
        }
        let managers = CBBackendRegistry.$taskProvider.withValue(provider) {
            StateRestorationStore.$taskDirectory.withValue(directory) {
                (CBPeripheralManager(delegate: app, queue: log.queue, options: nil),
                 CBPeripheralManager(delegate: app, queue: log.queue, options: [CBPeripheralManagerOptionShowPowerAlertKey: true]))
            }
        }
        #expect(await eventually { log.entries.filter { $0 == "advertising" }.count == 2 })
        #expect(managers.0.restoration == nil && managers.1.restoration == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == [])
        #expect(!log.entries.contains { $0.hasPrefix("restore") })

        // Restoration off: an identifier, but no store.
        let off = StateRestorationStore.$taskDirectory.withValue(.some(nil)) {
            StateRestorationStore.forOptions([CBCentralManagerOptionRestoreIdentifierKey: "x"],
                                             key: CBCentralManagerOptionRestoreIdentifierKey, role: .central)
        }
        #expect(off == nil)
        // A whole program's identifier (OCB_RESTORE_ID) for a manager without one of its own; the manager's wins.
        let key = CBCentralManagerOptionRestoreIdentifierKey
        let program = ["OCB_RESTORE_ID": "seed 1", "OCB_RESTORATION": "/r"]
        #expect(StateRestorationStore.forOptions(nil, key: key, role: .central, environment: program)?.path == "/r/central-seed%201.json")
        #expect(StateRestorationStore.forOptions([key: ""], key: key, role: .peripheral, environment: program)?.path == "/r/peripheral-seed%201.json")
        #expect(StateRestorationStore.forOptions([key: "own"], key: key, role: .central, environment: program)?.identifier == "own")
        #expect(StateRestorationStore.forOptions(nil, key: key, role: .central, environment: ["OCB_RESTORE_ID": "", "OCB_RESTORATION": "/r"]) == nil)
        #expect(StateRestorationStore.currentDirectory(["OCB_RESTORATION": "off"]) == nil)
        #expect(StateRestorationStore.currentDirectory(["OCB_RESTORATION": "/elsewhere"]) == "/elsewhere")
        #expect(StateRestorationStore.defaultDirectory(["XDG_STATE_HOME": "/s", "HOME": "/h"]) == "/s/opencorebluetooth/restoration")
        #expect(StateRestorationStore.defaultDirectory(["HOME": "/h"]) == "/h/.local/state/opencorebluetooth/restoration")
    }

    /// A corrupt file (not JSON; or JSON whose identifier is not that of its address) is reported with a code and
    /// a reason and ignored: the manager powers on without `willRestoreState`, and its next change replaces it.
    @Test func aCorruptFileIsReportedAndIgnored() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = StateRestorationStore(directory: directory, role: .central, identifier: "corrupt")
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: store.path))
        let garbage = StateRestorationStore.read(CentralRestorationSnapshot.self, at: store.path)
        #expect(throws: StateRestorationError.self) { try garbage.get() }
        if case .failure(let error) = garbage {
            #expect(error.code == .corrupt)
            #expect(error.path == store.path)
        }

        var wrong = CentralRestorationSnapshot(peripherals: [(CBBackendPeer(address: BluetoothAddress(0x0A1C_0000_0001, type: .public)), nil, nil)], scan: nil)
        wrong.peripherals[0].identifier = UUID().uuidString
        let otherPath = directory + "/other.json"
        try JSONEncoder().encode(wrong).write(to: URL(fileURLWithPath: otherPath))
        let mismatch = StateRestorationStore.read(CentralRestorationSnapshot.self, at: otherPath)
        if case .failure(let error) = mismatch {
            #expect(error.code == .corrupt)
            #expect(error.reason.contains("is not that of 0A:1C:00:00:00:01"))
        } else {
            Issue.record("a wrong identifier was accepted")
        }

        let provider = HostBackend.privateAirProvider(seed: 74)
        let log = CallLog(label: "restore.corrupt")
        let app = RestoringCentral(log: log)
        app.onState = { manager in
            if manager.state == .poweredOn { manager.scanForPeripherals(withServices: nil) }
        }
        let central = CBBackendRegistry.$taskProvider.withValue(provider) {
            StateRestorationStore.$taskDirectory.withValue(directory) {
                CBCentralManager(delegate: app, queue: log.queue, options: [CBCentralManagerOptionRestoreIdentifierKey: "corrupt"])
            }
        }
        #expect(await eventually { log.entries.contains("state \(CBManagerState.poweredOn.rawValue) scanning false") })
        #expect(!log.entries.contains { $0.hasPrefix("restore") })
        // The scan replaced the corrupt file with a readable snapshot (scan for every device).
        #expect(await eventually {
            (try? StateRestorationStore.read(CentralRestorationSnapshot.self, at: store.path).get())??.scan?.services == nil
                && (try? StateRestorationStore.read(CentralRestorationSnapshot.self, at: store.path).get())??.scan != nil
        })
        withExtendedLifetime(central) {}
    }

    /// Identifiers become safe file names; the central and peripheral roles do not share a file.
    /// A scan the app started without `CBCentralManagerScanOptionAllowDuplicatesKey` is kept without it: the
    /// restored options hold only what the app gave (nothing is invented).
    @Test func aScanWithoutTheDuplicatesOptionIsKeptWithoutIt() throws {
        let parameters = CBBackendScanParameters(serviceUUIDs: nil, allowDuplicates: false, solicitedServiceUUIDs: [])
        let without = CentralRestorationSnapshot(peripherals: [], scan: parameters, duplicatesGiven: false)
        #expect(without.scan?.allowDuplicates == nil)
        let again = try JSONDecoder().decode(CentralRestorationSnapshot.self, from: JSONEncoder().encode(without))
        #expect(again.scan?.allowDuplicates == nil)
        #expect(try again.restoredScan()?.allowDuplicates == false)
        let with = CentralRestorationSnapshot(peripherals: [], scan: parameters, duplicatesGiven: true)
        #expect(with.scan?.allowDuplicates == false)
    }

    @Test func identifiersBecomeFileNames() {
        #expect(StateRestorationStore.fileName("com.example.app-1_x") == "com.example.app-1_x")
        #expect(StateRestorationStore.fileName("../a b/é") == "%2E.%2Fa%20b%2F%C3%A9")
        let central = StateRestorationStore(directory: "/d", role: .central, identifier: "same").path
        let peripheral = StateRestorationStore(directory: "/d", role: .peripheral, identifier: "same").path
        #expect(central == "/d/central-same.json" && peripheral == "/d/peripheral-same.json")
    }
}
