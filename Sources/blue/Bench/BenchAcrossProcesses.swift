import BluetoothCore
import BluetoothRuntime
import Dispatch
import FoundationEssentials
import GATT
import HCI
import Host
import ATT
import AdvertisingData
import StackLauncher
import BluetoothEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue bench notify|write --hci TRANSPORT --role central|peripheral` (issue 13 item 5): the GATT throughput
/// benchmark between two processes, each with its own host on its own controller, the way `bumble-bench` works,
/// so that a user measures a real dongle, a kernel controller, Bumble's or RootCanal's controllers, or the shared air.
///
/// The peripheral serves the benchmark's characteristic (service 0xBE00, characteristic 0xBE01: read, write, write
/// without response, notify; Core 5.4 Vol 3 Part G §3) and advertises `--name`; the central scans for that name,
/// connects, lets the MTU exchange happen (it asks for `--mtu`), asks for `--data-length` and `--phy`, discovers
/// the characteristic and its CCCD by UUID (§4.4.2, §4.6.2, §4.7.1). Then the sender (the peripheral for `notify`,
/// the central for `write`) sends `--count` values of `--size` octets, paced by readiness, each starting with its
/// sequence number; the receiver counts them, checks their order, and when all arrived disconnects: the sender
/// takes that disconnection as the end. The receiver's figures (first value to last, wall clock) are the
/// benchmark's; the sender prints its own (sent, seconds). A link lost before the end fails both with one line.
final class AcrossProcessesBenchmark: @unchecked Sendable, ReportsProgress {
    enum Role: String, CaseIterable {
        case central
        case peripheral
    }

    struct Parameters {
        var mode: GATTBenchmark.Mode
        var role: Role
        var size: Int
        var count: Int
        var mtu: Int
        var dataLength: Int
        var phy: BenchPHY
        var name: String
        /// Bounds each setup step and the measured phase's silences.
        var timeout: Duration
    }

    private struct Progress {
        var connection: UInt16?
        var peer: BluetoothAddress?
        var disconnected: HCIStatus?
        var subscribed = false
        var sent = 0
        var received = 0
        var outOfOrder = 0
        var blocked = false
        var firstArrival: ContinuousClock.Instant?
        var lastArrival: ContinuousClock.Instant?
        var firstSend: ContinuousClock.Instant?
        var lastSend: ContinuousClock.Instant?
        /// The process's CPU at the first value sent or received (the span's start).
        var startUsage: BenchProcessUsage?
    }

    let parameters: Parameters
    let stack: LaunchedStack
    var onProgress: ((String) -> Void)?
    private let progress = LockedValue(Progress())
    /// The process's CPU once the last value went out or arrived (the span's end, taken by that value).
    private let endUsage = LockedValue<BenchProcessUsage?>(nil)
    /// ATT_MTU and this side's LE data length (TX octets), read when the last value went out or arrived.
    private let measuredLink = LockedValue((mtu: 23, dataLength: 27))
    private var host: HostStack { stack.host }

    /// The link's ATT_MTU, read on the stack's loop (the host's state is the loop's alone).
    private func attMTU(_ handle: UInt16) -> Int {
        let host = host
        return stack.eventLoop.sync { host.attMTU(connectionHandle: handle) ?? 23 }
    }

    init(_ parameters: Parameters, stack: LaunchedStack) {
        self.parameters = parameters
        self.stack = stack
    }

    /// Sets up, measures, and returns this side's figures.
    func run() async throws(BenchError) -> BenchResult {
        guard parameters.mode != .writeWithResponse else {
            throw BenchError(.badOptions, "--with-response is not measured across processes; use write commands")
        }
        guard (1...10_000_000).contains(parameters.count) else { throw BenchError(.badOptions, "--count must be 1...10000000") }
        guard (23...517).contains(parameters.mtu) else { throw BenchError(.badOptions, "--mtu must be 23...517") }
        guard (4...(parameters.mtu - 3)).contains(parameters.size) else {
            throw BenchError(.badOptions, "--size must be 4...\(parameters.mtu - 3) (ATT_MTU - 3) for --mtu \(parameters.mtu)")
        }
        guard (27...251).contains(parameters.dataLength) else { throw BenchError(.badOptions, "--data-length must be 27...251") }
        let subscription = stack.addEventHandler { [weak self] event in self?.handle(event) }
        defer { subscription.cancel() }
        let valueHandle = parameters.role == .peripheral ? try await setUpPeripheral() : try await setUpCentral()
        let sending = (parameters.mode == .notify) == (parameters.role == .peripheral)
        if sending {
            try await send(valueHandle: valueHandle)
        } else {
            try await receive()
        }
        let (mtu, dataLength) = measuredLink.load()
        let state = progress.load()
        let cpu = state.startUsage.flatMap { start in
            endUsage.load().map { BenchCPU(from: start, to: $0, values: parameters.count) }
        }
        let span: Duration
        if sending, let first = state.firstSend, let last = state.lastSend {
            span = last - first
        } else if let first = state.firstArrival, let last = state.lastArrival {
            span = last - first
        } else {
            span = .zero
        }
        return BenchResult(benchmark: parameters.mode.rawValue, transport: "\(stack.transportDescription), \(parameters.role.rawValue)"
                                    + (sending ? " (sender)" : " (receiver)"),
                                 loop: "DispatchEventLoop, wall clock from the first value to the last",
                                 size: parameters.size, count: parameters.count, mtu: mtu, dataLength: dataLength,
                                 sent: sending ? state.sent : parameters.count, received: sending ? parameters.count : state.received,
                                 outOfOrder: state.outOfOrder, seconds: benchSeconds(span), airSeconds: 0, cpu: cpu)
    }

    // MARK: Events

    private func handle(_ event: HostEvent) {
        switch event {
        case .connected(let connection):
            progress.withLock { state in
                if state.connection == nil {
                    state.connection = connection.handle
                    state.peer = connection.peer
                }
            }
        case .disconnected(let handle, let reason):
            progress.withLock { state in
                if state.connection == handle { state.disconnected = reason }
            }
        case .gattServer(.subscriptionChanged(_, _, let configuration)):
            progress.withLock { $0.subscribed = configuration.contains(.notification) }
        case .gattServer(.valueWritten(_, _, let value)):
            if parameters.mode == .write { arrived(value) }
        case .gattNotification(_, _, let value):
            if parameters.mode == .notify { arrived(value) }
        case .readyToSend:
            progress.withLock { $0.blocked = false }
            pump?()
        default:
            break
        }
    }

    private func arrived(_ value: [UInt8]) {
        let now = ContinuousClock.now
        let size = parameters.size
        let mask: UInt32 = size >= 4 ? .max : (1 << (8 * UInt32(size))) &- 1
        progress.withLock { state in
            if GATTBenchmark.sequence(of: value) != UInt32(truncatingIfNeeded: state.received) & mask { state.outOfOrder += 1 }
            state.received += 1
            if state.firstArrival == nil { state.firstArrival = now; state.startUsage = .now() }
            state.lastArrival = now
            if state.received == parameters.count { endUsage.store(.now()) }
        }
    }

    // MARK: Setup

    private func setUpPeripheral() async throws(BenchError) -> UInt16 {
        let (database, value, _) = try benchDatabase(name: parameters.name, properties: [.read, .write, .writeWithoutResponse, .notify])
        host.setGATTDatabase(database)
        let advertising = LockedValue<Result<Void, HostError>?>(nil)
        // The name in the advertising data itself, not in the scan response: Bumble's controller (0.0.2xx) answers
        // SCAN_REQ with the advertising data, so a name there only would never be seen through it.
        let data = AdvertisingData([.flags([.leGeneralDiscoverable, .brEdrNotSupported]),
                                    .localName(LocalName(parameters.name), complete: true)])
        host.startAdvertising(advertisingData: data, options: AdvertisingOptions(intervalMin: 0x20, intervalMax: 0x20)) {
            advertising.store($0)
        }
        try await until("advertising started") { advertising.load() != nil }
        if case .failure(let error)? = advertising.load() { throw BenchError(.setupFailed, "advertising: \(error.reason)") }
        onProgress?("\(parameters.mode.rawValue): advertising \"\(parameters.name)\" on \(stack.transportDescription); waiting for the central")
        try await until("a central connected", limit: parameters.timeout) { self.progress.load().connection != nil }
        onProgress?("\(parameters.mode.rawValue): connected to \(progress.load().peer.map { $0.string } ?? "?")")
        if parameters.mode == .notify {
            try await until("the central subscribed") { self.progress.load().subscribed }
        }
        return value
    }

    private func setUpCentral() async throws(BenchError) -> UInt16 {
        let found = LockedValue<BluetoothAddress?>(nil)
        let name = parameters.name
        let scan = stack.addEventHandler { event in
            if case .advertisingReport(let report) = event, report.advertisingData.localName == name, report.isConnectable {
                found.withLock { if $0 == nil { $0 = report.address } }
            }
        }
        host.startScanning(ScanOptions(active: true, filterDuplicates: false)) { _ in }
        onProgress?("\(parameters.mode.rawValue): scanning for \"\(name)\" on \(stack.transportDescription)")
        do throws(BenchError) {
            try await until("\"\(name)\" found (start the peripheral: --role peripheral)", limit: parameters.timeout) { found.load() != nil }
        } catch {
            scan.cancel()
            host.stopScanning()
            throw error
        }
        scan.cancel()
        let stopped = LockedValue(false)
        host.stopScanning { _ in stopped.store(true) }
        try await until("scanning stopped") { stopped.load() }
        guard let address = found.load() else { throw BenchError(.setupFailed, "no peripheral") }
        let connected = LockedValue<Result<Connection, HostError>?>(nil)
        let connectionParameters = LEConnectionParameters(intervalMin: 6, intervalMax: 12, supervisionTimeout: 0x01F4)
        host.connect(to: address, options: ConnectOptions(parameters: connectionParameters)) { connected.store($0) }
        try await until("connected to \(address)") { connected.load() != nil }
        guard case .success(let connection)? = connected.load() else {
            throw BenchError(.setupFailed, "connecting to \(address): \(String(describing: connected.load()))")
        }
        let handle = connection.handle
        progress.withLock { state in
            state.connection = handle
            state.peer = address
        }
        onProgress?("\(self.parameters.mode.rawValue): connected to \(address)")
        // The MTU exchange the host makes on connecting; a peer that offers less leaves a smaller MTU.
        let host = self.host
        try? await until("the MTU exchange", limit: .seconds(3)) { [self] in attMTU(handle) > 23 }
        let mtu = attMTU(handle)
        guard self.parameters.size <= mtu - 3 else {
            throw BenchError(.setupFailed, "the ATT_MTU is \(mtu): --size must be at most \(mtu - 3)")
        }
        let octets = UInt16(self.parameters.dataLength)
        host.requestDataLength(connectionHandle: handle, txOctets: octets, txTime: (octets + 14) * 8) { _ in }
        if self.parameters.phy != .le1M {
            let bits = self.parameters.phy.bit
            host.setPHY(connectionHandle: handle, txPHYs: bits, rxPHYs: bits) { _ in }
        }
        try? await Task.sleep(for: .milliseconds(300))
        let (valueHandle, cccd) = try await discover(handle)
        if self.parameters.mode == .notify {
            let subscribed = LockedValue<Result<GATTProcedureResult, GATTClientError>?>(nil)
            host.gatt(connectionHandle: handle, .subscribe(cccdHandle: cccd, configuration: .notifications)) { subscribed.store($0) }
            try await until("subscribed") { subscribed.load() != nil }
            guard case .success? = subscribed.load() else {
                throw BenchError(.setupFailed, "subscribing: \(String(describing: subscribed.load()))")
            }
        }
        return valueHandle
    }

    /// Reads the link's ATT_MTU and data length into ``measuredLink`` (while it is up).
    private func measureLink() async {
        guard let handle = progress.load().connection else { return }
        let mtu = attMTU(handle)
        let info = await linkInfo(handle)
        measuredLink.store((mtu, Int(info?.maxTxOctets ?? 27)))
    }

    /// The value handle and CCCD of characteristic 0xBE01 in service 0xBE00.
    private func discover(_ handle: UInt16) async throws(BenchError) -> (UInt16, UInt16) {
        let services = try await procedure(handle, .discoverPrimaryServices(uuid: BluetoothUUID(0xBE00)))
        guard case .services(let found) = services, let service = found.first else {
            throw BenchError(.setupFailed, "the peer has no service 0xBE00 (is it `blue bench ... --role peripheral`?)")
        }
        let characteristics = try await procedure(handle, .discoverCharacteristics(range: service.range, uuid: BluetoothUUID(0xBE01)))
        guard case .characteristics(let list) = characteristics, let characteristic = list.first else {
            throw BenchError(.setupFailed, "service 0xBE00 has no characteristic 0xBE01")
        }
        guard characteristic.valueHandle < characteristic.endHandle else {
            throw BenchError(.setupFailed, "characteristic 0xBE01 has no descriptors")
        }
        let descriptors = try await procedure(handle, .discoverAllDescriptors(
            range: ATTHandleRange(start: characteristic.valueHandle + 1, end: characteristic.endHandle)))
        guard case .descriptors(let all) = descriptors,
              let cccd = all.first(where: { $0.uuid == BluetoothUUID(0x2902) }) else {
            throw BenchError(.setupFailed, "characteristic 0xBE01 has no Client Characteristic Configuration")
        }
        return (characteristic.valueHandle, cccd.handle)
    }

    private func procedure(_ handle: UInt16, _ procedure: GATTProcedure) async throws(BenchError) -> GATTProcedureResult {
        let result = LockedValue<Result<GATTProcedureResult, GATTClientError>?>(nil)
        host.gatt(connectionHandle: handle, procedure) { result.store($0) }
        try await until("GATT discovery") { result.load() != nil }
        switch result.load() {
        case .success(let value)?: return value
        case .failure(let error)?: throw BenchError(.setupFailed, "GATT discovery: \(error)")
        case nil: throw BenchError(.setupFailed, "GATT discovery did not complete")
        }
    }

    private func linkInfo(_ handle: UInt16) async -> LinkInfo? {
        let info = LockedValue<LinkInfo??>(nil)
        host.linkInfo(connectionHandle: handle) { info.store($0) }
        try? await until("link information", limit: .seconds(2)) { info.load() != nil }
        return info.load() ?? nil
    }

    // MARK: Measurement

    /// Sends from the stack's loop, paced by readiness, until all went out; then waits for the receiver's
    /// disconnection, its word that everything arrived.
    private var pump: (@Sendable () -> Void)? {
        get { pumpValue.load() }
        set { pumpValue.store(newValue) }
    }
    private let pumpValue = LockedValue<(@Sendable () -> Void)?>(nil)

    private func send(valueHandle: UInt16) async throws(BenchError) {
        let host = self.host, progress = self.progress, endUsage = self.endUsage, count = parameters.count, size = parameters.size
        guard let handle = progress.load().connection else { throw BenchError(.setupFailed, "no connection") }
        let notify = parameters.mode == .notify
        pump = {
            while true {
                let next = progress.withLock { state -> Int? in
                    state.sent < count && !state.blocked && state.disconnected == nil ? state.sent : nil
                }
                guard let sequence = next else { return }
                let value = GATTBenchmark.value(sequence, size: size)
                if notify {
                    progress.withLock { $0.blocked = true }
                    host.updateValue(value, handle: valueHandle, requireReady: true) { result in
                        let now = ContinuousClock.now
                        progress.withLock { state in
                            guard case .success = result else { return }
                            state.blocked = false
                            state.sent += 1
                            if state.firstSend == nil { state.firstSend = now; state.startUsage = .now() }
                            state.lastSend = now
                            if state.sent == count { endUsage.store(.now()) }
                        }
                    }
                    // The completion ran inline on the loop when it could; if the queue was full, readyToSend resumes.
                    if progress.load().blocked { return }
                } else {
                    guard host.isReadyToSend(connectionHandle: handle) else { return }
                    host.gatt(connectionHandle: handle, .writeWithoutResponse(handle: valueHandle, value: value)) { _ in }
                    let now = ContinuousClock.now
                    progress.withLock { state in
                        state.sent += 1
                        if state.firstSend == nil { state.firstSend = now; state.startUsage = .now() }
                        state.lastSend = now
                        if state.sent == count { endUsage.store(.now()) }
                    }
                }
            }
        }
        stack.eventLoop.execute { [weak self] in self?.pump?() }
        defer { pump = nil }
        try await watch(done: { $0.sent >= count }, what: "sent")
        await measureLink()
        // All went out: the receiver disconnects when it has them all.
        do throws(BenchError) {
            try await until("the receiver's disconnection after the last value", limit: parameters.timeout) {
                progress.load().disconnected != nil
            }
        } catch {
            host.disconnect(connectionHandle: handle)
            throw error
        }
    }

    private func receive() async throws(BenchError) {
        let count = parameters.count
        try await watch(done: { $0.received >= count }, what: "received")
        await measureLink()
        guard let handle = progress.load().connection else { return }
        let closed = LockedValue(false)
        host.disconnect(connectionHandle: handle) { _ in closed.store(true) }
        try? await until("disconnected", limit: .seconds(5)) { closed.load() || self.progress.load().disconnected != nil }
    }

    /// Waits until `done`, printing progress about once a second; fails when the link goes away first or nothing
    /// moves for ``Parameters/timeout``.
    private func watch(done: @escaping @Sendable (Progress) -> Bool, what: String) async throws(BenchError) {
        let count = parameters.count, mode = parameters.mode.rawValue
        var lastCount = -1
        var lastChange = ContinuousClock.now
        var nextTick = ContinuousClock.now + .seconds(1)
        while true {
            let state = progress.load()
            if done(state) {
                // Taken by the last value itself; here only if that did not happen (a count of values never sent).
                if endUsage.load() == nil { endUsage.store(.now()) }
                return
            }
            let moved = what == "sent" ? state.sent : state.received
            if let reason = state.disconnected {
                throw BenchError(.stalled, "the link was lost after \(moved) of \(count) values \(what): \(reason)")
            }
            let now = ContinuousClock.now
            if moved != lastCount {
                lastCount = moved
                lastChange = now
            } else if now - lastChange > parameters.timeout {
                throw BenchError(.stalled, "nothing \(what) for \(parameters.timeout): \(moved) of \(count)")
            }
            if now >= nextTick {
                onProgress?("\(mode): \(moved) of \(count) \(what)")
                nextTick = now + .seconds(1)
            }
            // The span's times and CPU are taken by the first and last values themselves, so this wait only checks
            // for the end, a lost link and a stall: 4 times a second (each wake-up of a sleeping task costs the
            // process several thread switches, which would count in the figures at a thousand values a second).
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    /// Polls `condition` every 2 ms for at most `limit` (default: the parameters' timeout).
    private func until(_ what: String, limit: Duration? = nil, _ condition: @escaping @Sendable () -> Bool) async throws(BenchError) {
        let deadline = ContinuousClock.now + (limit ?? parameters.timeout)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                throw BenchError(.setupFailed, "timed out waiting for \(what) (\(limit ?? parameters.timeout))")
            }
            if let reason = progress.load().disconnected {
                throw BenchError(.setupFailed, "the link was lost while waiting for \(what): \(reason)")
            }
            try? await Task.sleep(for: .milliseconds(2))
        }
    }
}
