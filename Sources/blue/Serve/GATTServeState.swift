import BlueZ
import ArgumentParser
import ATT
import BluetoothCore
import BluetoothRuntime
import Dispatch
import FoundationEssentials
import GATT
import HCI
import L2CAP
import Host
import SMP
import StackLauncher
import BluetoothEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a platform's GATT server leaves to the app (``PlatformPersonality``): ours answers at once and sends every
/// notification; Android's `BluetoothGattServer` hands every request to the app, adds no CCCD, and takes one
/// notification at a time.
struct ServeBehaviour: Sendable {
    /// Every read and write of a characteristic value, and of a declared 2902 descriptor, goes to the app, which
    /// answers it (`onCharacteristicReadRequest` / `onCharacteristicWriteRequest` / `onDescriptorWriteRequest` /
    /// `onExecuteWrite` and `sendResponse`).
    var appAnswersEveryRequest = false
    /// The server adds the CCCD of a notifying characteristic that declares none.
    var addsClientConfiguration = true
    /// One notification or indication in flight per central: the next is refused (busy) until the last is sent
    /// (handed to L2CAP) or, for an indication, confirmed (`onNotificationSent`).
    var oneValueInFlight = false
}

/// The running server's state: the values (by handle), what each handle is, the peers, their subscriptions, the
/// generators. Values are served through dynamic handlers (or answered by the app, GATTServeState+Requests.swift)
/// so every read and write can be printed; state is lock-protected and touched on the stack's loop.
final class GATTServeState: Sendable {
    struct Entry: Sendable {
        var uuid: BluetoothUUID
        var notifiesOnWrite: Bool
        var generator: ServeGenerator?
        /// Notified (or indicated) to each central right after it subscribes, to it alone.
        var subscribeValue: [UInt8]?
        /// How the app answers this value's requests (nil: at once, by the stack, unless the behaviour says the
        /// app answers everything).
        var answer: ServeAnswer?
        /// The reply to a write, before the written value, to the writer alone.
        var echoPrefix: [UInt8]?
    }

    /// A 2902 descriptor the definition declares.
    struct DeclaredClientConfiguration: Sendable {
        var valueHandle: UInt16
        var answer: ServeAnswer?
    }

    struct State {
        var values: [UInt16: [UInt8]] = [:]
        var entries: [UInt16: Entry] = [:]
        /// By descriptor handle.
        var declaredClientConfigurations: [UInt16: DeclaredClientConfiguration] = [:]
        /// The handles the app answers itself (``GATTDeferral``).
        var appAnswered: Set<UInt16> = []
        var peers: [UInt16: String] = [:]
        /// Per connection, per value handle: what the central enabled.
        var subscriptions: [UInt16: [UInt16: GATTClientConfiguration]] = [:]
        /// Per connection: the value handle of the notification or indication not yet sent (``ServeBehaviour/oneValueInFlight``).
        var inFlight: [UInt16: UInt16] = [:]
        var content = AdvertisingContent()
        var options = AdvertisingOptions()
        var stopped = false
    }

    let state = LockedValue(State())
    let stackBox = LockedValue<(any OpenedStack)?>(nil)
    let json: Bool
    let behaviour: ServeBehaviour
    /// The connection parameters asked for once connected, as peripheral (``PlatformPersonality/connectionParameterRequest(for:)``).
    let parameterRequest: (@Sendable (ConnectionParameters) -> L2CAPConnectionParameterUpdateRequest?)?

    init(json: Bool, behaviour: ServeBehaviour = ServeBehaviour(),
         parameterRequest: (@Sendable (ConnectionParameters) -> L2CAPConnectionParameterUpdateRequest?)? = nil) {
        self.json = json
        self.behaviour = behaviour
        self.parameterRequest = parameterRequest
    }

    /// Prints one event: the JSON object, or the text line.
    func note(_ object: [String: Any], text: String) {
        if json { Console.json(object) } else { Console.line(text) }
    }

    func peer(_ connection: GATTConnectionID) -> String {
        state.withLock { $0.peers[connection.rawValue] } ?? "connection \(connection.rawValue)"
    }

