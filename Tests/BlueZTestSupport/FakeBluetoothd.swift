public import DBus
import Foundation
public import TestSupport

/// A stand-in for bluetoothd on a test bus: it owns `org.bluez`, has adapter hci0 (powered), makes one device appear
/// when discovery starts, and answers Connect, ReadValue, WriteValue, StartNotify, StopNotify and Disconnect with
/// the signals bluetoothd sends (BlueZ's doc/org.bluez.*.rst; object paths as its gatt-client names them: a
/// characteristic's path carries its declaration's handle). It records the calls it gets; the real bluetoothd is in
/// the VM scenarios.
public final class FakeBluetoothd: @unchecked Sendable {
    /// A characteristic of the device: `char<handle>` (its declaration; the value is handle + 1).
    public struct Characteristic: Sendable {
        public var handle: UInt16
        public var uuid: String
        public var flags: [String]
        public var value: [UInt8]
        /// The error ReadValue answers (name, message) instead of the value.
        public var readError: (name: String, message: String)?
        /// Client Characteristic Configuration descriptor at handle + 2 when it notifies or indicates.
        public var notifies: Bool { flags.contains("notify") || flags.contains("indicate") }
        public init(handle: UInt16, uuid: String, flags: [String], value: [UInt8], readError: (name: String, message: String)? = nil) {
            self.handle = handle
            self.uuid = uuid
            self.flags = flags
            self.value = value
            self.readError = readError
        }
    }

    public static let adapter = "/org/bluez/hci0"
    public static let deviceAddress = "0A:1B:00:00:00:77"
    public static let device = "/org/bluez/hci0/dev_0A_1B_00_00_00_77"
    public static let serviceHandle: UInt16 = 0x0010
    public static let service = device + "/service0010"
    public static let serviceUUID = "5e570000-0000-4000-8000-0000000b1e2e"
    /// The values StartNotify sends, 20 ms apart.
    public static let notifications: [[UInt8]] = [[9], [10], [11]]
    /// The ATT MTU bluetoothd reports on the characteristics.
    public static let mtu: UInt16 = 185

    public static func path(_ characteristic: Characteristic) -> String {
        service + "/char" + hex4(characteristic.handle)
    }

    public static func cccdPath(_ characteristic: Characteristic) -> String {
        path(characteristic) + "/desc" + hex4(characteristic.handle + 2)
    }

