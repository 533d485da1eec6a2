import Foundation
import Testing
@testable import OpenCoreBluetooth

private nonisolated(unsafe) let eventServiceUUID = CBUUID(string: "5E570000-0000-4000-8000-0000000C0E17")
private nonisolated(unsafe) let eventCharacteristicUUID = CBUUID(string: "5E570001-0000-4000-8000-0000000C0E17")

/// Publishes one readable value under the test's service and advertises the service.
private final class EventPeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        let service = CBMutableService(type: eventServiceUUID, primary: true)
        service.characteristics = [CBMutableCharacteristic(type: eventCharacteristicUUID, properties: [.read],
                                                           value: Data([1]), permissions: [.readable])]
        peripheral.add(service)
        peripheral.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [eventServiceUUID]])
    }
}

/// A central that registers for connection events with `options` at power-on and logs them as "up ID" / "down ID".
private final class EventObserver: NSObject, CBCentralManagerDelegate, @unchecked Sendable {
    let options: [CBConnectionEventMatchingOption: Any]?
    let log: CallLog
    var manager: CBCentralManager!
    var registered = false

    init(options: [CBConnectionEventMatchingOption: Any]?, label: String, provider: CBBackendProvider) {
        self.options = options
        log = CallLog(label: label)
        super.init()
        manager = CBBackendRegistry.$taskProvider.withValue(provider) { CBCentralManager(delegate: self, queue: log.queue) }
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard central.state == .poweredOn else { return }
        central.registerForConnectionEvents(options: options)
        registered = true
    }

    func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent, for peripheral: CBPeripheral) {
        log.add("\(event == .peerConnected ? "up" : "down") \(peripheral.identifier)")
    }
}

/// Scans for the service, connects to the first peripheral found and keeps it (``ConnectingCentral``, on the main
/// queue); discovers nothing.
private final class EventConnector: ConnectingCentral, @unchecked Sendable {
    var connected = false

    init() { super.init(service: eventServiceUUID) }

    override func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        connected = true
        log.append("connected")
    }

    override func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        connected = false
        log.append("disconnected")
    }
}

/// `registerForConnectionEvents(options:)` and `retrieveConnectedPeripherals(withServices:)` look at the links of
/// the whole "system" (the managers of one provider: one device), as iOS does, not only the calling manager's
/// (issue 12 item 3).
@Suite(.timeLimit(.minutes(2)))
struct ConnectionEventTests {
    @Test func connectionEventsReachTheManagersWhoseOptionsMatch() async throws {
        let provider = HostBackend.privateAirProvider(seed: 77)
        let peripheralApp = EventPeripheral()
        let peripheralManager = CBBackendRegistry.$taskProvider.withValue(provider) {
            CBPeripheralManager(delegate: peripheralApp, queue: DispatchQueue(label: "events.peripheral"))
        }
        let byService = EventObserver(options: [.serviceUUIDs: [eventServiceUUID]], label: "events.service", provider: provider)
        let stranger = UUID()
        let byOtherIdentifier = EventObserver(options: [.peripheralUUIDs: [stranger]], label: "events.other", provider: provider)
        let everything = EventObserver(options: nil, label: "events.all", provider: provider)
        let observers = [byService, byOtherIdentifier, everything]
        for observer in observers {
            try await waitFor("\(observer.log.queue.label) registered", on: observer.log.queue,
                              until: { observer.registered }, seen: { "\(observer.manager.state.rawValue)" })
        }
        let box = await makeOnMain(with: provider) { EventConnector() }
        let connector = box.value
        try await waitFor("the connection", until: { connector.connected }, seen: { "\(connector.log)" })
        let target = try #require(await onMain { connector.peripheral?.identifier })

        // The service's observer hears of the peripheral's link (its service was advertised, never discovered).
        try await waitFor("the service observer's event", on: byService.log.queue,
                          until: { byService.log.entries == ["up \(target)"] }, seen: { "\(byService.log.entries)" })
        // Without options: both ends of the link are the system's (the central's link to the peripheral, and the
        // peripheral manager's link from the central).
        try await waitFor("every link", on: everything.log.queue,
                          until: { everything.log.entries.count == 2 }, seen: { "\(everything.log.entries)" })
        #expect(everything.log.entries.contains("up \(target)"))

        // Found by service although nobody discovered the services: for the connector, its own connected
        // peripheral; for another manager, the same peer, not connected by it.
        let ownFound = await onMain { connector.manager.retrieveConnectedPeripherals(withServices: [eventServiceUUID]) }
        #expect(ownFound.map(\.identifier) == [target])
        #expect(await onMain { ownFound.first === connector.peripheral })
        #expect(ownFound.first?.state == .connected)
        #expect(ownFound.first?.services == nil)
        let otherFound = await onQueue(byService.log.queue) { byService.manager.retrieveConnectedPeripherals(withServices: [eventServiceUUID]) }
        #expect(otherFound.map(\.identifier) == [target])
        #expect(otherFound.first?.state == .disconnected)
        let unrelated = await onQueue(byService.log.queue) {
            byService.manager.retrieveConnectedPeripherals(withServices: [CBUUID(string: "5E57FFFF-0000-4000-8000-0000000C0E17")])
        }
        #expect(unrelated.isEmpty)

        await onMain { connector.manager.cancelPeripheralConnection(connector.peripheral!) }
        try await waitFor("the disconnection", until: { !connector.connected }, seen: { "\(connector.log)" })
        try await waitFor("the service observer's second event", on: byService.log.queue,
                          until: { byService.log.entries == ["up \(target)", "down \(target)"] }, seen: { "\(byService.log.entries)" })
        try await waitFor("every link's end", on: everything.log.queue,
                          until: { everything.log.entries.count == 4 }, seen: { "\(everything.log.entries)" })
        #expect(everything.log.entries.filter { $0.hasPrefix("down ") }.count == 2)
        #expect(byOtherIdentifier.log.entries.isEmpty, "\(byOtherIdentifier.log.entries)")
        let afterwards = await onQueue(byService.log.queue) { byService.manager.retrieveConnectedPeripherals(withServices: [eventServiceUUID]) }
        #expect(afterwards.isEmpty)
        withExtendedLifetime((peripheralManager, peripheralApp, observers, box)) {}
    }

    /// The options as CoreBluetooth takes them: service UUIDs, peripheral identifiers (UUID or NSUUID), both (either
    /// matches), none (all).
    @Test func matchingOptions() {
        let peer = UUID()
        let heartRate = CBUUID(string: "180D").bluetoothUUID
        #expect(ConnectionEventMatching(options: nil).matches(identifier: peer, services: []))
        #expect(ConnectionEventMatching(options: [:]).matches(identifier: peer, services: []))
        let byService = ConnectionEventMatching(options: [.serviceUUIDs: [CBUUID(string: "180D")]])
        #expect(byService.matches(identifier: peer, services: [heartRate]))
        #expect(!byService.matches(identifier: peer, services: []))
        let byIdentifier = ConnectionEventMatching(options: [.peripheralUUIDs: [NSUUID(uuidString: peer.uuidString)!]])
        #expect(byIdentifier.matches(identifier: peer, services: []))
        #expect(!byIdentifier.matches(identifier: UUID(), services: [heartRate]))
        let both = ConnectionEventMatching(options: [.serviceUUIDs: [CBUUID(string: "180D")], .peripheralUUIDs: [peer]])
        #expect(both.matches(identifier: UUID(), services: [heartRate]))
        #expect(both.matches(identifier: peer, services: []))
        #expect(!both.matches(identifier: UUID(), services: []))
    }
}
