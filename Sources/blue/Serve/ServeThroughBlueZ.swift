import BlueZ
import BluetoothCore
import BluetoothRuntime
import Foundation
import GATT
import OpenCoreBluetooth

/// `blue serve --hci bluez`: the same server published through bluetoothd (OpenCoreBluetooth's BlueZ peripheral
/// backend: a GATT application of objects we export, GattManager1.RegisterApplication; an LEAdvertisement1 object,
/// LEAdvertisingManager1.RegisterAdvertisement). Every value is dynamic, so each read and write reaches us and is
/// printed as on our host; notifications are the Value's PropertiesChanged signals, which bluetoothd sends to every
/// subscriber. bluetoothd adds the GAP and GATT services and answers pairing with its default agent (the desktop's),
/// so the pairing options are refused here.
extension Serve {
    func checkBlueZOptions() throws(CLIFailure) {
        let refused: [(Bool, String)] = [(io != .noInputNoOutput, "--io"), (passkey != nil, "--passkey"), (oobIn != nil, "--oob-in"),
                                         (oobOut != nil, "--oob-out"), (oobKey != nil, "--oob-key"), (allowRepairing, "--allow-repairing")]
        if let option = refused.first(where: \.0)?.1 {
            throw CLIFailure(.usage, BluetoothdLimitation.serverPairing(option: option).message(hci: stack.hci))
        }
    }

    /// How long bluetoothd may take to say whether its adapter is there and powered.
    static let bluezStartLimit: Duration = .seconds(15)

    /// Why bluetoothd's first state is not "powered on", as the one line the command ends with (exit 69): the adapter
    /// off, no answer within ``bluezStartLimit`` (nil), or the backend's own reason.
    static func bluezStartFailure(_ state: CBManagerState?, description: String, reason: String?) -> CLIFailure {
        switch state {
        case .poweredOff?: CLIFailure(.unavailable, "the adapter of \(description) is powered off (`bluetoothctl power on`)")
        case nil: CLIFailure(.unavailable, "\(description) did not answer within \(bluezStartLimit.secondsText)")
        default: CLIFailure(.unavailable, reason ?? "cannot use \(description)")
        }
    }

    func serveThroughBlueZ(_ adapter: BlueZAdapterChoice, compiled: [CompiledService], advertised: [BluetoothUUID],
                           deviceName: String) async throws(CLIFailure) {
        try checkBlueZOptions()
        let reason = LockedValue<String?>(nil)
        let backend = HostBackend.bluezPeripheral(adapter: adapter.name) { line in reason.withLock { $0 = $0 ?? line } }
        let server = BlueZServeState(backend: backend, services: compiled, json: json)
        let description = "bluetoothd (\(adapter.name ?? "its first adapter"))"
        let state = OneShot<CBManagerState?>()
        let lost = OneShot<Void>()
        backend.start { event in
            if case .stateChanged(let value) = event {
                state.fire(value)
                if value != .poweredOn { lost.fire(()) }
            }
            server.handle(event)
        }
        let startTimer = server.loop.schedule(after: Self.bluezStartLimit) { state.fire(nil) }
        let first = await state.wait()
        startTimer.cancel()
        guard first == .poweredOn else {
            backend.shutdown()
            throw Self.bluezStartFailure(first, description: description, reason: reason.load())
        }
        do throws(CLIFailure) {
            try await server.publish()
            let content = try await server.advertise(name: deviceName, services: advertised)
            server.note(["event": "serving", "name": deviceName, "transport": description, "services": content.map(\.uuidString)],
                        text: "serving \"\(deviceName)\" on \(description)"
                            + (content.isEmpty ? "" : ", advertising \(content.map(ValueDecoding.label).joined(separator: ", "))"))
        } catch {
            backend.shutdown()
            throw error
        }
        server.startGenerators()
        let ended = OneShot<Bool>()
        Task { await waitForTimeoutOrSignal(nil, loop: server.loop); ended.fire(true) }
        Task { await lost.wait(); ended.fire(false) }
        let stopped = await ended.wait()
        server.note(["event": "stopping"], text: "stopping")
        server.stop()
        backend.stopAdvertising()
        backend.removeAllServices()
        backend.shutdown()
        if !stopped { throw CLIFailure(.unavailable, "lost \(description): \(reason.load() ?? "its adapter is no longer powered on")") }
    }
}

