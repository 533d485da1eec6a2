import BluetoothCore
import BluetoothRuntime
import FoundationEssentials
import GATT
import Host
import StackLauncher
import BluetoothEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A connection to a TARGET as the GATT client commands (`explore`, `read`, `write`, `subscribe`) use it, on any
/// engine (our host, or bluetoothd for `--hci bluez`): scan for the target, connect, and run the GATT procedures
/// (Core 5.4 Vol 3 Part G §4) on the link. The commands print the same either way; what bluetoothd decides
/// differently shows in the answers: the advertisement is rebuilt from the device's properties, long values are
/// read and written by bluetoothd whole, the link is known by its ATT_MTU only.
struct TargetSession: Sendable {
    let stack: any OpenedStack
    let report: ScanReport
    let connection: Connection

    /// Opens the stack `--hci` names (``StackOptions/openEngine(label:options:needing:)``) and the session on it.
    static func open(_ options: StackOptions, target: String, timeout: Duration, label: String) async throws(CLIFailure) -> TargetSession {
        try await open(on: try await options.openEngine(label: label), target: target, timeout: timeout)
    }

    /// Finds `target` on `stack` within `timeout`, connects (within the same time again); shuts the stack down when
    /// that fails.
    static func open(on stack: any OpenedStack, target: String, timeout: Duration) async throws(CLIFailure) -> TargetSession {
        do {
            let report = try await stack.findTarget(TargetMatcher(target), timeout: timeout)
            let name = report.localName ?? report.address.string
            let connection = try await stack.connect(to: report.address, name: name, timeout: timeout)
            return TargetSession(stack: stack, report: report, connection: connection)
        } catch {
            stack.shutdown()
            throw error
        }
    }

    /// The name in messages: the advertised name, else the address.
    var displayName: String { report.localName ?? report.address.string }

    /// The loop that runs the command's timers.
    var eventLoop: any EventLoop { stack.eventLoop }

    var attMTU: Int { stack.attMTU(connection.handle) }

    func link() async -> LinkDescription { await stack.link(connection.handle) }

    func discover(readValues: Bool) async throws(CLIFailure) -> GATTTree {
        try await GATTTree.discover(on: stack, connection: connection.handle, readValues: readValues)
    }

    func read(_ handle: UInt16) async -> Result<[UInt8], GATTOperationFailure> {
        switch await stack.gatt(connection.handle, .readLongCharacteristicValue(handle: handle)) {
        case .success(.value(let value)): .success(value)
        case .success: .failure(GATTOperationFailure(description: "no value in the answer"))
        case .failure(let error): .failure(GATTOperationFailure(description: error.description))
        }
    }

    func write(_ handle: UInt16, _ value: [UInt8], withResponse: Bool) async -> Result<Void, GATTOperationFailure> {
        let procedure: GATTProcedure
        if !withResponse {
            procedure = .writeWithoutResponse(handle: handle, value: value)
        } else {
            procedure = value.count <= attMTU - 3 ? .writeCharacteristicValue(handle: handle, value: value)
                : .writeLongCharacteristicValue(handle: handle, value: value)
        }
        return await stack.gatt(connection.handle, procedure).map { _ in () }
            .mapError { GATTOperationFailure(description: $0.description) }
    }

    func subscribe(_ characteristic: GATTTree.Characteristic, indications: Bool,
                   _ events: @escaping @Sendable (SubscriptionEvent) -> Void) -> @Sendable () -> Void {
        let connectionHandle = connection.handle
        let valueHandle = characteristic.declaration.valueHandle
        let subscription = stack.addEventHandler { event in
            switch event {
            case .gattNotification(let handle, let attribute, let value), .gattIndication(let handle, let attribute, let value):
                if handle == connectionHandle, attribute == valueHandle { events(.value(value)) }
            case .disconnected(let handle, let reason) where handle == connectionHandle:
                events(.disconnected("\(reason)"))
            default:
                break
            }
        }
        if let cccd = characteristic.cccdHandle {
            stack.engine.gatt(connectionHandle: connectionHandle,
                            .subscribe(cccdHandle: cccd, configuration: indications ? .indications : .notifications)) { result in
                if case .failure(let error) = result { events(.failed(GATTOperationFailure(description: error.description))) }
            }
        } else {
            events(.failed(GATTOperationFailure(description: "it has no Client Characteristic Configuration descriptor")))
        }
        return { subscription.cancel() }
    }

    /// Disconnects and shuts the stack down (bluetoothd's link ends when no client of it wants it).
    func close() async {
        await stack.disconnect(connection.handle)
        stack.shutdown()
    }
}

/// A CHARACTERISTIC argument: a UUID, or SERVICE/CHARACTERISTIC.
struct CharacteristicPath: Sendable, CustomStringConvertible {
    var service: BluetoothUUID?
    var characteristic: BluetoothUUID

    init(_ text: String) throws(CLIFailure) {
        func uuid(_ part: String) throws(CLIFailure) -> BluetoothUUID {
            do {
                return try BluetoothUUID(string: part)
            } catch {
                throw CLIFailure(.usage, "bad UUID \"\(part)\": expected 4 or 8 hex digits, or 8-4-4-4-12 hex digits")
            }
        }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        switch parts.count {
        case 1: characteristic = try uuid(parts[0])
        case 2:
            service = try uuid(parts[0])
            characteristic = try uuid(parts[1])
        default: throw CLIFailure(.usage, "bad characteristic \"\(text)\": expected UUID or SERVICE/CHARACTERISTIC")
        }
    }

    var description: String {
        let label = ValueDecoding.label(characteristic)
        return service.map { "\(label) in service \(ValueDecoding.label($0))" } ?? label
    }

    /// Finds it in the peer's tree, or fails with "no characteristic ... on NAME" (exit code 2).
    func find(in tree: GATTTree, on name: String) throws(CLIFailure) -> GATTTree.Characteristic {
        guard let found = tree.characteristic(characteristic, in: service) else {
            throw CLIFailure(.notFound, "no characteristic \(self) on \(name)")
        }
        return found
    }
}
