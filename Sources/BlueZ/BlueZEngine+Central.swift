import AdvertisingData
package import BluetoothCore
package import BluetoothEngine
import BluetoothRuntime
import DBus
import Dispatch
import HCI

/// The engine's D-Bus session and the central role on bluetoothd (Core 5.4 Vol 3 Part C §9: discovery and the
/// connection establishment procedures) through Adapter1 and Device1.
///
/// Mapping: a peer is the Device1's Address and AddressType; advertisements are the Device1 properties bluetoothd
/// updates while discovering (RSSI, Name, UUIDs, ManufacturerData, ServiceData), rebuilt into a ``ScanReport``
/// (``BlueZDevice/scanReport(_:)``); a connection is Device1.Connect (its end, Connected false or the object
/// removed); the ATT_MTU is the characteristics' MTU property (BlueZ 5.62 and later), else AcquireWrite's answer (the
/// socket released at once), else 23, known once ServicesResolved; a notification is the Value property changing on
/// a characteristic we started notifying. The RSSI of a connected peer is known only while discovering.
extension BlueZEngine {
    // MARK: The session

    /// Connects to bluetoothd, picks the adapter, follows its objects, registers the `OCB_BLUEZ_AGENT` agent when
    /// one is asked for, and says the adapter's first state (on the loop); what went wrong is the first line
    /// ``reported``.
    func openSession() {
        let (adapter, bus, agent, prompt, path) = (adapterName, busAddress, pairingAgent, prompt, root + "/agent")
        Task { [weak self] in
            let opened: BlueZAdapterSession
            do throws(DBusError) {
                opened = try await BlueZAdapterSession.open(adapter: adapter, busAddress: bus)
            } catch {
                guard let engine = self else { return }
                engine.reported.withLock { $0 = $0 ?? "no BlueZ backend: \(error)" }
                return engine.onLoop { engine.stateChanged(.unavailable) }
            }
            guard let engine = self, !engine.closing.load() else { return opened.connection.close() }
            engine.sessionBox.store(opened)
            opened.tree.observe { [weak engine] change in
                guard let engine else { return }
                engine.onLoop { engine.changed(change) }
            }
            opened.connection.onClose { [weak engine] error in
                guard let engine else { return }
                engine.onLoop { engine.lost(error) }
            }
            var registered: BlueZAgent?
            if let agent {
                do {
                    registered = try await agent.register(on: opened.connection, path: path, report: prompt)
                } catch {
                    // The engine runs without it (bluetoothd's default agent answers): said, not fatal.
                    Log.bluez.error("bluetoothd did not take our pairing agent (\(BlueZPairingAgent.environmentVariable)): \(error)")
                }
            }
            engine.onLoop { [registered] in
                engine.environmentAgent = registered
                engine.stateChanged(opened.powered ? .poweredOn : .poweredOff)
            }
        }
    }

    /// Ends the session (at shutdown, on the loop): discovery stopped, central links disconnected, agents
    /// unregistered (each call on the bus when this returns); the connection closes 6 s later, after the answers.
    func closeSession() {
        closing.store(true)
        guard let session else { return }
        let connection = session.tree.connection
        let send = { (path: String, interface: String, member: String, body: [DBusValue]) in
            connection.call(.call(destination: BlueZObjectTree.service, path: path, interface: interface, member: member, body: body),
                            timeout: .seconds(5)) { _ in }
        }
        if scanning { send(session.adapterPath, BlueZAdapterSession.adapterInterface, "StopDiscovery", []) }
        for link in links.values.sorted(by: { $0.connection.handle < $1.connection.handle }) {
            if link.connection.role == .central, let path = link.path { send(path, BlueZDevice.interface, "Disconnect", []) }
        }
        environmentAgent?.unregisterNow()
        environmentAgent = nil
        promptAgent.withLock { agent in defer { agent = nil }; return agent }?.unregisterNow()
        DispatchQueue.global().asyncAfter(deadline: .now() + 6) { connection.close() }
    }

    private func lost(_ error: DBusError) {
        if case .closed = phase { return }
        reported.withLock { $0 = $0 ?? "lost bluetoothd: \(error.reason); Bluetooth is off" }
        stateChanged(.poweredOff)
    }

    /// Calls `member` of `interface` on bluetoothd's object `path`; the completion runs on the loop.
    func call(_ path: String, _ interface: String, _ member: String, _ body: [DBusValue] = [], timeout: Duration = .seconds(30),
              completion: @escaping @Sendable (Result<DBusMessage, DBusError>) -> Void) {
        guard let session else { return completion(.failure(DBusError(.disconnected, "bluetoothd is not connected"))) }
        session.tree.connection.call(.call(destination: BlueZObjectTree.service, path: path, interface: interface, member: member,
                                           body: body), timeout: timeout) { [weak self] result in
            guard let engine = self else { return }
            engine.onLoop { completion(result) }
        }
    }

