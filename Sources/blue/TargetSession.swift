import BluetoothCore
import Foundation
import GATT
import Host
import StackLauncher

/// A connection to a TARGET as the GATT commands make it: scan for the target, connect, and the peer's name for
/// messages.
struct TargetSession: Sendable {
    let stack: LaunchedStack
    let report: ScanReport
    let connection: Connection

    /// The name in messages: the advertised name, else the address.
    var displayName: String { report.localName ?? report.address.string }

    /// Opens the stack, finds `target` within `timeout`, connects (within the same time again).
    static func open(_ options: StackOptions, target: String, timeout: Duration, label: String) async throws(CLIFailure) -> TargetSession {
        let stack = try await options.open(label: label)
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

    /// Disconnects and shuts the stack down.
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