/// The served values and what happens to them through bluetoothd: characteristic ids are their position in the
/// definition (service by service), values live here, requests are answered from them.
final class BlueZServeState: Sendable {
    /// An ATT error as the host route prints it ("Read Not Permitted (0x02)"), else bluetoothd's reason.
    static func text(_ error: CBBackendError) -> String {
        switch error {
        case .att(let code): "\(ATTErrorCode(code))"
        case .core(_, let reason): reason
        }
    }

    struct Entry: Sendable {
        var characteristic: CompiledService.Characteristic
        var notifiesOnWrite: Bool { characteristic.generator == nil && characteristic.notifies && characteristic.writable }
    }

    private struct State {
        var values: [Int: [UInt8]] = [:]
        var subscribers: [Int: Set<BluetoothAddress>] = [:]
        var stopped = false
    }

    let backend: any CBPeripheralBackend
    let services: [CompiledService]
    let json: Bool
    let loop = DispatchEventLoop(label: "blue.serve.bluez")
    private let entries: [Int: Entry]
    private let state = LockedValue(State())

    init(backend: any CBPeripheralBackend, services: [CompiledService], json: Bool) {
        self.backend = backend
        self.services = services
        self.json = json
        var entries: [Int: Entry] = [:]
        var values: [Int: [UInt8]] = [:]
        var id = 1
        for service in services {
            for characteristic in service.characteristics {
                entries[id] = Entry(characteristic: characteristic)
                values[id] = characteristic.value
                id += 1
            }
        }
        self.entries = entries
        state.withLock { $0.values = values }
    }

    func note(_ object: [String: Any], text: String) {
        if json { Console.json(object) } else { Console.line(text) }
    }

    /// Publishes every service (each value dynamic, so that each access is printed).
    func publish() async throws(CLIFailure) {
        var id = 1
        for (index, service) in services.enumerated() {
            var characteristics: [CBBackendLocalCharacteristic] = []
            for characteristic in service.characteristics {
                characteristics.append(CBBackendLocalCharacteristic(
                    id: id, uuid: characteristic.uuid, properties: UInt(characteristic.properties.rawValue),
                    permissions: CBBackendLocalCharacteristic.permissions(characteristic.permissions), staticValue: nil,
                    descriptors: characteristic.descriptors.map { CBBackendLocalDescriptor(uuid: $0.uuid, value: $0.value) }))
                id += 1
            }
            let local = CBBackendLocalService(id: index + 1, uuid: service.uuid, isPrimary: service.isPrimary, includedServiceIDs: [],
                                              characteristics: characteristics)
            let done = OneShot<Result<Void, CBBackendError>>()
            backend.addService(local) { done.fire($0) }
            if case .failure(let error) = await done.wait() {
                throw CLIFailure(.failed, "bluetoothd did not take service \(ValueDecoding.label(service.uuid)): \(BlueZServeState.text(error))")
            }
        }
    }

    /// Advertises the name and as many of the service UUIDs as bluetoothd takes; returns the UUIDs advertised.
    func advertise(name: String, services: [BluetoothUUID]) async throws(CLIFailure) -> [BluetoothUUID] {
        var candidates = [services]
        let short = services.filter { $0.uuid16 != nil }
        if short != services { candidates.append(short) }
        candidates.append([])
        var lastError = ""
        for list in candidates {
            let done = OneShot<Result<Void, CBBackendError>>()
            backend.startAdvertising(localName: name, serviceUUIDs: list, overflowServiceUUIDs: []) { done.fire($0) }
            switch await done.wait() {
            case .success:
                if list != services { Console.error("warning: advertising \(list.count) of \(services.count) service UUIDs") }
                return list
            case .failure(let error):
                lastError = BlueZServeState.text(error)
            }
        }
        throw CLIFailure(.failed, "cannot advertise through bluetoothd: \(lastError)")
    }