    /// ``call(_:_:_:_:timeout:completion:)`` awaited (the caller is back on the loop with `onLoop`).
    func callAsync(_ path: String, _ interface: String, _ member: String, _ body: [DBusValue] = []) async throws(DBusError) -> DBusMessage {
        guard let session else { throw DBusError(.disconnected, "bluetoothd is not connected") }
        return try await session.tree.connection.call(.call(destination: BlueZObjectTree.service, path: path, interface: interface,
                                                            member: member, body: body), timeout: .seconds(30))
    }

    /// The devices bluetoothd has under the adapter.
    func devices() -> [(path: String, properties: [String: DBusValue])] {
        guard let session else { return [] }
        return session.tree.objects(with: BlueZDevice.interface).filter { BlueZPaths.isUnder($0.path, session.adapterPath) }
    }

    func devicePath(_ peer: BluetoothAddress) -> String? {
        devices().first { BlueZDevice.peer($0.properties) == peer }?.path
    }

    /// A boolean property of `peer`'s Device1 ("Paired", "Bonded"), false when bluetoothd does not know it.
    func deviceFlag(_ peer: BluetoothAddress, _ name: String) -> Bool {
        devices().first { BlueZDevice.peer($0.properties) == peer }?.properties[name]?.boolValue == true
    }

    // MARK: Changes bluetoothd signals (on the loop)

    private func changed(_ change: BlueZObjectTree.Change) {
        if case .closed = phase { return }
        switch change {
        case .added(let path, BlueZDevice.interface, _), .changed(let path, BlueZDevice.interface, _):
            deviceChanged(path, change)
        case .changed(let path, BlueZAdapterSession.adapterInterface, let properties):
            guard path == session?.adapterPath, let powered = properties["Powered"]?.boolValue, powered != adapterPowered else { return }
            stateChanged(powered ? .poweredOn : .poweredOff)
        case .changed(let path, "org.bluez.GattCharacteristic1", let properties):
            guard let value = properties["Value"]?.bytesValue, let target = notifying[path] else { return }
            emit(.gattNotification(handle: target.link, attributeHandle: target.attribute, value: value))
        case .removed(let path, BlueZDevice.interface):
            centralLinkEnded(devicePath: path, reason: .remoteUserTerminatedConnection)
        default:
            break
        }
        applicationDeviceChanged(change)
    }

    private func deviceChanged(_ path: String, _ change: BlueZObjectTree.Change) {
        guard let properties = session?.tree.properties(path, BlueZDevice.interface) else { return }
        let changed: [String: DBusValue]
        switch change {
        case .added(_, _, let all): changed = all
        case .changed(_, _, let some): changed = some
        case .removed: return
        }
        if scanning, !Set(changed.keys).isDisjoint(with: ["RSSI", "Name", "UUIDs", "ManufacturerData", "ServiceData", "TxPower"]),
           let report = BlueZDevice.scanReport(properties) {
            heardAdvertisement(report)
        }
        if changed["Connected"]?.boolValue == false { centralLinkEnded(devicePath: path, reason: .remoteUserTerminatedConnection) }
        let handle = links.first { $0.value.path == path }?.key
        if changed["ServicesResolved"]?.boolValue == true {
            guard let handle else { return releaseServiceWaiters(path, resolved: true) }
            let characteristics = session?.tree.objects(with: "org.bluez.GattCharacteristic1").filter { BlueZPaths.isUnder($0.path, path) } ?? []
            if let mtu = characteristics.first?.properties["MTU"]?.intValue {
                // The ATT MTU bluetoothd exchanged, as its characteristics say (MTU, BlueZ 5.62 and later).
                mtuChanged(handle, mtu)
                releaseServiceWaiters(path, resolved: true)
            } else if let writable = characteristics.first(where: { $0.properties["WriteAcquired"] != nil }) {
                // Older bluetoothd: AcquireWrite's answer carries the MTU (the socket is released at once, so that
                // WriteValue stays usable). The services are reported after it, with the MTU known.
                call(writable.path, "org.bluez.GattCharacteristic1", "AcquireWrite", [.properties([:])], timeout: .seconds(10)) { [self] result in
                    if case .success(let reply) = result {
                        reply.closeFileDescriptors()
                        if reply.body.count == 2, let mtu = reply.body[1].intValue { mtuChanged(handle, mtu) }
                    }
                    releaseServiceWaiters(path, resolved: true)
                }
            } else {
                releaseServiceWaiters(path, resolved: true)
            }
        }
        if let name = changed["Name"]?.stringValue, handle != nil, let peer = BlueZDevice.peer(properties) {
            emit(.peerNameUpdated(peer: peer, name: name))
        }
    }