    func build(_ services: [CompiledService], name: String, appearance: UInt16) throws(CLIFailure) -> GATTDatabase {
        var database = GATTDatabase()
        do {
            try database.addGAPService(deviceName: name, appearance: appearance)
            try database.addGATTService()
            for service in services {
                let definitions = service.characteristics.map { characteristic in
                    var definition = GATTCharacteristicDefinition(
                        uuid: characteristic.uuid, properties: characteristic.properties,
                        permissions: characteristic.permissions, value: dynamicValue(),
                        maximumLength: characteristic.maximumLength,
                        descriptors: characteristic.descriptors.map {
                            $0.uuid == GATTUUID.clientCharacteristicConfiguration
                                ? .clientConfiguration
                                : GATTDescriptorDefinition(uuid: $0.uuid, permissions: $0.permissions, value: .stored($0.value))
                        })
                    definition.addsClientConfiguration = behaviour.addsClientConfiguration
                    return definition
                }
                let handles = try database.add(GATTServiceDefinition(uuid: service.uuid, isPrimary: service.isPrimary,
                                                                     characteristics: definitions))
                state.withLock { state in
                    for (characteristic, assigned) in zip(service.characteristics, handles.characteristics) {
                        state.values[assigned.value] = characteristic.value
                        let writes = !characteristic.properties.isDisjoint(with: [.write, .writeWithoutResponse])
                        state.entries[assigned.value] = Entry(
                            uuid: characteristic.uuid,
                            notifiesOnWrite: characteristic.notifies && writes && characteristic.generator == nil && characteristic.echoPrefix == nil,
                            generator: characteristic.generator, subscribeValue: characteristic.subscribeValue,
                            answer: characteristic.answer, echoPrefix: characteristic.echoPrefix)
                        if characteristic.answer != nil || behaviour.appAnswersEveryRequest { state.appAnswered.insert(assigned.value) }
                        if characteristic.declaresClientConfiguration, let descriptor = assigned.clientConfiguration {
                            state.declaredClientConfigurations[descriptor] = DeclaredClientConfiguration(
                                valueHandle: assigned.value, answer: characteristic.clientConfigurationAnswer)
                            if characteristic.clientConfigurationAnswer != nil || behaviour.appAnswersEveryRequest {
                                state.appAnswered.insert(descriptor)
                            }
                        }
                    }
                }
            }
        } catch {
            throw CLIFailure(.usage, "the definition does not make a GATT database: \(error.reason)")
        }
        return database
    }

    private func dynamicValue() -> GATTValue {
        .dynamic(
            read: { [self] request in
                let (value, entry) = state.withLock { ($0.values[request.handle] ?? [], $0.entries[request.handle]) }
                if request.offset == 0, let entry { noteRead(request.connection, entry, value) }
                return request.answer(wholeValue: value)
            },
            write: { [self] request in
                guard request.kind != .preparedValidation else { return nil }
                applyWrite(request.connection, handle: request.handle, offset: request.offset, value: request.value,
                           withResponse: request.kind != .command)
                return nil
            })
    }

    func noteRead(_ connection: GATTConnectionID, _ entry: Entry, _ value: [UInt8], answer: ServeAnswer = .atOnce) {
        let decoded = ValueDecoding.describe(value, uuid: entry.uuid).map { "  (\($0))" } ?? ""
        let answered = answer == .atOnce ? "" : " (the app answers: \(answer.summary))"
        note(["event": "read", "peer": peer(connection), "uuid": entry.uuid.uuidString, "hex": Hex.encode(value)],
             text: "read \(ValueDecoding.label(entry.uuid)) by \(peer(connection)): \(ValueDecoding.hex(value))\(decoded)\(answered)")
    }

