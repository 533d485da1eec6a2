import BluetoothCore
import BluetoothRuntime
import GATT
import HCI
import Host
import VirtualController
import StackLauncher
import BluetoothEngine

/// The GATT throughput benchmark of issue 4 (`blue bench notify|write`): two of our host stacks, each on its own
/// ``VirtualController``, on one in-process ``VirtualAir``, all on ONE ``ManualEventLoop`` driven by
/// ``BenchDriver`` (virtual time jumps to the next timer, wall-clock time is measured).
///
/// Setup (not timed): the peripheral serves one characteristic (read, write, write without response, notify) in
/// service 0xBE00; the central connects (7.5 ms interval), exchanges MTU (both offer `--mtu`, Core 5.4 Vol 3
/// Part F §3.4.2), both ask for LE data length 251 (Vol 4 Part E §7.8.33) and the central subscribes (CCCD, Vol 3 Part G §4.10).
/// Measured: `notify` sends `count` notifications of `size` octets from the server, paced by readiness
/// (`updateValue(requireReady: true)`, then ``HostEvent/readyToSend(handle:)``), and the client counts them;
/// `write` sends `count` Write Commands (Vol 3 Part G §4.9.1) paced by ``HostStack/isReadyToSend(connectionHandle:)``
/// and ``HostEvent/readyToSend(handle:)``, or Write Requests one after the other (§4.9.3) with
/// `withResponse`; the server counts ``GATTServerEvent/valueWritten(connection:handle:value:)``. Each value starts
/// with a 32-bit little-endian sequence number (shorter values carry its low octets), so order is checked.
final class GATTBenchmark: @unchecked Sendable {
    enum Mode: String {
        case notify
        case write
        case writeWithResponse = "write-with-response"
    }

    struct Parameters {
        var mode: Mode
        var size: Int
        var count: Int
        var mtu: Int = 247
        var dataLength: Int = 251
        /// Connection interval in 1.25 ms units.
        var interval: UInt16 = 6
        var phy: BenchPHY = .le1M
        /// ``AirConfiguration/realRadioTiming``.
        var realtime = false
    }

    /// Counters of the measured phase; touched only on the loop (one thread: the driver's).
    private final class Counters: @unchecked Sendable {
        var sent = 0
        var received = 0
        var outOfOrder = 0
        var blocked = false
        var inFlight = false
        /// The pump, for the write-with-response completion to call again (cleared at the end: it is a cycle).
        var pump: (@Sendable () -> Void)?
    }

    let parameters: Parameters
    let loop = ManualEventLoop()
    let air: VirtualAir
    let peripheral: HostStack
    let central: HostStack
    private let counters = Counters()
    private var valueHandle: UInt16 = 0
    private var cccdHandle: UInt16 = 0
    private var centralHandle: UInt16 = 0
    private var peripheralHandle: UInt16 = 0
    private var negotiatedMTU = 0
    private var negotiatedDataLength = 0
    private var negotiatedPHY = LEPhy.le1M
    var onProgress: ((String) -> Void)?

    init(_ parameters: Parameters) {
        self.parameters = parameters
        air = VirtualAir(eventLoop: loop, seed: 1, configuration: AirConfiguration(realRadioTiming: parameters.realtime))
        let peripheralController = VirtualController(air: air, address: BluetoothAddress(0x0B_E0_00_00_00_01, type: .public))
        let centralController = VirtualController(air: air, address: BluetoothAddress(0x0B_E0_00_00_00_02, type: .public),
                                                  position: AirPosition(x: 1))
        var peripheralConfiguration = HostConfiguration(address: .randomStatic(seed: 1))
        peripheralConfiguration.preferredATTMTU = parameters.mtu
        var centralConfiguration = HostConfiguration(address: .randomStatic(seed: 2))
        centralConfiguration.preferredATTMTU = parameters.mtu
        peripheral = HostStack(transport: VirtualControllerTransport(controller: peripheralController), eventLoop: loop,
                               configuration: peripheralConfiguration)
        central = HostStack(transport: VirtualControllerTransport(controller: centralController), eventLoop: loop,
                            configuration: centralConfiguration)
    }

