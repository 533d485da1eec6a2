import BluetoothRuntime
public import DBus

/// A pairing agent for bluetoothd (BlueZ's doc/org.bluez.Agent.rst and org.bluez.AgentManager.rst): an
/// `org.bluez.Agent1` object exported on our D-Bus connection and registered with AgentManager1 under an IO
/// capability (Core 5.4 Vol 3 Part H §2.3.2). bluetoothd asks it what the association model needs (§2.3.5.1): a
/// confirmation of a Numeric Comparison value, a passkey to display or to type, an authorization for Just Works; each
/// request goes to the handler, whose answer becomes the method's reply (a refusal is `org.bluez.Error.Rejected`).
///
/// bluetoothd uses the agent of the client that called Device1.Pair for that pairing, and the default agent
/// (RequestDefaultAgent) for pairings it starts itself or a peer starts. It bounds every request itself and says
/// Cancel when it gives up; an answer after that is ignored by it.
public final class BlueZAgent: Sendable {
    /// The IO capability bluetoothd pairs with.
    public enum Capability: String, Sendable, CaseIterable {
        case displayOnly = "DisplayOnly"
        case displayYesNo = "DisplayYesNo"
        case keyboardOnly = "KeyboardOnly"
        case noInputNoOutput = "NoInputNoOutput"
        case keyboardDisplay = "KeyboardDisplay"
    }

    /// What bluetoothd asks (the device is its object path).
    public enum Request: Sendable, Hashable {
        /// Numeric Comparison: does the device show this value? (RequestConfirmation)
        case confirmValue(device: String, value: UInt32)
        /// Passkey Entry, we display: show it (DisplayPasskey; `entered` keys typed so far). No answer needed.
        case displayPasskey(device: String, passkey: UInt32, entered: UInt16)
        /// Passkey Entry, we type: the passkey the device shows (RequestPasskey).
        case enterPasskey(device: String)
        /// Just Works with a device that started pairing: allow it? (RequestAuthorization)
        case authorizePairing(device: String)
        /// A connected device uses a service (AuthorizeService).
        case authorizeService(device: String, uuid: String)
        /// BR/EDR legacy PIN (RequestPinCode; DisplayPinCode needs no answer).
        case enterPinCode(device: String)
        case displayPinCode(device: String, pinCode: String)
        /// bluetoothd gave up on the request in progress (Cancel).
        case cancelled
    }

    /// The handler's answer.
    public enum Answer: Sendable, Hashable {
        case accept
        case reject
        case passkey(UInt32)
        case pinCode(String)
    }

    public typealias Handler = @Sendable (Request, @escaping @Sendable (Answer) -> Void) -> Void

    public static let interface = "org.bluez.Agent1"
    static let managerInterface = "org.bluez.AgentManager1"

    public let connection: DBusConnection
    public let path: String
    public let capability: Capability
    private let registered = LockedValue(false)

    private init(connection: DBusConnection, path: String, capability: Capability) {
        self.connection = connection
        self.path = path
        self.capability = capability
    }

    /// Exports the agent at `path` and registers it; with `makeDefault`, also as bluetoothd's default agent.
    public static func register(on connection: DBusConnection, path: String, capability: Capability, makeDefault: Bool = false,
                                handler: @escaping Handler) async throws(DBusError) -> BlueZAgent {
        let agent = BlueZAgent(connection: connection, path: path, capability: capability)
        connection.export(path: path) { [connection] call in Self.answer(call, handler: handler, connection: connection) }
        do throws(DBusError) {
            _ = try await connection.call(.call(destination: BlueZObjectTree.service, path: "/org/bluez", interface: managerInterface,
                                                member: "RegisterAgent", body: [.objectPath(path), .string(capability.rawValue)]),
                                          timeout: .seconds(10))
            agent.registered.store(true)
            if makeDefault {
                _ = try await connection.call(.call(destination: BlueZObjectTree.service, path: "/org/bluez", interface: managerInterface,
                                                    member: "RequestDefaultAgent", body: [.objectPath(path)]),
                                              timeout: .seconds(10))
            }
        } catch {
            await agent.unregister()
            throw error
        }
        return agent
    }

