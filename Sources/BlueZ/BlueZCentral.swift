import AdvertisingData
package import BluetoothCore
import BluetoothRuntime
package import GATT
package import BluetoothEngine
package import DBus
import Dispatch
import Foundation
import SystemInterface

/// The central role's calls to bluetoothd (BlueZ's D-Bus API: Adapter1, Device1, GattService1,
/// GattCharacteristic1, GattDescriptor1), for the bluetoothd engine (``BlueZEngine``): the D-Bus session, scanning,
/// connecting, the GATT client, pairing and L2CAP channels (Core 5.4 Vol 3 Part C §9,
/// Part G §4, Part H §2.3, Part A §4.22).
///
/// Mapping: a peer is the Device1's Address and AddressType; advertisements are the Device1 properties bluetoothd
/// updates while discovering (RSSI, Name, UUIDs, ManufacturerData, ServiceData), rebuilt into a ``ScanReport``; a
/// connection is Device1.Connect (its end, Connected false); services are the GATT objects bluetoothd resolved
/// (ServicesResolved), named by the attribute handles in their paths (a characteristic's path names its
/// declaration, its value is the handle after); reads and writes are ReadValue and WriteValue (`type` request or
/// command; at most ``commandWindow`` Write Commands unanswered by bluetoothd); notifications are StartNotify and
/// the Value property's changes; the MTU is the characteristics' MTU property (BlueZ 5.62 and later), else
/// AcquireWrite's answer (the socket released at once), else 23. bluetoothd's replies with an ATT error become
/// ``BlueZCallError/att(_:)``. L2CAP channels are kernel L2CAP sockets on bluetoothd's link (``BlueZL2CAPSocket``).
/// The RSSI of a connected peer is known only while discovering.
///
/// Who owns the state: this object, behind one lock; D-Bus answers arrive on the connection's reader thread and
/// events leave in order on a queue of its own.
package final class BlueZCentral: Sendable {
    /// What the central side reports, in order.
    package enum Event: Sendable {
        case stateChanged(BlueZAdapterState)
        case advertisement(ScanReport)
        case connected(BluetoothAddress, mtu: Int)
        case connectionFailed(BluetoothAddress, BlueZCallError)
        /// The link ended; nil when we ended it.
        case disconnected(BluetoothAddress, BlueZCallError?)
        case mtuChanged(BluetoothAddress, mtu: Int)
        case valueUpdated(BluetoothAddress, handle: UInt16, value: [UInt8])
        case readyToSendWriteWithoutResponse(BluetoothAddress)
        case nameUpdated(BluetoothAddress, String)
    }

    private struct Link {
        var path: String
        var cancelled = false
        /// Attribute paths by the handle in their name.
        var attributes: [UInt16: String] = [:]
        /// Write Commands handed to bluetoothd whose WriteValue has not returned yet (flow control).
        var commandsInFlight = 0
        /// Whether writeWithoutResponse said "no room" and readyToSendWriteWithoutResponse is owed.
        var owesReady = false
        /// Removed from bluetoothd to be paired again: its end is not the link's end (``pair(_:capability:again:prompts:completion:)``).
        var replacing = false
    }

    /// How many Write Commands may wait for bluetoothd's answer before `canSendWriteWithoutResponse` turns false.
    package static let commandWindow = 8

    private struct State {
        var sink: (@Sendable (Event) -> Void)?
        var tree: BlueZObjectTree?
        var adapterPath: String?
        var powered = false
        var scanning = false
        var links: [BluetoothAddress: Link] = [:]
        /// Characteristic paths being notified, with their peer and handle.
        var notifying: [String: (peer: BluetoothAddress, handle: UInt16)] = [:]
        var waitingForServices: [String: [@Sendable (Bool) -> Void]] = [:]
        var closed = false
    }

    /// `hciN`, or nil for the first adapter bluetoothd has.
    package let adapterName: String?
    private let state = LockedValue(State())
    private let events = DispatchQueue(label: "BlueZ.central.events")

    /// bluetoothd's objects and the adapter chosen, once the client has its session (the engine exports its own
    /// objects on the same connection).
    package var session: (tree: BlueZObjectTree, adapterPath: String)? {
        state.withLock { state in state.tree.flatMap { tree in state.adapterPath.map { (tree, $0) } } }
    }

    /// The adapter's address (Adapter1.Address), once found.
    package var adapterAddress: BluetoothAddress? {
        let (tree, adapter) = state.withLock { ($0.tree, $0.adapterPath) }
        return BlueZL2CAPSocket.adapterAddress(tree, adapter)
    }

    package static let deviceInterface = BlueZAdapterSession.deviceInterface
    package static let adapterInterface = BlueZAdapterSession.adapterInterface
    package static let serviceInterface = "org.bluez.GattService1"
    package static let characteristicInterface = "org.bluez.GattCharacteristic1"
    package static let descriptorInterface = "org.bluez.GattDescriptor1"

    /// The bus bluetoothd is on (the system bus unless a test gives another).
    package let busAddress: String

    /// Where the backend says what went wrong outside any call (bluetoothd unreachable or gone, discovery refused):
    /// one line (logged as an error by default).
    private let report: @Sendable (String) -> Void
    /// The pairing agent asked for (`OCB_BLUEZ_AGENT`, ``BlueZPairingAgent``), registered while the backend runs.
    private let pairingAgent: BlueZPairingAgent?
    /// Where the agent's prompts go (the value to compare, the passkey to type): logged at notice by default.
    private let prompt: @Sendable (String) -> Void
    private let registeredAgent = LockedValue<BlueZAgent?>(nil)
    /// Our agent for the pairings we ask for, with the capability of the last one.
    private let promptAgent = LockedValue<BlueZAgent?>(nil)

    package init(adapter: String?, busAddress: String = DBusConnection.systemBusAddress,
                 report: @escaping @Sendable (String) -> Void = { Log.bluez.error("\($0)") },
                 pairingAgent: BlueZPairingAgent? = BlueZPairingAgent.fromEnvironment(),
                 prompt: @escaping @Sendable (String) -> Void = { Log.bluez.notice("\($0)") }) {
        self.pairingAgent = pairingAgent
        self.prompt = prompt
        adapterName = adapter
        self.busAddress = busAddress
        self.report = report
    }

    private func emit(_ event: Event) {
        guard let sink = state.withLock({ $0.closed ? nil : $0.sink }) else { return }
        events.async { sink(event) }
    }

    // MARK: Lifecycle

    package func start(_ events: @escaping @Sendable (Event) -> Void) {
        state.withLock { $0.sink = events }
        Task { await open() }
    }

    private func open() async {
        let started = await BlueZClientStart.run(adapter: adapterName, busAddress: busAddress, pairingAgent: pairingAgent,
                                                 agentPath: Self.agentPath(), prompt: prompt, report: report) { session in
            let keep = state.withLock { state -> Bool in
                guard !state.closed else { return false }
                state.tree = session.tree
                state.adapterPath = session.adapterPath
                state.powered = session.powered
                return true
            }
            guard keep else { return false }
            session.tree.observe { [weak self] change in self?.changed(change) }
            session.connection.onClose { [weak self] error in self?.lost(error) }
            return true
        }
        switch started {
        case .failed: emit(.stateChanged(.unavailable))
        case .dropped: return
        case .started(let powered, let agent):
            registeredAgent.store(agent)
            emit(.stateChanged(powered ? .poweredOn : .poweredOff))
        }
    }

    private func lost(_ error: DBusError) {
        guard !state.load().closed else { return }
        report("lost bluetoothd: \(error.reason); Bluetooth is off")
        emit(.stateChanged(.poweredOff))
    }

    package func shutdown() {
        let (tree, adapter, scanning, links) = state.withLock { state -> (BlueZObjectTree?, String?, Bool, [String]) in
            defer {
                state.closed = true
                state.sink = nil
            }
            return (state.tree, state.adapterPath, state.scanning, state.links.values.map(\.path))
        }
        guard let tree else { return }
        let connection = tree.connection
        if scanning, let adapter {
            connection.call(.call(destination: BlueZObjectTree.service, path: adapter, interface: Self.adapterInterface,
                                  member: "StopDiscovery"), timeout: .seconds(5)) { _ in }
        }
        for path in links {
            connection.call(.call(destination: BlueZObjectTree.service, path: path, interface: Self.deviceInterface,
                                  member: "Disconnect"), timeout: .seconds(5)) { _ in }
        }
        for held in [registeredAgent, promptAgent] {
            held.withLock { agent in defer { agent = nil }; return agent }?.unregisterNow()
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 6) { connection.close() }
    }

    /// A boolean property of `peer`'s Device1 ("Paired", "Bonded"), false when bluetoothd does not know it.
    package func deviceFlag(_ peer: BluetoothAddress, _ name: String) -> Bool {
        devices().first { Self.peer($0.properties) == peer }?.properties[name]?.boolValue == true
    }

    /// Pairs with a connected `peer` (Device1.Pair, at most ``pairLimit``): bluetoothd chooses the method and keeps
    /// the bond; its prompts go to `prompts` through an agent of ours registered for this backend's calls under
    /// `capability` (not as the default: the desktop's agent keeps answering the rest), or to the `OCB_BLUEZ_AGENT`
    /// agent when that one runs (bluetoothd takes one agent per client). Already paired: success (bluetoothd's
    /// AlreadyExists), unless `again`: bluetoothd pairs again only a device it holds no bond with, so the device
    /// is removed first (Adapter1.RemoveDevice, which drops the link), found again by discovery, and paired, which
    /// connects it again; the link stays the same one for the caller.
    package func pair(_ peer: BluetoothAddress, capability: BlueZAgent.Capability, again: Bool,
                      prompts: @escaping BlueZAgent.Handler,
                      completion: @escaping @Sendable (Result<Void, BlueZCallError>) -> Void) {
        guard devicePath(peer) != nil, let connection = state.load().tree?.connection else {
            return completion(.failure(.notConnected("bluetoothd does not know \(peer)")))
        }
        Task { [self] in
            if registeredAgent.load() == nil {
                do throws(DBusError) {
                    try await registerPromptAgent(on: connection, capability: capability, prompts: prompts)
                } catch {
                    return completion(.failure(.failed("bluetoothd did not take our pairing agent: \(error)")))
                }
            }
            if again, deviceFlag(peer, "Paired") {
                do throws(BlueZCallError) {
                    try await forget(peer)
                } catch {
                    endLink(peer: peer, error: error)
                    return completion(.failure(error))
                }
            }
            guard let path = devicePath(peer) else { return completion(.failure(.notConnected("bluetoothd does not know \(peer)"))) }
            // bluetoothd 5.66 answers Pair on a link whose services are resolved only after resolving them again,
            // which never ends (found in the VM: bonding completes, the reply never comes): the Paired property
            // turning true is the success too, whichever comes first.
            let finished = LockedValue(false)
            let finish: @Sendable (Result<Void, BlueZCallError>) -> Void = { [self] result in
                guard finished.withLock({ value in defer { value = true }; return !value }) else { return }
                let replaced = state.withLock { state -> Bool in
                    defer { state.links[peer]?.replacing = false }
                    return state.links[peer]?.replacing == true
                }
                if replaced, case .failure(let error) = result { endLink(peer: peer, error: error) }
                completion(result)
            }
            watchPaired(path, until: finished, finish)
            call(path, Self.deviceInterface, "Pair", timeout: Self.pairLimit) { result in
                switch result {
                case .success:
                    finish(.success(()))
                case .failure(let error) where error.name == "org.bluez.Error.AlreadyExists":
                    finish(.success(()))
                case .failure(let error):
                    finish(.failure(error.code == .timedOut ? .timedOut("bluetoothd: \(error)") : .failed(Self.pairFailure(error))))
                }
            }
        }
    }

    /// bluetoothd's pairing errors (doc/org.bluez.Device.rst, Pair) as one phrase, its own words after it.
    static func pairFailure(_ error: DBusError) -> String {
        let phrases = [
            "org.bluez.Error.AuthenticationFailed": "authentication failed",
            "org.bluez.Error.AuthenticationRejected": "the pairing was rejected",
            "org.bluez.Error.AuthenticationCanceled": "the pairing was cancelled",
            "org.bluez.Error.AuthenticationTimeout": "the pairing timed out",
            "org.bluez.Error.ConnectionAttemptFailed": "the connection attempt failed",
            "org.bluez.Error.InProgress": "a pairing is already in progress",
        ]
        guard let name = error.name, let phrase = phrases[name] else { return "bluetoothd: \(error)" }
        return "\(phrase) (bluetoothd: \(error.reason))"
    }

    /// Our agent for the pairings this backend asks for, registered under `capability` (again when another one is
    /// asked for).
    private func registerPromptAgent(on connection: DBusConnection, capability: BlueZAgent.Capability,
                                     prompts: @escaping BlueZAgent.Handler) async throws(DBusError) {
        if let current = promptAgent.load() {
            if current.capability == capability { return }
            promptAgent.store(nil)
            await current.unregister()
        }
        let agent = try await BlueZAgent.register(on: connection, path: Self.agentPath(), capability: capability, handler: prompts)
        let keep = promptAgent.withLock { current -> Bool in
            guard current == nil, !state.load().closed else { return false }
            current = agent
            return true
        }
        if !keep { await agent.unregister() }
    }

    /// Removes `peer` from bluetoothd (its bond with it) while keeping the link for the caller, and waits until
    /// discovery finds the device again (at most ``rediscoveryLimit``).
    private func forget(_ peer: BluetoothAddress) async throws(BlueZCallError) {
        guard let path = devicePath(peer), let adapter = state.load().adapterPath else {
            throw .notConnected("bluetoothd does not know \(peer)")
        }
        state.withLock { $0.links[peer]?.replacing = true }
        do {
            _ = try await callAsync(adapter, Self.adapterInterface, "RemoveDevice", [.objectPath(path)])
        } catch {
            throw .failed("bluetoothd did not remove the bond of \(peer): \(error)")
        }
        let discovering = state.load().scanning
        if !discovering {
            _ = try? await callAsync(adapter, Self.adapterInterface, "SetDiscoveryFilter", [.properties(["Transport": .string("le")])])
            _ = try? await callAsync(adapter, Self.adapterInterface, "StartDiscovery")
        }
        let clock = ContinuousClock()
        let deadline = clock.now + Self.rediscoveryLimit
        while devicePath(peer) == nil, clock.now < deadline, !state.load().closed {
            try? await Task.sleep(for: .milliseconds(100))
        }
        if !discovering, !state.load().scanning { _ = try? await callAsync(adapter, Self.adapterInterface, "StopDiscovery") }
        guard devicePath(peer) != nil else {
            throw .notConnected("bluetoothd did not find \(peer) again within \(Self.rediscoveryLimit) after forgetting it")
        }
    }

    /// How long a device forgotten to be paired again may take to be found again.
    static let rediscoveryLimit: Duration = .seconds(30)

    /// Checks the device's Paired property every 200 ms until `finished`; true calls `finish` with success.
    private func watchPaired(_ path: String, until finished: LockedValue<Bool>,
                             _ finish: @escaping @Sendable (Result<Void, BlueZCallError>) -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) { [weak self] in
            guard let self, !finished.load(), !state.load().closed else { return }
            if state.load().tree?.properties(path, Self.deviceInterface)?["Paired"]?.boolValue == true {
                return finish(.success(()))
            }
            watchPaired(path, until: finished, finish)
        }
    }

    /// How long bluetoothd may take to pair (a person types a passkey within it).
    package static let pairLimit: Duration = .seconds(90)

    private static let agentCounter = LockedValue(0)

    /// A path of its own for each backend's agent (bluetoothd tells agents apart by bus name and path).
    private static func agentPath() -> String {
        let number = agentCounter.withLock { value -> Int in
            value += 1
            return value
        }
        return "/org/opencorebluetooth/central\(number)/agent"
    }

    // MARK: Calls

    private func call(_ path: String, _ interface: String, _ member: String, _ body: [DBusValue] = [],
                      timeout: Duration = .seconds(30),
                      completion: @escaping @Sendable (Result<DBusMessage, DBusError>) -> Void) {
        guard let tree = state.load().tree else {
            return completion(.failure(DBusError(.disconnected, "bluetoothd is not connected")))
        }
        tree.connection.call(.call(destination: BlueZObjectTree.service, path: path, interface: interface, member: member,
                                   body: body), timeout: timeout, completion: completion)
    }

    private func callAsync(_ path: String, _ interface: String, _ member: String, _ body: [DBusValue] = [],
                           timeout: Duration = .seconds(30)) async throws(DBusError) -> DBusMessage {
        guard let tree = state.load().tree else { throw DBusError(.disconnected, "bluetoothd is not connected") }
        return try await tree.connection.call(.call(destination: BlueZObjectTree.service, path: path, interface: interface,
                                                    member: member, body: body), timeout: timeout)
    }

    private static func callError(_ error: DBusError, reading: Bool) -> BlueZCallError {
        if let code = BlueZErrors.attErrorCode(error, reading: reading) { return .att(code) }
        return error.code == .timedOut ? .timedOut("bluetoothd: \(error)") : .failed("bluetoothd: \(error)")
    }

    // MARK: Scanning

    /// Starts bluetoothd's LE discovery (filtered to `serviceUUIDs` when given; every advertisement reported when
    /// `allowDuplicates`).
    package func startScan(serviceUUIDs: [BluetoothUUID]?, allowDuplicates: Bool) {
        guard let adapter = state.withLock({ state -> String? in
            state.scanning = true
            return state.adapterPath
        }) else { return }
        var filter: [String: DBusValue] = ["Transport": .string("le"), "DuplicateData": .boolean(allowDuplicates)]
        if let uuids = serviceUUIDs, !uuids.isEmpty {
            filter["UUIDs"] = .array(.string, uuids.map { .string($0.fullString.lowercased()) })
        }
        call(adapter, Self.adapterInterface, "SetDiscoveryFilter", [.properties(filter)]) { [self] _ in
            call(adapter, Self.adapterInterface, "StartDiscovery") { result in
                if case .failure(let error) = result, error.name != "org.bluez.Error.InProgress" {
                    self.report("bluetoothd did not start discovery: \(error)")
                }
            }
            // Devices bluetoothd already knows and sees advertising now report as their properties change; report
            // the ones with a fresh RSSI at once, as a scan would.
            for device in self.devices() where device.properties["RSSI"] != nil {
                if let report = Self.scanReport(device.properties) { emit(.advertisement(report)) }
            }
        }
    }

    package func stopScan() {
        guard let adapter = state.withLock({ state -> String? in
            defer { state.scanning = false }
            return state.scanning ? state.adapterPath : nil
        }) else { return }
        call(adapter, Self.adapterInterface, "StopDiscovery") { _ in }
    }

    private func devices() -> [(path: String, properties: [String: DBusValue])] {
        let (tree, adapter) = state.withLock { ($0.tree, $0.adapterPath) }
        guard let tree, let adapter else { return [] }
        return tree.objects(with: Self.deviceInterface).filter { BlueZPaths.isUnder($0.path, adapter) }
    }

    /// A Device1's identity: its Address and AddressType.
    package static func peer(_ properties: [String: DBusValue]) -> BluetoothAddress? {
        guard let text = properties["Address"]?.stringValue else { return nil }
        let type: BluetoothAddress.AddressType = properties["AddressType"]?.stringValue == "random" ? .random : .public
        guard let address = try? BluetoothAddress(string: text, type: type) else { return nil }
        return address
    }

    /// What a Device1 says of its advertising (Name, UUIDs, ManufacturerData a{qv}, ServiceData a{sv}, TxPower,
    /// RSSI), as the report our host gives (Core Supplement Part A): the decoded fields rebuilt into AD structures,
    /// since bluetoothd reports properties, not packets. Connectable: bluetoothd does not say.
    package static func scanReport(_ properties: [String: DBusValue]) -> ScanReport? {
        guard let address = peer(properties) else { return nil }
        var structures: [ADStructure] = []
        if let name = properties["Name"]?.stringValue { structures.append(.localName(LocalName(name), complete: true)) }
        let uuids = (properties["UUIDs"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap { try? BluetoothUUID(string: $0) } }
        let short = uuids.compactMap(\.uuid16)
        if !short.isEmpty { structures.append(.serviceUUIDs16(short, complete: true)) }
        let long = uuids.filter { $0.uuid16 == nil }
        if !long.isEmpty { structures.append(.serviceUUIDs128(long, complete: true)) }
        var serviceData: [(BluetoothUUID, [UInt8])] = []
        for (key, value) in properties["ServiceData"]?.dictionaryValue ?? [:] {
            if let uuid = try? BluetoothUUID(string: key), let bytes = value.bytesValue { serviceData.append((uuid, bytes)) }
        }
        for (uuid, data) in serviceData.sorted(by: { $0.0.uuidString < $1.0.uuidString }) {
            structures.append(uuid.uuid16.map { .serviceData16($0, data: data) } ?? .serviceData128(uuid, data: data))
        }
        if let power = properties["TxPower"]?.intValue { structures.append(.txPowerLevel(Int8(clamping: power))) }
        if case .array(_, let entries)? = properties["ManufacturerData"], case .dictEntry(let key, let value)? = entries.first,
           let company = key.intValue, let bytes = value.bytesValue {
            structures.append(.manufacturerData(CompanyIdentifier(rawValue: UInt16(truncatingIfNeeded: company)), data: bytes))
        }
        let data = AdvertisingData(structures)
        return ScanReport(address: address, addressType: address.type == .random ? .random : .public,
                          rssi: Int8(clamping: properties["RSSI"]?.intValue ?? 127), eventType: .advInd, isConnectable: true,
                          // bluetoothd merges the scan response into the device's properties: nothing more will come.
                          advertisingData: data, rawAdvertisingData: data.encode(), rawScanResponse: [])
    }

    // MARK: Changes from bluetoothd (reader thread)

    private func changed(_ change: BlueZObjectTree.Change) {
        switch change {
        case .added(let path, Self.deviceInterface, _), .changed(let path, Self.deviceInterface, _):
            deviceChanged(path, change)
        case .changed(let path, Self.adapterInterface, let properties):
            guard let powered = properties["Powered"]?.boolValue else { return }
            let report = state.withLock { state -> Bool in
                guard path == state.adapterPath, state.powered != powered else { return false }
                state.powered = powered
                return true
            }
            if report { emit(.stateChanged(powered ? .poweredOn : .poweredOff)) }
        case .changed(let path, Self.characteristicInterface, let properties):
            guard let value = properties["Value"]?.bytesValue,
                  let target = state.withLock({ $0.notifying[path] }) else { return }
            emit(.valueUpdated(target.peer, handle: target.handle, value: value))
        case .removed(let path, Self.deviceInterface):
            endLink(devicePath: path, error: .peerDisconnected("bluetoothd removed the device"))
        default:
            return
        }
    }

    private func deviceChanged(_ path: String, _ change: BlueZObjectTree.Change) {
        guard let tree = state.load().tree, let properties = tree.properties(path, Self.deviceInterface) else { return }
        let changed: [String: DBusValue]
        switch change {
        case .added(_, _, let all): changed = all
        case .changed(_, _, let some): changed = some
        case .removed: return
        }
        if state.load().scanning,
           !Set(changed.keys).isDisjoint(with: ["RSSI", "Name", "UUIDs", "ManufacturerData", "ServiceData", "TxPower"]),
           let report = Self.scanReport(properties) {
            emit(.advertisement(report))
        }
        if changed["Connected"]?.boolValue == false {
            endLink(devicePath: path, error: .peerDisconnected("the peripheral disconnected"))
        }
        if changed["ServicesResolved"]?.boolValue == true {
            let release: @Sendable () -> Void = { [self] in
                let waiters = state.withLock { $0.waitingForServices.removeValue(forKey: path) ?? [] }
                for waiter in waiters { waiter(true) }
            }
            let characteristics = tree.objects(with: Self.characteristicInterface).filter { BlueZPaths.isUnder($0.path, path) }
            guard let peer = Self.peer(properties), state.load().links[peer] != nil else { return release() }
            if let mtu = characteristics.first?.properties["MTU"]?.intValue {
                // The ATT MTU bluetoothd exchanged, as its characteristics say (MTU, BlueZ 5.62 and later).
                if mtu > 23 { emit(.mtuChanged(peer, mtu: mtu)) }
                release()
            } else if let writable = characteristics.first(where: { $0.properties["WriteAcquired"] != nil }) {
                // Older bluetoothd: AcquireWrite's answer carries the MTU (the socket is released at once, so
                // that WriteValue stays usable). The services are reported after it, with the MTU known.
                call(writable.path, Self.characteristicInterface, "AcquireWrite", [.properties([:])], timeout: .seconds(10)) { [self] result in
                    if case .success(let reply) = result {
                        reply.closeFileDescriptors()
                        if reply.body.count == 2, let mtu = reply.body[1].intValue, mtu > 23 { emit(.mtuChanged(peer, mtu: mtu)) }
                    }
                    release()
                }
            } else {
                release()
            }
        }
        if let name = changed["Name"]?.stringValue, let peer = Self.peer(properties),
           state.load().links[peer] != nil {
            emit(.nameUpdated(peer, name))
        }
    }

    private func endLink(devicePath: String, error: BlueZCallError) {
        guard let peer = state.load().links.first(where: { $0.value.path == devicePath })?.key else { return }
        endLink(peer: peer, error: error, unlessReplacing: true)
    }

    private func endLink(peer: BluetoothAddress, error: BlueZCallError, unlessReplacing: Bool = false) {
        let ended = state.withLock { state -> (path: String, ended: Bool, cancelled: Bool)? in
            guard let link = state.links[peer] else { return nil }
            state.notifying = state.notifying.filter { $0.value.peer != peer }
            if unlessReplacing, link.replacing {
                state.links[peer]?.attributes = [:]
                return (link.path, false, false)
            }
            state.links[peer] = nil
            return (link.path, true, link.cancelled)
        }
        guard let ended else { return }
        let waiters = state.withLock { $0.waitingForServices.removeValue(forKey: ended.path) ?? [] }
        for waiter in waiters { waiter(false) }
        if ended.ended { emit(.disconnected(peer, ended.cancelled ? nil : error)) }
    }

    // MARK: Connections

    private func devicePath(_ peer: BluetoothAddress) -> String? {
        devices().first { Self.peer($0.properties) == peer }?.path
    }

    package func connect(_ peer: BluetoothAddress) {
        guard let path = devicePath(peer) else {
            emit(.connectionFailed(peer, .unknownDevice("bluetoothd does not know \(peer) (scan first)")))
            return
        }
        call(path, Self.deviceInterface, "Connect", timeout: .seconds(40)) { [self] result in
            switch result {
            case .success:
                let fresh = state.withLock { state -> Bool in
                    guard state.links[peer] == nil else { return false }
                    state.links[peer] = Link(path: path)
                    return true
                }
                guard fresh else { return }
                let mtu = state.load().tree?.objects(with: Self.characteristicInterface)
                    .first { BlueZPaths.isUnder($0.path, path) }?.properties["MTU"]?.intValue ?? 23
                emit(.connected(peer, mtu: mtu))
            case .failure(let error):
                emit(.connectionFailed(peer, .connectionFailed("bluetoothd: \(error)")))
            }
        }
    }

    package func cancelConnection(_ peer: BluetoothAddress) {
        let path = state.withLock { state -> String? in
            state.links[peer]?.cancelled = true
            return state.links[peer]?.path
        } ?? devicePath(peer)
        guard let path else { return }
        call(path, Self.deviceInterface, "Disconnect") { _ in }
    }

    package func knownPeers() -> [BluetoothAddress] {
        devices().filter { $0.properties["Paired"]?.boolValue == true }.compactMap { Self.peer($0.properties) }
    }

    // MARK: GATT

    /// Runs `body` once bluetoothd resolved the services of the linked `peer` (at most 30 s).
    private func whenResolved(_ peer: BluetoothAddress, _ given: @escaping @Sendable (Result<String, BlueZCallError>) -> Void) {
        // Through the event queue: an MTU change emitted when the services resolved reaches the façade first.
        let body: @Sendable (Result<String, BlueZCallError>) -> Void = { [events] result in events.async { given(result) } }
        guard let path = state.load().links[peer]?.path else {
            return body(.failure(.notConnected("\(peer) is not connected")))
        }
        if state.load().tree?.properties(path, Self.deviceInterface)?["ServicesResolved"]?.boolValue == true {
            return body(.success(path))
        }
        let once = LockedValue<(@Sendable (Bool) -> Void)?>(nil)
        let waiter: @Sendable (Bool) -> Void = { resolved in
            let pending = once.withLock { value in
                defer { value = nil }
                return value
            }
            pending?(resolved)
        }
        once.store { resolved in
            body(resolved ? .success(path) : .failure(.notConnected("the link ended before bluetoothd resolved the services")))
        }
        state.withLock { $0.waitingForServices[path, default: []].append(waiter) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 30) {
            once.withLock { value in
                guard let pending = value else { return }
                value = nil
                pending(false)
            }
        }
    }

    /// The attributes of `interface` under `parent`, with the handle in their name, by handle.
    private func attributes(_ interface: String, under parent: String) -> [(handle: UInt16, path: String, properties: [String: DBusValue])] {
        (state.load().tree?.objects(with: interface) ?? [])
            .filter { $0.path.hasPrefix(parent + "/") && !$0.path.dropFirst(parent.count + 1).contains("/") }
            .compactMap { entry in BlueZPaths.handle(of: entry.path).map { ($0, entry.path, entry.properties) } }
            .sorted { $0.handle < $1.handle }
    }

    /// The highest attribute handle bluetoothd has below `path` (`start` when none).
    private func lastHandle(under path: String, from start: UInt16) -> UInt16 {
        guard let tree = state.load().tree else { return start }
        var last = start
        for interface in [Self.characteristicInterface, Self.descriptorInterface] {
            for entry in tree.objects(with: interface) where BlueZPaths.isUnder(entry.path, path) {
                guard let handle = BlueZPaths.handle(of: entry.path) else { continue }
                last = max(last, interface == Self.characteristicInterface ? handle &+ 1 : handle)
            }
        }
        return last
    }

    private func remember(_ peer: BluetoothAddress, _ handle: UInt16, _ path: String) {
        state.withLock { $0.links[peer]?.attributes[handle] = path }
    }

    private func attributePath(_ peer: BluetoothAddress, _ handle: UInt16) -> String? {
        state.load().links[peer]?.attributes[handle]
    }

    package func discoverServices(_ peer: BluetoothAddress, uuids: [BluetoothUUID]?,
                          completion: @escaping @Sendable (Result<[BlueZRemoteService], BlueZCallError>) -> Void) {
        whenResolved(peer) { [self] resolved in
            guard case .success(let device) = resolved else { return completion(resolved.map { _ in [] }) }
            let found = attributes(Self.serviceInterface, under: device)
            var services: [BlueZRemoteService] = []
            for (index, entry) in found.enumerated() {
                guard let uuid = entry.properties["UUID"]?.stringValue.flatMap({ try? BluetoothUUID(string: $0) }) else { continue }
                remember(peer, entry.handle, entry.path)
                // bluetoothd does not say where a service ends: before the next one, or at the last attribute it
                // has (a characteristic's value follows its declaration).
                let end = index + 1 < found.count ? found[index + 1].handle - 1 : lastHandle(under: entry.path, from: entry.handle)
                services.append(BlueZRemoteService(uuid: uuid, isPrimary: entry.properties["Primary"]?.boolValue ?? true,
                                                 startHandle: entry.handle, endHandle: end))
            }
            if let uuids { services = services.filter { uuids.contains($0.uuid) } }
            completion(.success(services))
        }
    }

    package func discoverIncludedServices(_ peer: BluetoothAddress, in service: BlueZRemoteService, uuids: [BluetoothUUID]?,
                                  completion: @escaping @Sendable (Result<[BlueZRemoteService], BlueZCallError>) -> Void) {
        // bluetoothd lists includes as object paths (GattService1.Includes) of services already discovered.
        guard let path = attributePath(peer, service.startHandle),
              let includes = state.load().tree?.properties(path, Self.serviceInterface)?["Includes"]?.arrayValue else {
            return completion(.success([]))
        }
        discoverServices(peer, uuids: nil) { result in
            completion(result.map { all in
                let handles = Set(includes.compactMap { $0.stringValue.flatMap(BlueZPaths.handle(of:)) })
                return all.filter { handles.contains($0.startHandle) && (uuids?.contains($0.uuid) ?? true) }
            })
        }
    }

    package static let propertyBits: [String: UInt8] = [
        "broadcast": 0x01, "read": 0x02, "write-without-response": 0x04, "write": 0x08, "notify": 0x10,
        "indicate": 0x20, "authenticated-signed-writes": 0x40, "extended-properties": 0x80,
    ]

    package func discoverCharacteristics(_ peer: BluetoothAddress, in service: BlueZRemoteService, uuids: [BluetoothUUID]?,
                                 completion: @escaping @Sendable (Result<[GATTDiscoveredCharacteristic], BlueZCallError>) -> Void) {
        guard let servicePath = attributePath(peer, service.startHandle) else {
            return completion(.failure(.invalidHandle("no service at handle \(service.startHandle)")))
        }
        let found = attributes(Self.characteristicInterface, under: servicePath)
        var characteristics: [GATTDiscoveredCharacteristic] = []
        for (index, entry) in found.enumerated() {
            guard let uuid = entry.properties["UUID"]?.stringValue.flatMap({ try? BluetoothUUID(string: $0) }) else { continue }
            // The path names the declaration; the value is the next attribute (Core 5.4 Vol 3 Part G §3.3.2).
            let valueHandle = entry.handle &+ 1
            remember(peer, valueHandle, entry.path)
            let flags = (entry.properties["Flags"]?.arrayValue ?? []).compactMap(\.stringValue)
            let properties = flags.reduce(UInt8(0)) { $0 | (Self.propertyBits[$1] ?? 0) }
            let end = index + 1 < found.count ? found[index + 1].handle - 1 : service.endHandle
            characteristics.append(GATTDiscoveredCharacteristic(declarationHandle: entry.handle, properties: .init(rawValue: properties),
                                                                valueHandle: valueHandle, uuid: uuid, endHandle: max(end, valueHandle)))
        }
        if let uuids { characteristics = characteristics.filter { uuids.contains($0.uuid) } }
        completion(.success(characteristics))
    }

    /// The descriptors of the characteristic whose value has `valueHandle`.
    package func discoverDescriptors(_ peer: BluetoothAddress, valueHandle: UInt16,
                                     completion: @escaping @Sendable (Result<[GATTDiscoveredDescriptor], BlueZCallError>) -> Void) {
        guard let path = attributePath(peer, valueHandle) else {
            return completion(.failure(.invalidHandle("no characteristic at handle \(valueHandle)")))
        }
        let descriptors = attributes(Self.descriptorInterface, under: path).compactMap { entry -> GATTDiscoveredDescriptor? in
            guard let uuid = entry.properties["UUID"]?.stringValue.flatMap({ try? BluetoothUUID(string: $0) }) else { return nil }
            remember(peer, entry.handle, entry.path)
            return GATTDiscoveredDescriptor(handle: entry.handle, uuid: uuid)
        }
        completion(.success(descriptors))
    }

    private func interface(of path: String) -> String {
        path.split(separator: "/").last?.hasPrefix("desc") == true ? Self.descriptorInterface : Self.characteristicInterface
    }

    package func read(_ peer: BluetoothAddress, handle: UInt16, completion: @escaping @Sendable (Result<[UInt8], BlueZCallError>) -> Void) {
        guard let path = attributePath(peer, handle) else {
            return completion(.failure(.invalidHandle("no attribute at handle \(handle)")))
        }
        call(path, interface(of: path), "ReadValue", [.properties([:])]) { result in
            switch result {
            case .success(let reply): completion(.success(reply.body.first?.bytesValue ?? []))
            case .failure(let error): completion(.failure(Self.callError(error, reading: true)))
            }
        }
    }

    package func write(_ peer: BluetoothAddress, handle: UInt16, value: [UInt8], completion: @escaping @Sendable (Result<Void, BlueZCallError>) -> Void) {
        guard let path = attributePath(peer, handle) else {
            return completion(.failure(.invalidHandle("no attribute at handle \(handle)")))
        }
        let options: [String: DBusValue] = interface(of: path) == Self.characteristicInterface ? ["type": .string("request")] : [:]
        call(path, interface(of: path), "WriteValue", [.bytes(value), .properties(options)]) { result in
            completion(result.map { _ in () }.mapError { Self.callError($0, reading: false) })
        }
    }

    /// A Write Command is WriteValue with `type` command; bluetoothd answers once it queued it for the link. At
    /// most ``commandWindow`` unanswered ones: the one that fills the window is sent and the answer is "no room",
    /// and `readyToSendWriteWithoutResponse` follows when bluetoothd answered enough of them (CoreBluetooth's
    /// `canSendWriteWithoutResponse` and `peripheralIsReady(toSendWriteWithoutResponse:)`).
    package func writeWithoutResponse(_ peer: BluetoothAddress, handle: UInt16, value: [UInt8]) -> Bool {
        guard let path = attributePath(peer, handle) else { return true }
        let room = state.withLock { state -> Bool in
            guard var link = state.links[peer] else { return true }
            link.commandsInFlight += 1
            let room = link.commandsInFlight < Self.commandWindow
            if !room { link.owesReady = true }
            state.links[peer] = link
            return room
        }
        call(path, Self.characteristicInterface, "WriteValue", [.bytes(value), .properties(["type": .string("command")])]) { [self] _ in
            let ready = state.withLock { state -> Bool in
                guard var link = state.links[peer] else { return false }
                link.commandsInFlight = max(0, link.commandsInFlight - 1)
                let ready = link.owesReady && link.commandsInFlight < Self.commandWindow / 2
                if ready { link.owesReady = false }
                state.links[peer] = link
                return ready
            }
            if ready { emit(.readyToSendWriteWithoutResponse(peer)) }
        }
        return room
    }

    /// StartNotify or StopNotify on the characteristic whose value has `valueHandle` (bluetoothd writes the CCCD).
    package func setNotifications(_ peer: BluetoothAddress, valueHandle: UInt16, enabled: Bool,
                                  completion: @escaping @Sendable (Result<Void, BlueZCallError>) -> Void) {
        guard let path = attributePath(peer, valueHandle) else {
            return completion(.failure(.invalidHandle("no characteristic at handle \(valueHandle)")))
        }
        if enabled { state.withLock { $0.notifying[path] = (peer, valueHandle) } }
        call(path, Self.characteristicInterface, enabled ? "StartNotify" : "StopNotify") { [self] result in
            if !enabled || (try? result.get()) == nil { state.withLock { _ = $0.notifying.removeValue(forKey: path) } }
            completion(result.map { _ in () }.mapError { Self.callError($0, reading: true) })
        }
    }

    package func readRSSI(_ peer: BluetoothAddress, completion: @escaping @Sendable (Result<Int, BlueZCallError>) -> Void) {
        if let path = state.load().links[peer]?.path,
           let rssi = state.load().tree?.properties(path, Self.deviceInterface)?["RSSI"]?.intValue {
            return completion(.success(rssi))
        }
        completion(.failure(.unsupported("bluetoothd reports a device's RSSI only while discovering")))
    }

    package func openL2CAPChannel(_ peer: BluetoothAddress, psm: UInt16,
                          completion: @escaping @Sendable (Result<BlueZL2CAPChannel, BlueZCallError>) -> Void) {
        // The kernel carries the channel on the link bluetoothd made (Core 5.4 Vol 3 Part A §4.22); its connect blocks
        // until the peer answers or the kernel's L2CAP timeout.
        let (tree, adapter, linked) = state.withLock { ($0.tree, $0.adapterPath, $0.links[peer] != nil) }
        guard linked else { return completion(.failure(.notConnected("\(peer) is not connected"))) }
        guard let local = BlueZL2CAPSocket.adapterAddress(tree, adapter) else {
            return completion(.failure(.failed("bluetoothd does not say the adapter's address")))
        }
        DispatchQueue.global().async {
            do throws(BlueZL2CAPSocket.Failure) {
                let fd = try BlueZL2CAPSocket.open(local: local, psm: 0, encrypted: false)
                do throws(BlueZL2CAPSocket.Failure) {
                    try BlueZL2CAPSocket.connect(fd, to: peer, psm: psm)
                } catch {
                    POSIX.closeDescriptor(fd)
                    throw error
                }
                guard let channel = BlueZL2CAPChannel(fd: fd, psm: psm, peer: peer) else {
                    throw BlueZL2CAPSocket.Failure(description: "cannot make the channel's wake pipe")
                }
                completion(.success(channel))
            } catch {
                completion(.failure(.connectionFailed(error.description)))
            }
        }
    }
}