    /// Keeps a write the app accepted (from `offset`), prints it, and sends what follows a write: the chat's copy to
    /// the other subscribers, the echo to the writer (after the current job, so after the Write Response).
    func applyWrite(_ connection: GATTConnectionID, handle: UInt16, offset: Int, value written: [UInt8], withResponse: Bool) {
        let (value, entry, peers) = state.withLock { state -> ([UInt8], Entry?, Set<UInt16>) in
            var value = state.values[handle] ?? []
            if offset > 0, offset <= value.count {
                value = Array(value[..<offset]) + written
            } else {
                value = written
            }
            state.values[handle] = value
            return (value, state.entries[handle], Set(state.peers.keys))
        }
        guard let entry else { return }
        let decoded = ValueDecoding.describe(value, uuid: entry.uuid).map { "  (\($0))" } ?? ""
        let kind = withResponse ? "" : " (without response)"
        note(["event": "write", "peer": peer(connection), "uuid": entry.uuid.uuidString, "hex": Hex.encode(value),
              "withResponse": withResponse],
             text: "write \(ValueDecoding.label(entry.uuid)) by \(peer(connection))\(kind): \(ValueDecoding.hex(value))\(decoded)")
        if entry.notifiesOnWrite {
            let others = peers.subtracting([connection.rawValue])
            if !others.isEmpty { send(value, handle: handle, to: others) }
        }
        if let prefix = entry.echoPrefix { send(prefix + value, handle: handle, to: [connection.rawValue]) }
    }

    /// Starts printing the stack's events and re-advertising after connections.
    func attach(_ stack: any OpenedStack) {
        stackBox.store(stack)
        stack.engine.addEventHandler { [self] event in
            switch event {
            case .connected(let connection):
                state.withLock { $0.peers[connection.handle] = connection.peer.string }
                note(["event": "connected", "peer": connection.peer.string, "handle": Int(connection.handle)],
                     text: "connected: \(connection.peer) (handle \(Dissection.hex16(connection.handle)))")
                askForParameters(connection, stack.engine)
                readvertise()
            case .gattIndicationConfirmed(let handle, _), .gattIndicationFailed(let handle, _, _):
                _ = state.withLock { $0.inFlight.removeValue(forKey: handle) }
            case .disconnected(let handle, let reason):
                let peer = state.withLock { state in
                    state.subscriptions[handle] = nil
                    state.inFlight[handle] = nil
                    return state.peers.removeValue(forKey: handle)
                } ?? "handle \(Dissection.hex16(handle))"
                note(["event": "disconnected", "peer": peer, "reason": reason.description],
                     text: "disconnected: \(peer) (\(reason))")
                readvertise()
            case .encryptionChanged(let handle, let status, let enabled):
                // Also when a bonded central encrypts with its stored key on a new connection (no pairing follows).
                let peer = state.withLock { $0.peers[handle] } ?? "handle \(Dissection.hex16(handle))"
                if status == .success {
                    note(["event": "encryption", "peer": peer, "handle": Int(handle), "enabled": enabled],
                         text: "\(enabled ? "encrypted" : "encryption off"): \(peer)")
                } else {
                    note(["event": "encryptionFailed", "peer": peer, "handle": Int(handle), "status": status.description],
                         text: "encryption failed: \(peer) (\(status))")
                }
            case .attMTUChanged(let handle, let mtu):
                note(["event": "mtu", "handle": Int(handle), "mtu": mtu], text: "ATT MTU \(mtu) on handle \(Dissection.hex16(handle))")
            case .gattServer(.subscriptionChanged(let connection, let valueHandle, let configuration)):
                let (uuid, subscribeValue) = state.withLock { ($0.entries[valueHandle]?.uuid, $0.entries[valueHandle]?.subscribeValue) }
                let label = uuid.map(ValueDecoding.label) ?? Dissection.hex16(valueHandle)
                let what = configuration.contains(.indication) ? "indications" : configuration.contains(.notification) ? "notifications" : "off"
                note(["event": "subscription", "peer": peer(connection), "uuid": uuid?.uuidString ?? "", "configuration": what],
                     text: (configuration.isEmpty ? "unsubscribe " : "subscribe ") + "\(label) by \(peer(connection))"
                        + (configuration.isEmpty ? "" : " (\(what))"))
                state.withLock { $0.subscriptions[connection.rawValue, default: [:]][valueHandle] = configuration }
                if !configuration.isEmpty, let subscribeValue {
                    // As seed 001's peripheral in didSubscribeTo: the value to this central alone, after the
                    // Write Response to its CCCD write (a later job on the loop).
                    send(subscribeValue, handle: valueHandle, to: [connection.rawValue])
                }
            case .gattServer(.valueWritten(let connection, let handle, let value)):
                note(["event": "write", "peer": peer(connection), "handle": Int(handle), "hex": Hex.encode(value)],
                     text: "write handle \(Dissection.hex16(handle)) by \(peer(connection)): \(ValueDecoding.hex(value))")
            default:
                break
            }
        }
    }