    /// A report while scanning; with duplicates filtered, only when the device's advertising changed (bluetoothd
    /// signals each RSSI change; a controller's duplicate filter reports a device again when its data changed).
    func heardAdvertisement(_ report: ScanReport) {
        guard scanning else { return }
        if heard != nil {
            guard heard?[report.address] != report.advertisingData else { return }
            heard?[report.address] = report.advertisingData
        }
        emit(.advertisingReport(report))
    }

    func mtuChanged(_ handle: UInt16, _ mtu: Int) {
        guard mtu > 23, let link = links[handle], link.mtu != mtu else { return }
        links[handle]?.mtu = mtu
        emit(.attMTUChanged(handle: handle, mtu: mtu))
    }

    /// The central link to the device at `path` ended (unless it is being replaced to pair again).
    private func centralLinkEnded(devicePath path: String, reason: HCIStatus) {
        guard let (handle, link) = links.first(where: { $0.value.path == path }) else {
            return releaseServiceWaiters(path, resolved: false)
        }
        notifying = notifying.filter { $0.value.link != handle }
        links[handle]?.attributePaths = [:]
        releaseServiceWaiters(path, resolved: false)
        if link.replacing { return }
        if pendingConnects[link.connection.peer] != nil {
            endConnect(link.connection.peer, HostError(.disconnected, "\(description): the connection ended while connecting"), cancel: false)
        }
        linkEnded(handle, reason: link.closedByUs ? .connectionTerminatedByLocalHost : reason)
    }

    // MARK: Scanning

    package func startScanning(_ options: ScanOptions, completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        onLoop { [self] in
            if let error = notRunning() { return completion(.failure(error)) }
            guard options.active else { return completion(.failure(Self.refusal("passive scanning cannot be asked: bluetoothd decides how it scans"))) }
            guard let adapter = session?.adapterPath else { return completion(.failure(HostError(.notReady, "bluetoothd is not connected"))) }
            // bluetoothd decides active or passive scanning and the timing. Its duplicate filter (DuplicateData
            // false) still signals each RSSI change, so the engine filters too (``heard``).
            scanning = true
            heard = options.filterDuplicates ? [:] : nil
            let filter: [String: DBusValue] = ["Transport": .string("le"), "DuplicateData": .boolean(!options.filterDuplicates)]
            call(adapter, BlueZAdapterSession.adapterInterface, "SetDiscoveryFilter", [.properties(filter)]) { [self] _ in
                call(adapter, BlueZAdapterSession.adapterInterface, "StartDiscovery") { [self] result in
                    if case .failure(let error) = result, error.name != "org.bluez.Error.InProgress" {
                        reported.withLock { $0 = $0 ?? "bluetoothd did not start discovery: \(error)" }
                    }
                }
                // Devices bluetoothd already knows and sees advertising now report as their properties change;
                // report the ones with a fresh RSSI at once, as a scan would.
                for device in devices() where device.properties["RSSI"] != nil {
                    if let report = BlueZDevice.scanReport(device.properties) { heardAdvertisement(report) }
                }
            }
            completion(.success(()))
        }
    }

    package func stopScanning(completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        onLoop { [self] in
            if scanning, let adapter = session?.adapterPath {
                call(adapter, BlueZAdapterSession.adapterInterface, "StopDiscovery") { _ in }
            }
            scanning = false
            completion?(.success(()))
        }
    }

    // MARK: Connections

    package func connect(to peer: BluetoothAddress, options: ConnectOptions, completion: @escaping @Sendable (Result<Connection, HostError>) -> Void) {
        onLoop { [self] in
            if let error = notRunning() { return completion(.failure(error)) }
            guard pendingConnects[peer] == nil else {
                return completion(.failure(HostError(.busy, "a connect to \(peer) is already pending")))
            }
            if let handle = handle(of: peer, role: .central), let link = links[handle] {
                return completion(.success(link.connection))
            }
            guard let path = devicePath(peer) else {
                return completion(.failure(HostError(.commandFailed, "\(description): bluetoothd does not know \(peer) (scan first)")))
            }
            let timer = options.timeout.map { limit in
                loop.schedule(after: limit) { [weak self] in
                    self?.endConnect(peer, HostError(.timedOut, "no connection to \(peer) within \(limit)"), cancel: true)
                }
            }
            lastConnectID &+= 1
            let id = lastConnectID
            pendingConnects[peer] = PendingConnect(id: id, peer: peer, completion: completion, timer: timer)
            call(path, BlueZDevice.interface, "Connect", timeout: .seconds(40)) { [self] result in
                switch result {
                case .success:
                    // A later connect to the peer (this one was given up) takes the connection too.
                    guard let pending = pendingConnects.removeValue(forKey: peer) else {
                        // Connected after the connect was given up: not ours to keep.
                        if handle(of: peer, role: .central) == nil { call(path, BlueZDevice.interface, "Disconnect") { _ in } }
                        return
                    }
                    pending.timer?.cancel()
                    let mtu = session?.tree.objects(with: "org.bluez.GattCharacteristic1")
                        .first { BlueZPaths.isUnder($0.path, path) }?.properties["MTU"]?.intValue ?? 23
                    let handle = link(peer, role: .central, mtu: mtu)
                    links[handle]?.path = path
                    if let connection = links[handle]?.connection { pending.completion(.success(connection)) }
                case .failure(let error):
                    if pendingConnects[peer]?.id == id { endConnect(peer, HostError(.commandFailed, "\(description): bluetoothd: \(error)"), cancel: false) }
                }
            }
        }
    }