    /// Unregisters the agent (when registered) and stops answering at its path.
    public func unregister() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            unregisterNow { continuation.resume() }
        }
    }

    /// ``unregister()`` from synchronous code (a shutdown): the call is on the bus when this returns; `answered`
    /// runs once bluetoothd answered (or did not within 5 s).
    public func unregisterNow(answered: @escaping @Sendable () -> Void = {}) {
        connection.export(path: path, nil)
        guard registered.withLock({ value in defer { value = false }; return value }) else { return answered() }
        connection.call(.call(destination: BlueZObjectTree.service, path: "/org/bluez", interface: Self.managerInterface,
                              member: "UnregisterAgent", body: [.objectPath(path)]), timeout: .seconds(5)) { _ in answered() }
    }

    /// The request a call makes, nil for Release and unknown members.
    static func request(_ call: DBusMessage) -> Request? {
        let body = call.body
        let device = body.first?.stringValue ?? ""
        switch call.member {
        case "RequestConfirmation": return body.count >= 2 ? body[1].intValue.map { .confirmValue(device: device, value: UInt32(truncatingIfNeeded: $0)) } : nil
        case "DisplayPasskey":
            guard body.count >= 3, let passkey = body[1].intValue, let entered = body[2].intValue else { return nil }
            return .displayPasskey(device: device, passkey: UInt32(truncatingIfNeeded: passkey), entered: UInt16(truncatingIfNeeded: entered))
        case "RequestPasskey": return .enterPasskey(device: device)
        case "RequestAuthorization": return .authorizePairing(device: device)
        case "AuthorizeService": return .authorizeService(device: device, uuid: body.count >= 2 ? body[1].stringValue ?? "" : "")
        case "RequestPinCode": return .enterPinCode(device: device)
        case "DisplayPinCode": return .displayPinCode(device: device, pinCode: body.count >= 2 ? body[1].stringValue ?? "" : "")
        case "Cancel": return .cancelled
        default: return nil
        }
    }

    private static func answer(_ call: DBusMessage, handler: @escaping Handler, connection: DBusConnection) -> DBusMessage? {
        guard call.interface == nil || call.interface == interface else {
            return call.errorReply(name: "org.freedesktop.DBus.Error.UnknownInterface", message: call.interface ?? "")
        }
        if call.member == "Release" { return call.methodReturn() }
        guard let request = request(call) else {
            return call.errorReply(name: "org.freedesktop.DBus.Error.UnknownMethod", message: call.member ?? "")
        }
        switch request {
        case .displayPasskey, .displayPinCode, .cancelled:
            handler(request) { _ in }
            return call.methodReturn()
        default:
            // The reply waits for the handler's answer (once); the reader thread goes on meanwhile.
            let once = LockedValue(false)
            handler(request) { answer in
                guard !once.withLock({ value in defer { value = true }; return value }) else { return }
                let reply: DBusMessage
                switch (answer, request) {
                case (.reject, _): reply = call.errorReply(name: "org.bluez.Error.Rejected", message: "Rejected by the user")
                case (.passkey(let passkey), .enterPasskey) where passkey <= 999_999: reply = call.methodReturn([.uint32(passkey)])
                case (.pinCode(let code), .enterPinCode): reply = call.methodReturn([.string(code)])
                case (.accept, .confirmValue), (.accept, .authorizePairing), (.accept, .authorizeService): reply = call.methodReturn()
                default: reply = call.errorReply(name: "org.bluez.Error.Rejected", message: "No answer to \(call.member ?? "the request")")
                }
                _ = try? connection.send(reply)
            }
            return nil
        }
    }
}