    /// Answers pairing as peripheral and prints it (Core 5.4 Vol 3 Part H §2.3.5.1): the passkey to display, the
    /// numeric value (confirmed), a passkey to type (`passkey`, else a line of standard input), the outcome.
    func attachPairing(_ stack: any OpenedStack, passkey: UInt32?, repairing: Bool) {
        let host = stack.engine
        host.addEventHandler { [self] event in
            switch event {
            case .pairingInteraction(let handle, let interaction):
                switch interaction {
                case .displayPasskey(let value):
                    note(["event": "displayPasskey", "handle": Int(handle), "passkey": Int(value)],
                         text: "Passkey to type on the other side: \(Pair.six(value))")
                case .confirmNumericValue(let value):
                    note(["event": "numericComparison", "handle": Int(handle), "value": Int(value)],
                         text: "Numeric comparison: \(Pair.six(value)) (confirmed)")
                    host.answerPairing(connectionHandle: handle, .confirm(true))
                case .confirmJustWorks:
                    host.answerPairing(connectionHandle: handle, .confirm(true))
                case .enterPasskey:
                    if let passkey {
                        host.answerPairing(connectionHandle: handle, .passkey(passkey))
                    } else {
                        let json = json
                        DispatchQueue.global().async {
                            if !json { Console.line("Type the passkey shown on the other side:") }
                            let line = readLine(strippingNewline: true)
                            host.answerPairing(connectionHandle: handle,
                                               .passkey(line.flatMap { UInt32($0.trimmingWhitespace()) }))
                        }
                    }
                }
            case .pairingCompleted(let handle, let outcome):
                var object = Pair.describe(outcome)
                object["event"] = "paired"
                object["handle"] = Int(handle)
                note(object, text: "paired: " + Pair.text(outcome, name: peer(GATTConnectionID(handle))))
            case .bondLost(let handle, let identity):
                note(["event": "bondLost", "handle": Int(handle), "identity": identity.string],
                     text: "\(identity) paired again although we hold its bond (it lost its keys): "
                        + (repairing ? "re-pairing allowed" : "refused (--allow-repairing allows it)"))
            case .pairingFailed(let handle, let reason, let error):
                note(["event": "pairingFailed", "handle": Int(handle), "reason": reason.map { "\($0)" } ?? "", "error": error.reason],
                     text: "pairing failed: \(error.reason)")
            default:
                break
            }
        }
    }

    /// Advertises `wanted` (retrying with fewer service UUIDs when they do not fit).
    func advertise(_ wanted: AdvertisingContent, options: AdvertisingOptions) async throws(CLIFailure) -> AdvertisingContent {
        guard let stack = stackBox.load() else { throw CLIFailure(.failed, "no stack") }
        let services = wanted.serviceUUIDs
        var candidates = [services]
        let short = services.filter { $0.uuid16 != nil }
        if short != services { candidates.append(short) }
        candidates.append([])
        var lastError = ""
        for list in candidates {
            var content = wanted
            content.serviceUUIDs = list
            let result = await stack.awaitCompletion { stack.engine.startAdvertising(content, options: options, completion: $0) }
            switch result {
            case .success:
                state.withLock {
                    $0.content = content
                    $0.options = options
                }
                if list != services {
                    Console.error("warning: advertising \(list.count) of \(services.count) service UUIDs (the rest do not fit)")
                }
                return content
            case .failure(let error):
                lastError = error.reason
                if error.code != .advertisingDataTooLarge { break }
            }
        }
        throw CLIFailure(.failed, "cannot advertise: \(lastError)")
    }

    private func readvertise() {
        guard let stack = stackBox.load() else { return }
        let (content, options, stopped) = state.withLock { ($0.content, $0.options, $0.stopped) }
        guard !stopped else { return }
        stack.engine.startAdvertising(content, options: options) { _ in }
    }

    func stop() {
        state.withLock { $0.stopped = true }
    }
}