    package func cancelConnect(to peer: BluetoothAddress, completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        onLoop { [self] in
            guard pendingConnects[peer] != nil else {
                completion?(.failure(HostError(.invalidParameters, "no connect to \(peer) is pending")))
                return
            }
            endConnect(peer, HostError(.cancelled, "the connect to \(peer) was cancelled"), cancel: true)
            completion?(.success(()))
        }
    }

    /// Fails the pending connect to `peer` (cancelling bluetoothd's Connect when asked: Device1.Disconnect).
    func endConnect(_ peer: BluetoothAddress, _ error: HostError, cancel: Bool) {
        guard let pending = pendingConnects.removeValue(forKey: peer) else { return }
        pending.timer?.cancel()
        if cancel, let path = devicePath(peer) { call(path, BlueZDevice.interface, "Disconnect") { _ in } }
        pending.completion(.failure(error))
    }

    package func disconnect(connectionHandle handle: UInt16, reason: HCIStatus, completion: (@Sendable (Result<HCIStatus, HostError>) -> Void)?) {
        onLoop { [self] in
            guard let link = links[handle] else {
                completion?(.failure(HostError(.unknownConnection, "no connection has handle \(Dissection.hex16(handle))")))
                return
            }
            guard link.connection.role == .central, let path = link.path ?? devicePath(link.connection.peer) else {
                completion?(.failure(HostError(.unsupported, "bluetoothd does not let its GATT server drop a central")))
                return
            }
            if let completion { links[handle]?.disconnectWaiters.append(completion) }
            links[handle]?.closedByUs = true
            call(path, BlueZDevice.interface, "Disconnect") { _ in }
        }
    }

    /// bluetoothd tells the RSSI it last heard from a device (Device1.RSSI), which it updates only while discovering.
    package func readRSSI(connectionHandle handle: UInt16, completion: @escaping @Sendable (Result<Int8, HostError>) -> Void) {
        onLoop { [self] in
            guard let link = links[handle] else {
                return completion(.failure(HostError(.unknownConnection, "no connection has handle \(Dissection.hex16(handle))")))
            }
            guard let rssi = devices().first(where: { BlueZDevice.peer($0.properties) == link.connection.peer })?.properties["RSSI"]?.intValue else {
                return completion(.failure(Self.refusal("bluetoothd reports a device's RSSI only while discovering")))
            }
            completion(.success(Int8(clamping: rssi)))
        }
    }

    /// bluetoothd remembers the devices it paired with across runs.
    package func knownPeers() -> [BluetoothAddress] {
        guard let session = sessionBox.load() else { return [] }
        return session.tree.objects(with: BlueZDevice.interface)
            .filter { BlueZPaths.isUnder($0.path, session.adapterPath) && $0.properties["Paired"]?.boolValue == true }
            .compactMap { BlueZDevice.peer($0.properties) }
    }

    // MARK: Waiting for bluetoothd's services

    /// Runs `body` once bluetoothd resolved the services of the central link `handle` (at most 30 s), with the
    /// device's path.
    func whenResolved(_ handle: UInt16, _ body: @escaping (Result<String, BlueZCallError>) -> Void) {
        guard let path = links[handle]?.path else { return body(.failure(.notConnected("the link ended"))) }
        if session?.tree.properties(path, BlueZDevice.interface)?["ServicesResolved"]?.boolValue == true { return body(.success(path)) }
        nextWaiter += 1
        let id = nextWaiter
        serviceWaiters[path, default: [:]][id] = { resolved in
            body(resolved ? .success(path) : .failure(.notConnected("the link ended before bluetoothd resolved the services")))
        }
        loop.schedule(after: .seconds(30)) { [weak self] in
            guard let engine = self, let waiter = engine.serviceWaiters[path]?.removeValue(forKey: id) else { return }
            waiter(false)
        }
    }

    private func releaseServiceWaiters(_ path: String, resolved: Bool) {
        let waiters = serviceWaiters.removeValue(forKey: path) ?? [:]
        for id in waiters.keys.sorted() { waiters[id]?(resolved) }
    }
}