    static func hex4(_ value: UInt16) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: 4 - text.count) + text
    }

    /// The device's name in its advertising ("Fake").
    public let name: String
    public let characteristics: [Characteristic]
    public let connection: DBusConnection
    private let lock = NSLock()
    private var _calls: [String] = []
    private var values: [String: [UInt8]] = [:]
    private var paired = false
    /// When set, WriteValue with type command is answered only by ``releaseCommandWrites()``.
    private var holdingCommands = false
    private var heldCommands: [DBusMessage] = []
    /// The GATT application registered with GattManager1 (its bus name and root), and the advertisement.
    private var application: (sender: String, root: String)?
    private var advertisement: (sender: String, path: String)?
    /// Value changes the application signalled, by object path.
    private var signalledValues: [String: [[UInt8]]] = [:]
    /// The agent registered (its bus name, path and capability).
    private var agent: (sender: String, path: String, capability: String)?
    /// The passkey the device "shows" for Passkey Entry (an agent with KeyboardOnly must answer it).
    public static let devicePasskey: UInt32 = 654_321
    /// The value both sides "show" for Numeric Comparison.
    public static let comparisonValue: UInt32 = 123_456
    /// Every call as "Member args…", in order.
    public var calls: [String] { lock.withLock { _calls } }
    /// The value a characteristic (by declaration handle) holds now (written ones included).
    public func value(of handle: UInt16) -> [UInt8]? {
        lock.withLock { characteristics.first { $0.handle == handle }.flatMap { values[Self.path($0)] } }
    }

    /// The standard device: service 5E570000-… with char0011 (read, write, write-without-response, notify; 01 02 03)
    /// and char0014 (read, refused: NotPermitted).
    public static let standardCharacteristics = [
        Characteristic(handle: 0x0011, uuid: "5e570001-0000-4000-8000-0000000b1e2e",
                       flags: ["read", "write", "write-without-response", "notify"], value: [1, 2, 3]),
        Characteristic(handle: 0x0014, uuid: "5e570002-0000-4000-8000-0000000b1e2e", flags: ["read"], value: [],
                       readError: ("org.bluez.Error.NotPermitted", "Read not permitted")),
    ]

    /// `pairedAtStart`: the device is already known and paired (in GetManagedObjects), as after an earlier pairing.
    public init(bus: TestDBusDaemon, name: String = "Fake", characteristics: [Characteristic] = standardCharacteristics,
                pairedAtStart: Bool = false) async throws {
        self.name = name
        self.characteristics = characteristics
        paired = pairedAtStart
        connection = try await DBusConnection.connect(address: bus.address)
        _ = try await connection.call(.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                            interface: "org.freedesktop.DBus", member: "RequestName",
                                            body: [.string("org.bluez"), .uint32(4)]))
        for characteristic in characteristics { values[Self.path(characteristic)] = characteristic.value }
        let known: [(String, String, [String: DBusValue])] = pairedAtStart
            ? [(Self.device, "org.bluez.Device1", ["Address": .string(Self.deviceAddress), "AddressType": .string("public"),
                                                   "Name": .string(name), "Paired": .boolean(true), "Bonded": .boolean(true),
                                                   "Trusted": .boolean(false), "Connected": .boolean(false)])]
            : []
        connection.export(path: "/") { call in
            call.methodReturn([Self.managed([(Self.adapter, "org.bluez.Adapter1", ["Address": .string("00:AA:01:00:00:23"), "Powered": .boolean(true)])] + known)])
        }
        var paths = [Self.adapter, Self.device, "/org/bluez"]
        for characteristic in characteristics {
            paths.append(Self.path(characteristic))
            if characteristic.notifies { paths.append(Self.cccdPath(characteristic)) }
        }
        for path in paths {
            connection.export(path: path) { [weak self] call in self?.answer(call) }
        }
    }

    // MARK: Write Commands

    /// Holds the answers to Write Commands (WriteValue type command) until ``releaseCommandWrites()``.
    public func holdCommandWrites() { lock.withLock { holdingCommands = true } }

    /// How many Write Commands wait for their answer.
    public var heldCommandWrites: Int { lock.withLock { heldCommands.count } }

    /// Answers the held Write Commands and stops holding.
    public func releaseCommandWrites() {
        let held = lock.withLock { () -> [DBusMessage] in
            holdingCommands = false
            defer { heldCommands = [] }
            return heldCommands
        }
        for call in held { _ = try? connection.send(call.methodReturn()) }
    }

    // MARK: Asking the agent

    /// The capability of the agent registered, if any.
    public var agentCapability: String? { lock.withLock { agent?.capability } }

    /// Calls `member` of the registered agent as bluetoothd does when pairing needs it.
    public func askAgent(_ member: String, _ body: [DBusValue]) async throws -> DBusMessage {
        guard let agent = lock.withLock({ agent }) else { throw DBusError(.disconnected, "no agent registered") }
        return try await connection.call(.call(destination: agent.sender, path: agent.path, interface: "org.bluez.Agent1",
                                               member: member, body: body), timeout: .seconds(10))
    }

    // MARK: As the central of a GATT application (blue serve --hci bluez)

    /// A central connects to us: its device object appears connected, as bluetoothd shows an incoming link.
    public func centralConnects() {
        added(Self.device, "org.bluez.Device1", ["Address": .string(Self.deviceAddress), "AddressType": .string("public"),
                                                "Connected": .boolean(true)])
    }

    /// The registered application's objects (path → interface → properties); empty when none is registered.
    public func applicationObjects() async throws -> [String: [String: [String: DBusValue]]] {
        guard let application = lock.withLock({ application }) else { return [:] }
        let reply = try await connection.call(.call(destination: application.sender, path: application.root,
                                                    interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects"))
        var objects: [String: [String: [String: DBusValue]]] = [:]
        for (path, interfaces) in reply.body.first?.dictionaryValue ?? [:] {
            var entry: [String: [String: DBusValue]] = [:]
            for (interface, properties) in interfaces.dictionaryValue ?? [:] {
                entry[interface] = (properties.dictionaryValue ?? [:]).mapValues(\.unwrapped)
            }
            objects[path] = entry
        }
        return objects
    }

    /// The application's characteristic with `uuid` (lowercase, 128-bit), if registered.
    public func applicationCharacteristic(_ uuid: String) async throws -> String? {
        try await applicationObjects().first { $0.value["org.bluez.GattCharacteristic1"]?["UUID"]?.stringValue == uuid }?.key
    }

    /// Whether an application and an advertisement are registered.
    public var isServing: Bool { lock.withLock { application != nil && advertisement != nil } }

    /// Calls `member` on the application's characteristic at `path` as bluetoothd does for a remote central.
    public func callApplication(_ path: String, _ member: String, _ body: [DBusValue]) async throws -> DBusMessage {
        guard let application = lock.withLock({ application }) else { throw DBusError(.disconnected, "no application") }
        return try await connection.call(.call(destination: application.sender, path: path, interface: "org.bluez.GattCharacteristic1",
                                               member: member, body: body))
    }

    /// AcquireNotify on the application's characteristic at `path`, as bluetoothd calls it when a central subscribes
    /// to a characteristic with NotifyAcquired: the socket (ours to read and close) and the MTU.
    public func acquireNotify(_ path: String, mtu: UInt16 = mtu) async throws -> (fd: Int32, mtu: Int) {
        let reply = try await callApplication(path, "AcquireNotify", [Self.options(["mtu": .uint16(mtu)])])
        guard reply.body.count == 2, let fd = reply.fileDescriptor(at: reply.body[0]), let granted = reply.body[1].intValue else {
            reply.closeFileDescriptors()
            throw DBusError(.invalidArgument, "AcquireNotify answered \(reply.body)")
        }
        return (fd, granted)
    }

    /// ReadValue/WriteValue options naming the central device.
    public static func options(_ extra: [String: DBusValue] = [:]) -> DBusValue {
        .properties(["device": .objectPath(device)].merging(extra) { $1 })
    }

    /// Records the application's Value changes (its notifications).
    public func watchApplicationSignals() async throws {
        guard let application = lock.withLock({ application }) else { return }
        _ = connection.addSignalHandler { [weak self] message in
            guard let self, message.member == "PropertiesChanged", let path = message.path, message.body.count >= 2,
                  let value = message.body[1].dictionaryValue?["Value"]?.bytesValue else { return }
            lock.withLock { self.signalledValues[path, default: []].append(value) }
        }
        try await connection.addMatch("type='signal',sender='\(application.sender)',interface='org.freedesktop.DBus.Properties'")
    }

    /// The values the application signalled for `path`.
    public func signalled(_ path: String) -> [[UInt8]] { lock.withLock { signalledValues[path] ?? [] } }

    /// `a{oa{sa{sv}}}` from (path, interface, properties).
    public static func managed(_ objects: [(String, String, [String: DBusValue])]) -> DBusValue {
        let properties = DBusType.array(.dictEntry(key: .string, value: .variant))
        let interfaces = DBusType.array(.dictEntry(key: .string, value: properties))
        return .dictionary(key: .objectPath, value: interfaces, objects.map { path, interface, values in
            (.objectPath(path), .dictionary(key: .string, value: properties, [(.string(interface), .properties(values))]))
        })
    }

    private func added(_ path: String, _ interface: String, _ properties: [String: DBusValue]) {
        let properties = DBusValue.properties(properties)
        _ = try? connection.send(DBusMessage(kind: .signal, path: "/", interface: "org.freedesktop.DBus.ObjectManager",
                                             member: "InterfacesAdded",
                                             body: [.objectPath(path), .dictionary(key: .string, value: properties.type, [(.string(interface), properties)])]))
    }

    private func changed(_ path: String, _ interface: String, _ properties: [String: DBusValue]) {
        _ = try? connection.send(DBusMessage(kind: .signal, path: path, interface: "org.freedesktop.DBus.Properties",
                                             member: "PropertiesChanged",
                                             body: [.string(interface), .properties(properties), .array(.string, [])]))
    }

    /// Pair as bluetoothd does it with the caller's agent: Numeric Comparison for DisplayYesNo and KeyboardDisplay,
    /// Passkey Entry (the agent types) for KeyboardOnly, Just Works otherwise.
    private func pair(_ call: DBusMessage) {
        let registered = lock.withLock { agent }
        let done: @Sendable (DBusError?) -> Void = { [self] error in
            if let error {
                _ = try? connection.send(call.errorReply(name: error.name ?? "org.bluez.Error.AuthenticationFailed", message: error.reason))
                return
            }
            lock.withLock { paired = true }
            changed(Self.device, "org.bluez.Device1", ["Paired": .boolean(true), "Bonded": .boolean(true)])
            _ = try? connection.send(call.methodReturn())
        }
        guard let registered, registered.capability != "NoInputNoOutput" else { return done(nil) }
        let keyboard = registered.capability == "KeyboardOnly"
        let request = DBusMessage.call(destination: registered.sender, path: registered.path, interface: "org.bluez.Agent1",
                                       member: keyboard ? "RequestPasskey" : "RequestConfirmation",
                                       body: keyboard ? [.objectPath(Self.device)] : [.objectPath(Self.device), .uint32(Self.comparisonValue)])
        connection.call(request, timeout: .seconds(20)) { result in
            switch result {
            case .success(let reply) where !keyboard || reply.body.first?.intValue == Int(Self.devicePasskey):
                done(nil)
            case .success:
                done(DBusError(.errorReply, "Authentication Failed", name: "org.bluez.Error.AuthenticationFailed"))
            case .failure:
                done(DBusError(.errorReply, "Authentication Rejected", name: "org.bluez.Error.AuthenticationRejected"))
            }
        }
    }

    private func answer(_ call: DBusMessage) -> DBusMessage? {
        let member = call.member ?? "?"
        let path = call.path ?? ""
        lock.withLock { _calls.append("\(member) \(call.body.map(\.description).joined(separator: " "))") }
        switch member {
        case "SetDiscoveryFilter", "StopDiscovery":
            return call.methodReturn()
        case "StartDiscovery":
            let reply = call.methodReturn()
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { [self] in
                added(Self.device, "org.bluez.Device1", [
                    "Address": .string(Self.deviceAddress), "AddressType": .string("public"), "Name": .string(name),
                    "RSSI": .int16(-50), "UUIDs": .array(.string, [.string(Self.serviceUUID)]),
                    "ManufacturerData": .dictionary(key: .uint16, value: .variant, [(.uint16(0x004C), .variant(.bytes([0x02, 0x15])))]),
                    "Connected": .boolean(false), "ServicesResolved": .boolean(false),
                    "Paired": .boolean(lock.withLock { paired }), "Bonded": .boolean(lock.withLock { paired }),
                ])
            }
            return reply
        case "Connect":
            _ = try? connection.send(call.methodReturn())
            changed(Self.device, "org.bluez.Device1", ["Connected": .boolean(true)])
            added(Self.service, "org.bluez.GattService1", ["UUID": .string(Self.serviceUUID), "Primary": .boolean(true),
                                                          "Device": .objectPath(Self.device)])
            for characteristic in characteristics {
                added(Self.path(characteristic), "org.bluez.GattCharacteristic1", [
                    "UUID": .string(characteristic.uuid), "Service": .objectPath(Self.service),
                    "Flags": .array(.string, characteristic.flags.map { .string($0) }), "MTU": .uint16(Self.mtu),
                ])
                if characteristic.notifies {
                    added(Self.cccdPath(characteristic), "org.bluez.GattDescriptor1", [
                        "UUID": .string("00002902-0000-1000-8000-00805f9b34fb"), "Characteristic": .objectPath(Self.path(characteristic)),
                    ])
                }
            }
            changed(Self.device, "org.bluez.Device1", ["ServicesResolved": .boolean(true)])
            return nil
        case "ReadValue":
            if path.contains("/desc") { return call.methodReturn([.bytes([0, 0])]) }
            if let error = characteristics.first(where: { Self.path($0) == path })?.readError {
                return call.errorReply(name: error.name, message: error.message)
            }
            return call.methodReturn([.bytes(lock.withLock { values[path] } ?? [])])
        case "WriteValue":
            if let bytes = call.body.first?.bytesValue { lock.withLock { values[path] = bytes } }
            let command = call.body.count > 1 && call.body[1].dictionaryValue?["type"]?.stringValue == "command"
            if command, lock.withLock({ holdingCommands ? { heldCommands.append(call); return true }() : false }) { return nil }
            return call.methodReturn()
        case "StartNotify":
            _ = try? connection.send(call.methodReturn())
            changed(path, "org.bluez.GattCharacteristic1", ["Notifying": .boolean(true)])
            // One after the other from one block, as bluetoothd sends them: separate timers on a concurrent queue
            // could run out of order on a busy machine (the test once saw 9, 11, 10).
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) { [self] in
                for value in Self.notifications {
                    changed(path, "org.bluez.GattCharacteristic1", ["Value": .bytes(value)])
                    usleep(20_000)
                }
            }
            return nil
        case "StopNotify":
            return call.methodReturn()
        case "RegisterApplication":
            guard let sender = call.sender, let root = call.body.first?.stringValue else {
                return call.errorReply(name: "org.bluez.Error.InvalidArguments", message: "")
            }
            // bluetoothd reads the application's objects before it answers.
            connection.call(.call(destination: sender, path: root, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects"),
                            timeout: .seconds(10)) { [self] result in
                switch result {
                case .success:
                    lock.withLock { application = (sender, root) }
                    _ = try? connection.send(call.methodReturn())
                case .failure(let error):
                    _ = try? connection.send(call.errorReply(name: "org.bluez.Error.Failed", message: "\(error)"))
                }
            }
            return nil
        case "UnregisterApplication":
            lock.withLock { application = nil }
            return call.methodReturn()
        case "RegisterAdvertisement":
            guard let sender = call.sender, let path = call.body.first?.stringValue else {
                return call.errorReply(name: "org.bluez.Error.InvalidArguments", message: "")
            }
            lock.withLock { advertisement = (sender, path) }
            return call.methodReturn()
        case "UnregisterAdvertisement":
            lock.withLock { advertisement = nil }
            return call.methodReturn()
        case "RegisterAgent":
            guard let sender = call.sender, call.body.count == 2, let agentPath = call.body[0].stringValue,
                  let capability = call.body[1].stringValue else { return call.errorReply(name: "org.bluez.Error.InvalidArguments", message: "") }
            lock.withLock { agent = (sender, agentPath, capability) }
            return call.methodReturn()
        case "UnregisterAgent":
            lock.withLock { agent = nil }
            return call.methodReturn()
        case "RequestDefaultAgent":
            return call.methodReturn()
        case "RemoveDevice":
            lock.withLock { paired = false }
            _ = try? connection.send(DBusMessage(kind: .signal, path: "/", interface: "org.freedesktop.DBus.ObjectManager",
                                                 member: "InterfacesRemoved",
                                                 body: [.objectPath(Self.device), .array(.string, [.string("org.bluez.Device1")])]))
            return call.methodReturn()
        case "Pair":
            pair(call)
            return nil
        case "GetAll" where path == Self.device:
            let now = lock.withLock { paired }
            return call.methodReturn([.properties(["Address": .string(Self.deviceAddress), "Paired": .boolean(now), "Bonded": .boolean(now)])])
        case "Disconnect":
            _ = try? connection.send(call.methodReturn())
            changed(Self.device, "org.bluez.Device1", ["Connected": .boolean(false), "ServicesResolved": .boolean(false)])
            return nil
        default:
            return call.errorReply(name: "org.bluez.Error.NotSupported", message: member)
        }
    }
}

extension FakeBluetoothd {
    /// Runs `body` with a dbus-daemon of its own and the stand-in on it, both stopped afterwards (also when `body`
    /// throws). Returns false, running nothing, when dbus-daemon is not installed (the caller decides whether that
    /// fails the test: ``TestDBusDaemon/required``).
    public static func run(pairedAtStart: Bool = false,
                           _ body: (FakeBluetoothd, TestDBusDaemon) async throws -> Void) async throws -> Bool {
        guard let (bus, bluetoothd) = try await start(pairedAtStart: pairedAtStart) else { return false }
        do {
            try await body(bluetoothd, bus)
        } catch {
            bluetoothd.connection.close()
            await bus.stop()
            throw error
        }
        bluetoothd.connection.close()
        await bus.stop()
        return true
    }

    /// A dbus-daemon of its own with the stand-in on it (the caller stops both); nil when dbus-daemon is not installed.
    public static func start(pairedAtStart: Bool = false) async throws -> (TestDBusDaemon, FakeBluetoothd)? {
        guard let bus = try await TestDBusDaemon.start() else { return nil }
        do {
            return (bus, try await FakeBluetoothd(bus: bus, pairedAtStart: pairedAtStart))
        } catch {
            await bus.stop()
            throw error
        }
    }
}