    func handle(_ event: CBPeripheralBackendEvent) {
        switch event {
        case .centralConnected(let peer, _):
            note(["event": "connected", "peer": peer.address.string], text: "connected: \(peer.address)")
        case .centralDisconnected(let peer):
            state.withLock { state in
                for id in state.subscribers.keys { state.subscribers[id]?.remove(peer.address) }
            }
            note(["event": "disconnected", "peer": peer.address.string], text: "disconnected: \(peer.address)")
        case .mtuChanged(let peer, let mtu):
            note(["event": "mtu", "peer": peer.address.string, "mtu": mtu], text: "ATT MTU \(mtu) with \(peer.address)")
        case .readRequest(let id, let central, let characteristicID, let offset):
            guard let entry = entries[characteristicID] else { return backend.respond(to: id, result: 0x0A, value: nil) }
            let value = state.withLock { $0.values[characteristicID] } ?? []
            guard offset <= value.count else { return backend.respond(to: id, result: 0x07, value: nil) }
            if offset == 0 {
                let uuid = entry.characteristic.uuid
                let decoded = ValueDecoding.describe(value, uuid: uuid).map { "  (\($0))" } ?? ""
                note(["event": "read", "peer": central.address.string, "uuid": uuid.uuidString, "hex": Hex.encode(value)],
                     text: "read \(ValueDecoding.label(uuid)) by \(central.address): \(ValueDecoding.hex(value))\(decoded)")
            }
            backend.respond(to: id, result: 0, value: Array(value[offset...]))
        case .writeRequests(let id, let central, let writes, let responseRequired):
            var result: UInt8 = 0
            for write in writes {
                guard let entry = entries[write.characteristicID] else {
                    result = 0x0A
                    break
                }
                let value = state.withLock { state -> [UInt8] in
                    let old = state.values[write.characteristicID] ?? []
                    return write.offset == 0 ? write.value : Array(old.prefix(write.offset)) + write.value
                }
                guard value.count <= entry.characteristic.maximumLength else {
                    result = 0x0D
                    break
                }
                state.withLock { $0.values[write.characteristicID] = value }
                let uuid = entry.characteristic.uuid
                let decoded = ValueDecoding.describe(value, uuid: uuid).map { "  (\($0))" } ?? ""
                let kind = responseRequired ? "" : " (without response)"
                note(["event": "write", "peer": central.address.string, "uuid": uuid.uuidString, "hex": Hex.encode(value),
                      "withResponse": responseRequired],
                     text: "write \(ValueDecoding.label(uuid)) by \(central.address)\(kind): \(ValueDecoding.hex(value))\(decoded)")
                if entry.notifiesOnWrite {
                    let others = state.withLock { Array($0.subscribers[write.characteristicID] ?? []) }.filter { $0 != central.address }
                    if !others.isEmpty {
                        _ = backend.updateValue(value, characteristicID: write.characteristicID, centrals: others.map(CBBackendPeer.init))
                    }
                }
            }
            backend.respond(to: id, result: result, value: nil)
        case .subscribed(let central, let characteristicID):
            guard let entry = entries[characteristicID] else { return }
            state.withLock { _ = $0.subscribers[characteristicID, default: []].insert(central.address) }
            let uuid = entry.characteristic.uuid
            note(["event": "subscription", "peer": central.address.string, "uuid": uuid.uuidString, "configuration": "notifications"],
                 text: "subscribe \(ValueDecoding.label(uuid)) by \(central.address)")
            if let value = entry.characteristic.subscribeValue {
                state.withLock { $0.values[characteristicID] = value }
                _ = backend.updateValue(value, characteristicID: characteristicID, centrals: [central])
            }
        case .unsubscribed(let central, let characteristicID):
            guard let entry = entries[characteristicID] else { return }
            state.withLock { _ = $0.subscribers[characteristicID]?.remove(central.address) }
            note(["event": "subscription", "peer": central.address.string, "uuid": entry.characteristic.uuid.uuidString,
                  "configuration": "off"],
                 text: "unsubscribe \(ValueDecoding.label(entry.characteristic.uuid)) by \(central.address)")
        case .stateChanged, .readyToUpdateSubscribers, .l2capChannelOpened:
            break
        }
    }

    /// Arms each generator's timer: every tick the value changes and is notified (bluetoothd sends it to the
    /// subscribers).
    func startGenerators() {
        for (id, entry) in entries.sorted(by: { $0.key < $1.key }) {
            if let generator = entry.characteristic.generator { tick(id, generator, 0) }
        }
    }

    private func tick(_ id: Int, _ generator: ServeGenerator, _ number: UInt64) {
        loop.schedule(after: generator.interval) { [self] in
            guard !state.withLock({ $0.stopped }) else { return }
            let value = generator.value(tick: number)
            let subscribers = state.withLock { state -> [BluetoothAddress] in
                state.values[id] = value
                return Array(state.subscribers[id] ?? [])
            }
            _ = backend.updateValue(value, characteristicID: id, centrals: subscribers.map(CBBackendPeer.init))
            tick(id, generator, number &+ 1)
        }
    }

    func stop() {
        state.withLock { $0.stopped = true }
    }
}

extension CompiledService.Characteristic {
    var notifies: Bool { !properties.isDisjoint(with: [.notify, .indicate]) }
    var writable: Bool { !properties.isDisjoint(with: [.write, .writeWithoutResponse]) }
}