    private var driver: BenchDriver { BenchDriver(loop: loop) }

    /// Sets up, measures, and shuts both stacks down.
    func run() throws(BenchError) -> BenchResult {
        guard (1...10_000_000).contains(parameters.count) else { throw BenchError(.badOptions, "--count must be 1...10000000") }
        guard (23...517).contains(parameters.mtu) else { throw BenchError(.badOptions, "--mtu must be 23...517") }
        guard (4...(parameters.mtu - 3)).contains(parameters.size) else {
            throw BenchError(.badOptions, "--size must be 4...\(parameters.mtu - 3) (ATT_MTU - 3) for --mtu \(parameters.mtu)")
        }
        guard (27...251).contains(parameters.dataLength) else { throw BenchError(.badOptions, "--data-length must be 27...251") }
        guard (6...3200).contains(parameters.interval) else { throw BenchError(.badOptions, "--interval must be 7.5...4000 ms") }
        defer {
            peripheral.shutdown()
            central.shutdown()
            loop.run()
        }
        try setUp()
        return try measure()
    }

    // MARK: Setup

    private func setUp() throws(BenchError) {
        let (database, value, cccd) = try benchDatabase(name: "bench", properties: [.read, .write, .writeWithoutResponse, .notify])
        valueHandle = value
        cccdHandle = cccd
        peripheral.setGATTDatabase(database)

        let started = LockedValue<[Bool]>([])
        peripheral.start { result in started.withLock { $0.append((try? result.get()) != nil) } }
        central.start { result in started.withLock { $0.append((try? result.get()) != nil) } }
        guard driver.drive(until: { started.withLock { $0.count } == 2 }), started.load() == [true, true] else {
            throw BenchError(.setupFailed, "the stacks did not start")
        }

        let advertising = LockedValue<Bool?>(nil)
        peripheral.startAdvertising(AdvertisingContent(localName: "bench"),
                                    options: AdvertisingOptions(intervalMin: 0x20, intervalMax: 0x20)) { result in
            advertising.store((try? result.get()) != nil)
        }
        guard driver.drive(until: { advertising.load() != nil }), advertising.load() == true else {
            throw BenchError(.setupFailed, "the peripheral did not advertise")
        }

        let connected = LockedValue<Result<Connection, HostError>?>(nil)
        let interval = parameters.interval
        // Supervision timeout: 5 s, or more than (1 + latency) × interval × 2 for long intervals (§4.5.2).
        let timeout = UInt16(clamping: max(500, Int(interval) / 4 + 100))
        let options = ConnectOptions(parameters: LEConnectionParameters(intervalMin: interval, intervalMax: interval,
                                                                        supervisionTimeout: timeout))
        central.connect(to: peripheral.controllerInfo.ownAddress, options: options) { connected.store($0) }
        let peripheral = self.peripheral
        guard driver.drive(until: { connected.load() != nil && !peripheral.openConnections.isEmpty }),
              case .success(let connection)? = connected.load(), let peerConnection = peripheral.openConnections.first else {
            throw BenchError(.setupFailed, "the central did not connect: \(String(describing: connected.load()))")
        }
        centralHandle = connection.handle
        peripheralHandle = peerConnection.handle

        // The central exchanges MTU on connect (HostConfiguration.exchangesMTUOnConnect).
        let central = self.central, centralHandle = self.centralHandle, peripheralHandle = self.peripheralHandle
        let expectedMTU = parameters.mtu
        guard driver.drive(until: {
            central.attMTU(connectionHandle: centralHandle) == expectedMTU
                && peripheral.attMTU(connectionHandle: peripheralHandle) == expectedMTU
        }) else {
            throw BenchError(.setupFailed, "the MTU exchange did not reach \(expectedMTU)")
        }
        negotiatedMTU = expectedMTU

        // Both sides ask for the data length (the sender's TX octets decide how many LL PDUs a value takes: at 27,
        // a 251-octet L2CAP PDU goes out as 10 link-layer fragments). The hosts already suggested 251 as the
        // default (HostConfiguration.suggestedDataLength), so the links may have it before this asks.
        let requests = LockedValue<[Bool]>([])
        let octets = UInt16(parameters.dataLength), time = UInt16((parameters.dataLength + 14) * 8)
        central.requestDataLength(connectionHandle: centralHandle, txOctets: octets, txTime: time) { result in
            requests.withLock { $0.append((try? result.get()) ?? false) }
        }
        peripheral.requestDataLength(connectionHandle: peripheralHandle, txOctets: octets, txTime: time) { result in
            requests.withLock { $0.append((try? result.get()) ?? false) }
        }
        let lengths = LockedValue<(central: Int, peripheral: Int)>((0, 0))
        let wanted = parameters.dataLength
        driver.drive(until: {
            central.linkInfo(connectionHandle: centralHandle) { info in lengths.withLock { $0.central = Int(info?.maxTxOctets ?? 0) } }
            peripheral.linkInfo(connectionHandle: peripheralHandle) { info in lengths.withLock { $0.peripheral = Int(info?.maxTxOctets ?? 0) } }
            let now = lengths.load()
            return requests.load().count == 2 && now.central == wanted && now.peripheral == wanted
        }, idleLimit: .seconds(2))
        let senderTx = parameters.mode == .notify ? lengths.load().peripheral : lengths.load().central
        negotiatedDataLength = max(27, senderTx)

        // The PHY (LE Set PHY, Vol 4 Part E §7.8.49; the central asks, both directions).
        if parameters.phy != .le1M {
            let wanted = parameters.phy.hci
            let updated = LockedValue<(LEPhy, LEPhy)?>(nil)
            central.setEventHandler { event in
                if case .phyUpdated(_, .success, let tx, let rx) = event { updated.store((tx, rx)) }
            }
            let bits = parameters.phy.bit
            central.setPHY(connectionHandle: centralHandle, txPHYs: bits, rxPHYs: bits) { _ in }
            guard driver.drive(until: { updated.load() != nil }, idleLimit: .seconds(5)),
                  let (tx, rx) = updated.load(), tx == wanted, rx == wanted else {
                throw BenchError(.setupFailed, "the PHY update to \(parameters.phy.rawValue) did not happen")
            }
            negotiatedPHY = wanted
        }

        if parameters.mode == .notify {
            let subscribed = LockedValue<Result<GATTProcedureResult, GATTClientError>?>(nil)
            central.gatt(connectionHandle: centralHandle, .subscribe(cccdHandle: cccdHandle, configuration: .notifications)) {
                subscribed.store($0)
            }
            guard driver.drive(until: { subscribed.load() != nil }), case .success(.written)? = subscribed.load() else {
                throw BenchError(.setupFailed, "subscribing failed: \(String(describing: subscribed.load()))")
            }
        }
        central.setEventHandler { _ in }
    }

