import BluetoothCore
import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

#if canImport(Glibc)
import Glibc
#endif

private nonisolated(unsafe) let knownServiceUUID = CBUUID(string: "6B6E0000-0000-4000-8000-00000000B001")
private nonisolated(unsafe) let knownCharacteristicUUID = CBUUID(string: "6B6E0001-0000-4000-8000-00000000B001")
private let knownValue = Data("known across runs".utf8)

/// A fresh temporary directory for one test.
private func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "ocb-known-peers-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@Suite struct KnownPeersTests {
    /// Run 1: a central scans, discovers and connects a peripheral on a private air; the known peers file then
    /// holds it (mode 0600). Run 2: a new central manager (new stack, same air, same file) retrieves it by
    /// identifier without scanning (unknown identifiers omitted, order as asked), connects by the stored address
    /// and reads a characteristic.
    @Test func retrievesAPeripheralKnownFromAnEarlierRunAndConnectsWithoutScanning() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/sub/known-peers.json"
        let provider = HostBackend.privateAirProvider(seed: 55)

        // The peripheral app: one readable characteristic, advertising its service and name.
        let peripheralLog = CallLog(label: "known.peripheral")
        let peripheralApp = PeripheralRecorder(log: peripheralLog)
        peripheralApp.onState = { manager in
            guard manager.state == .poweredOn else { return }
            let service = CBMutableService(type: knownServiceUUID, primary: true)
            service.characteristics = [CBMutableCharacteristic(type: knownCharacteristicUUID, properties: [.read],
                                                               value: knownValue, permissions: [.readable])]
            manager.add(service)
        }
        peripheralApp.onAdd = { manager, _, _ in
            manager.startAdvertising([CBAdvertisementDataLocalNameKey: "Known",
                                      CBAdvertisementDataServiceUUIDsKey: [knownServiceUUID]])
        }

        // Run 1: scan, connect.
        let log1 = CallLog(label: "known.central1")
        let central1 = CentralRecorder(log: log1)
        let found = LockedBox<CBPeripheral?>(nil)
        central1.onState = { manager in
            if manager.state == .poweredOn { manager.scanForPeripherals(withServices: [knownServiceUUID]) }
        }
        central1.onDiscover = { manager, peripheral, _, _ in
            guard found.value == nil else { return }
            found.value = peripheral
            manager.stopScan()
            manager.connect(peripheral)
        }
        let managers = CBBackendRegistry.$taskProvider.withValue(provider) {
            KnownPeersStore.$taskLocation.withValue(.file(path)) {
                Box(value: (CBPeripheralManager(delegate: peripheralApp, queue: peripheralLog.queue),
                            CBCentralManager(delegate: central1, queue: log1.queue)))
            }
        }
        try await waitFor("run 1: the connection", on: log1.queue, until: { log1.entries.contains { $0.hasPrefix("connect") } },
                          seen: { "central \(log1.entries), peripheral \(peripheralLog.entries)" })
        let identifier = try #require(found.value?.identifier)
        // Connected under its advertised name; the GAP Device Name read once connected then renames it, in the file
        // too, as iOS keeps the name it read.
        try await waitFor("run 1: the GAP name in the file", until: {
            KnownPeersStore(location: .file(path)).entries.first?.name == EnginePeripheralBackend.deviceName
        }, seen: { "\(KnownPeersStore(location: .file(path)).entries)" })

        // The file holds the peer: identity address, type, name; owner-only.
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        let stored = KnownPeersStore(location: .file(path)).entries
        #expect(stored.map(\.identifier) == [identifier])
        #expect(stored.first?.name == EnginePeripheralBackend.deviceName)
        #expect(stored.first?.connected == true)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        let peers = try #require(json["peers"] as? [[String: Any]])
        #expect(peers.first?["identifier"] as? String == identifier.uuidString)
        #expect(peers.first?["addressType"] as? String == (stored.first?.address.type == .public ? "public" : "random"))

        // End run 1: disconnect and release the manager.
        log1.queue.sync { if let peripheral = found.value { managers.value.1.cancelPeripheralConnection(peripheral) } }
        try await waitFor("run 1: the disconnection", on: log1.queue, until: { log1.entries.contains { $0.hasPrefix("disconnect") } },
                          seen: { "central \(log1.entries)" })
        found.value = nil

        // Another peer known from the file only (never on this air), to check the order of the answer.
        let other = BluetoothAddress(0x00_1B_DC_07_32_EF, type: .public)
        var entries = KnownPeersStore(location: .file(path)).entries
        entries.insert(KnownPeersStore.Entry(address: other, name: "Elsewhere", connected: true), at: 0)
        try KnownPeersStore.write(entries, to: path)
        let otherIdentifier = CBPeerIdentifier.identifier(for: other)

        // Run 2: no scan. Retrieve, connect, discover, read.
        let log2 = CallLog(label: "known.central2")
        let central2 = CentralRecorder(log: log2)
        let retrieved = LockedBox<[CBPeripheral]>([])
        let unknown = UUID()
        central2.onState = { manager in
            guard manager.state == .poweredOn else { return }
            let list = manager.retrievePeripherals(withIdentifiers: [unknown, identifier, otherIdentifier])
            retrieved.value = list
            if let peripheral = list.first { manager.connect(peripheral) }
        }
        central2.onConnect = { peripheral in
            peripheral.delegate = central2
            peripheral.discoverServices([knownServiceUUID])
        }
        central2.onServices = { peripheral in
            if let service = peripheral.services?.first { peripheral.discoverCharacteristics([knownCharacteristicUUID], for: service) }
        }
        central2.onCharacteristics = { peripheral, service in
            if let characteristic = service.characteristics?.first { peripheral.readValue(for: characteristic) }
        }
        let value = LockedBox<Data?>(nil)
        central2.onValue = { _, characteristic, _ in value.value = characteristic.value }
        let manager2 = CBBackendRegistry.$taskProvider.withValue(provider) {
            KnownPeersStore.$taskLocation.withValue(.file(path)) {
                Box(value: CBCentralManager(delegate: central2, queue: log2.queue))
            }
        }
        try await waitFor("run 2: the read without scanning", on: log2.queue, until: { value.value != nil },
                          seen: { "central \(log2.entries)" })
        #expect(value.value == knownValue)
        let list = log2.queue.sync { retrieved.value }
        #expect(list.map(\.identifier) == [identifier, otherIdentifier])
        #expect(list.map(\.name) == [EnginePeripheralBackend.deviceName, "Elsewhere"])
        // Never scanned: no discovery callback in run 2; connected under the stored name.
        #expect(log2.queue.sync { !manager2.value.isScanning })
        #expect(!log2.entries.contains { $0.hasPrefix("discover ") })
        #expect(log2.entries.contains("connect \(EnginePeripheralBackend.deviceName)"))
        _ = managers
    }

    /// Retrieved peripherals start disconnected with the stored name; unknown identifiers are omitted.
    @Test func retrievedPeripheralIsDisconnectedWithTheStoredName() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/known-peers.json"
        let a = BluetoothAddress(0xC0_11_22_33_44_55, type: .random)
        let b = BluetoothAddress(0x00_1B_DC_00_00_01, type: .public)
        try KnownPeersStore.write([KnownPeersStore.Entry(address: a, name: "A", connected: false),
                                   KnownPeersStore.Entry(address: b, name: nil, connected: true)], to: path)
        let log = CallLog(label: "known.retrieve")
        let recorder = CentralRecorder(log: log)
        let manager = CBBackendRegistry.$taskProvider.withValue(HostBackend.privateAirProvider(seed: 56)) {
            KnownPeersStore.$taskLocation.withValue(.file(path)) {
                Box(value: CBCentralManager(delegate: recorder, queue: log.queue))
            }
        }
        try await waitFor("power-on", on: log.queue, until: { manager.value.state == .poweredOn },
                          seen: { "state \(manager.value.state.rawValue), \(log.entries)" })
        let answer = log.queue.sync { () -> [(UUID, CBPeripheralState, String?)] in
            manager.value.retrievePeripherals(withIdentifiers: [
                CBPeerIdentifier.identifier(for: b), UUID(), CBPeerIdentifier.identifier(for: a),
            ]).map { ($0.identifier, $0.state, $0.name) }
        }
        #expect(answer.map(\.0) == [CBPeerIdentifier.identifier(for: b), CBPeerIdentifier.identifier(for: a)])
        #expect(answer.map(\.1) == [.disconnected, .disconnected])
        #expect(answer.map(\.2) == [nil, "A"])
    }

    /// A corrupt file is left byte for byte as it was, and the manager starts with no known peers.
    @Test func corruptFileIsLeftUntouched() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/known-peers.json"
        let garbage = Data("{\"version\": 1, \"peers\": [{\"identifier\": \"nope\"".utf8)
        try garbage.write(to: URL(fileURLWithPath: path))
        let store = KnownPeersStore(location: .file(path))
        #expect(store.entries.isEmpty)
        guard case .failure(let error) = KnownPeersStore.read(path) else {
            Issue.record("a corrupt file must not read")
            return
        }
        #expect(error.code == .corrupt)
        // Connecting and discovering do not overwrite it.
        store.connected(BluetoothAddress(0x00_1B_DC_00_00_02, type: .public), name: "X")
        store.discovered(BluetoothAddress(0x00_1B_DC_00_00_03, type: .public), name: "Y")
        store.flush()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)
        // An identifier that is not the address's own is corrupt too.
        let forged = """
            {"version": 1, "peers": [{"identifier": "\(UUID().uuidString)", "address": "00:1B:DC:00:00:04", "addressType": "public"}]}
            """
        try Data(forged.utf8).write(to: URL(fileURLWithPath: path))
        #expect(KnownPeersStore(location: .file(path)).entries.isEmpty)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(forged.utf8))
    }

    /// `OCB_KNOWN_PEERS`: off keeps peers in memory, a path names the file, unset uses the XDG data directory.
    @Test func environmentChoosesTheLocation() {
        #expect(KnownPeersStore.location(["OCB_KNOWN_PEERS": "off"]) == .memory)
        #expect(KnownPeersStore.location(["OCB_KNOWN_PEERS": "/x/y.json"]) == .file("/x/y.json"))
        #expect(KnownPeersStore.location(["XDG_DATA_HOME": "/d"]) == .file("/d/opencorebluetooth/known-peers.json"))
        #expect(KnownPeersStore.location(["HOME": "/h"]) == .file("/h/.local/share/opencorebluetooth/known-peers.json"))
        let memory = KnownPeersStore(location: .memory)
        memory.connected(BluetoothAddress(0x00_1B_DC_00_00_05, type: .public), name: "M")
        #expect(memory.entries.map(\.name) == ["M"])
    }

    /// Discovery writes are debounced; private addresses are not kept; renames and connects update the entry.
    @Test func discoveryIsDebouncedAndPrivateAddressesAreNotKept() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/known-peers.json"
        let store = KnownPeersStore(location: .file(path))
        let resolvable = BluetoothAddress(0x4A_00_00_00_00_01, type: .random)
        let staticAddress = BluetoothAddress(0xC5_00_00_00_00_01, type: .random)
        store.discovered(resolvable, name: "Private")
        store.discovered(staticAddress, name: nil)
        store.discovered(staticAddress, name: "Static")
        #expect(store.entries.map(\.address) == [staticAddress])
        #expect(!FileManager.default.fileExists(atPath: path))
        try await waitFor("the debounced write", within: .seconds(5), on: DispatchQueue(label: "known.wait"),
                          until: { FileManager.default.fileExists(atPath: path) }, seen: { "no file at \(path)" })
        #expect(KnownPeersStore(location: .file(path)).entries.map(\.name) == ["Static"])
        store.renamed(staticAddress, name: "Renamed")
        #expect(KnownPeersStore(location: .file(path)).entries.map(\.name) == ["Renamed"])
    }
}
