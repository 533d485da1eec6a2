public import OpenCoreBluetooth
import BluetoothCore
import BluetoothLE
import BluetoothRuntime
import StackLauncher
import VirtualController

/// A declared central running in a ``SimulatedWorld`` (``CentralSpec``): a real host stack on its own controller
/// on the world's air, driven by the test through the async API (BluetoothLE) underneath, step by step, so a test of
/// a peripheral app (`CBPeripheralManager`) says exactly what the phone at the other end does and sees what the
/// app answers: values, ATT errors (as `CBATTError`), notifications, a dropped link.
public final class SimulatedCentral: Sendable {
    public let spec: CentralSpec
    let stack: BluetoothStack
    let launched: LaunchedStack
    let controller: VirtualController
    private let origin: AirPosition

    init(spec: CentralSpec, stack: LaunchedStack, controller: VirtualController, origin: AirPosition) {
        self.spec = spec
        launched = stack
        self.stack = BluetoothStack(opened: stack)
        self.controller = controller
        self.origin = origin
    }

    /// Scans (active, Vol 3 Part C §9.2) until it hears an advertiser listing `service` (any, when nil) and, when
    /// given, named `name`; a scannable one once its scan response came too (a name that does not fit beside a
    /// 128-bit UUID is there, as CoreBluetooth's peripheral manager puts it), or after three reports without one
    /// (an advertiser with nothing to say in it). Fails after `limit`.
    public func scan(forService service: CBUUID? = nil, named name: String? = nil,
                     within limit: Duration = .seconds(30)) async throws -> SimulatedAdvertisement {
        let services = service.flatMap { try? BluetoothUUID(string: $0.uuidString) }.map { [$0] } ?? []
        let stack = stack
        let found = try await Self.within(limit, "no advertiser\(service.map { " of \($0.uuidString)" } ?? "")\(name.map { " named \($0)" } ?? "") was heard") {
            // Every report, to count those of a scannable advertiser still without its scan response.
            var heldReports: [BluetoothAddress: Int] = [:]
            for try await advertisement in stack.scan(services: services, duplicates: true) where name == nil || advertisement.localName == name {
                let report = advertisement.report
                let scannable = report.isLegacy && (report.eventType == .advInd || report.eventType == .advScanInd)
                if scannable, report.rawScanResponse == nil, heldReports[report.address, default: 0] < 3 {
                    heldReports[report.address, default: 0] += 1
                    continue
                }
                return SimulatedAdvertisement(advertisement)
            }
            throw SimulatedWorldError("the scan ended")
        }
        return found
    }

    /// Connects to the advertiser (LE Create Connection), exchanges the ATT_MTU it offers and discovers every
    /// service and characteristic, as a phone's app does before anything else; fails after `limit`.
    public func connect(_ advertisement: SimulatedAdvertisement, within limit: Duration = .seconds(30)) async throws -> SimulatedCentralLink {
        let peripheral: Peripheral
        do {
            peripheral = try await stack.connect(to: advertisement.advertisement, timeout: limit)
        } catch {
            throw SimulatedCentralLink.translate(error)
        }
        let link = SimulatedCentralLink(peripheral: peripheral)
        try await link.discover()
        return link
    }

    /// Moves it (Nordic's `simulateProximityChange`): RSSI follows; out of range, its links time out.
    public func simulateProximityChange(_ proximity: SimulatedProximity) {
        let position = AirPosition(x: origin.x + proximity.distance, y: origin.y)
        let air = controller.air, controller = controller
        air.eventLoop.execute { air.move(controller, to: position) }
    }

    func stop() {
        controller.setRadio(false)
        launched.shutdown()
    }

    /// Runs `body`, failing with `message` when it has not finished after `limit`.
    static func within<T: Sendable>(_ limit: Duration, _ message: String,
                                    _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: limit)
                throw SimulatedWorldError("\(message) within \(limit)")
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw SimulatedWorldError(message) }
            return first
        }
    }
}