    // MARK: Measurement

    /// The value of packet `sequence`: its sequence number (little-endian, up to 4 octets) then a fill pattern.
    static func value(_ sequence: Int, size: Int) -> [UInt8] {
        var value = [UInt8](repeating: 0x5A, count: size)
        let number = UInt32(truncatingIfNeeded: sequence)
        for index in 0..<min(4, size) { value[index] = UInt8(truncatingIfNeeded: number >> (8 * UInt32(index))) }
        return value
    }

    static func sequence(of value: [UInt8]) -> UInt32 {
        var number: UInt32 = 0
        for index in 0..<min(4, value.count) { number |= UInt32(value[index]) << (8 * UInt32(index)) }
        return number
    }

    private func measure() throws(BenchError) -> BenchResult {
        let counters = self.counters
        let count = parameters.count, size = parameters.size
        let valueHandle = self.valueHandle
        let sequenceMask: UInt32 = size >= 4 ? .max : (1 << (8 * UInt32(size))) &- 1
        @Sendable func receive(_ value: [UInt8]) {
            if Self.sequence(of: value) != UInt32(truncatingIfNeeded: counters.received) & sequenceMask { counters.outOfOrder += 1 }
            counters.received += 1
        }
        let sendingStack: HostStack
        let pump: @Sendable () -> Void
        switch parameters.mode {
        case .notify:
            let peripheral = self.peripheral
            sendingStack = peripheral
            central.setEventHandler { event in
                if case .gattNotification(_, valueHandle, let value) = event { receive(value) }
            }
            pump = {
                while counters.sent < count, !counters.blocked {
                    peripheral.updateValue(Self.value(counters.sent, size: size), handle: valueHandle, requireReady: true) { result in
                        switch result {
                        case .success: counters.sent += 1
                        case .failure: counters.blocked = true
                        }
                    }
                }
            }
        case .write:
            let central = self.central, handle = centralHandle
            sendingStack = central
            peripheral.setEventHandler { event in
                if case .gattServer(.valueWritten(_, valueHandle, let value)) = event { receive(value) }
            }
            pump = {
                while counters.sent < count, central.isReadyToSend(connectionHandle: handle) {
                    central.gatt(connectionHandle: handle, .writeWithoutResponse(handle: valueHandle,
                                                                                 value: Self.value(counters.sent, size: size))) { _ in }
                    counters.sent += 1
                }
            }
        case .writeWithResponse:
            let central = self.central, handle = centralHandle
            sendingStack = central
            peripheral.setEventHandler { event in
                if case .gattServer(.valueWritten(_, valueHandle, let value)) = event { receive(value) }
            }
            pump = {
                guard counters.sent < count, !counters.inFlight else { return }
                counters.inFlight = true
                counters.sent += 1
                central.gatt(connectionHandle: handle, .writeCharacteristicValue(handle: valueHandle,
                                                                                value: Self.value(counters.sent - 1, size: size))) { result in
                    counters.inFlight = false
                    if case .success = result { counters.pump?() }
                }
            }
            counters.pump = pump
        }
        sendingStack.setEventHandler { event in
            if case .readyToSend = event {
                counters.blocked = false
                pump()
            }
        }

        var driver = self.driver
        let mode = parameters.mode.rawValue
        if let onProgress {
            driver.onTick = { onProgress("\(mode): \(counters.sent) sent, \(counters.received) received of \(count)") }
        }
        let startAir = loop.now
        let start = ContinuousClock.now
        loop.execute { pump() }
        let finished = driver.drive(until: { counters.received >= count },
                                    progress: { counters.sent &+ counters.received }, idleLimit: .seconds(5))
        let elapsed = ContinuousClock.now - start
        let air = loop.now - startAir
        counters.pump = nil
        releaseHandlers()
        if !finished, counters.sent < count {
            onProgress?("\(mode): stalled after \(counters.sent) sent, \(counters.received) received")
        }
        var result = BenchResult(benchmark: mode, size: size, count: count, mtu: negotiatedMTU, dataLength: negotiatedDataLength,
                                 sent: counters.sent, received: counters.received, outOfOrder: counters.outOfOrder,
                                 seconds: benchSeconds(elapsed), airSeconds: benchSeconds(air))
        result.link = BenchLink(phy: parameters.phy.rawValue, intervalMilliseconds: Double(parameters.interval) * 1.25,
                                realtime: parameters.realtime,
                                ceilingBitsPerSecond: parameters.mode == .writeWithResponse ? nil
                                    : BenchLink.ceiling(valueSize: size, dataLength: negotiatedDataLength, phy: negotiatedPHY))
        return result
    }

    /// Drops the handlers (they capture the pump, which captures the stacks).
    private func releaseHandlers() {
        peripheral.setEventHandler { _ in }
        central.setEventHandler { _ in }
    }
}
