import ATT
public import BluetoothCore
import BluetoothRuntime
public import GATT

/// A characteristic of the local GATT server, declared with ``Service`` (Core 5.4 Vol 3 Part G §3.3: declaration,
/// value, descriptors; the CCCD of a notifying characteristic is added by the database).
///
/// By default the value is kept by the server (value-backed): reads, including long reads, are answered from the
/// current value without running application code; writes replace it and are then reported through ``writes()``
/// and ``onWrite(_:)``. With ``onRead(_:)`` or ``onWriteRequest(_:)`` the application answers instead: the host
/// defers the Read / Read Blob / Write / Execute Write Request (its `GATTDeferral`), the async handler runs on a
/// task of its own (never on the stack's loop), and its result (or thrown ATT error) becomes the response.
/// Permissions and lengths are checked by the server before a handler runs. Write Commands (without response)
/// are never deferred: they are stored and reported.
///
/// The object is the handle to the characteristic once published: ``BluetoothStack/notify(_:value:to:)`` and
/// ``BluetoothStack/setValue(_:_:)`` take it. Publish it in one stack only.
public final class Characteristic: Sendable, CustomStringConvertible {
    /// The characteristic type.
    public let uuid: BluetoothUUID
    /// The properties in the characteristic declaration: how a client may use the value.
    public let properties: GATTCharacteristicProperties
    /// What the server allows on the value (read, write, and the security each needs).
    public let permissions: GATTPermissions
    /// The longest value a client may write, in octets (512 by default, the ATT maximum).
    public let maximumLength: Int
    /// The descriptors declared with the characteristic, besides the CCCD the database adds.
    public let descriptors: [Descriptor]
    let initialValue: [UInt8]

    struct State {
        var value: [UInt8]
        var valueHandle: UInt16?
        var subscriptions: [UInt16: UInt16] = [:]
        var writeSinks: [UInt64: AsyncStream<CharacteristicWrite>.Continuation] = [:]
        var nextID: UInt64 = 0
        var writeHandlers: [@Sendable (CharacteristicWrite) async -> Void] = []
        var readHandler: (@Sendable (CharacteristicRead) async throws -> [UInt8])?
        var writeRequestHandler: (@Sendable (CharacteristicWrite) async throws -> Void)?
    }

    let state: LockedValue<State>

    /// A characteristic with `properties` (read, write, notify...), the value permissions (derived from the
    /// properties when nil) and an initial value.
    public init(_ uuid: BluetoothUUID, properties: GATTCharacteristicProperties, permissions: GATTPermissions? = nil,
                value: [UInt8] = [], maximumLength: Int = 512,
                descriptors: [Descriptor] = []) {
        self.uuid = uuid
        self.properties = properties
        let writable = !properties.isDisjoint(with: [.write, .writeWithoutResponse])
        self.permissions = permissions ?? GATTPermissions(readable: properties.contains(.read), writable: writable)
        self.maximumLength = maximumLength
        self.descriptors = descriptors
        initialValue = value
        state = LockedValue(State(value: value))
    }

    /// A UTF-8 text value.
    public convenience init(_ uuid: BluetoothUUID, properties: GATTCharacteristicProperties, permissions: GATTPermissions? = nil,
                            text: String, descriptors: [Descriptor] = []) {
        self.init(uuid, properties: properties, permissions: permissions, value: Array(text.utf8), descriptors: descriptors)
    }

    /// Adds a handler called with every write a central makes, in order, on a task of its own (after the value
    /// was stored). Returns self, for use inside a ``Service`` builder.
    @discardableResult
    public func onWrite(_ handler: @escaping @Sendable (CharacteristicWrite) async -> Void) -> Characteristic {
        state.withLock { $0.writeHandlers.append(handler) }
        return self
    }

    /// Makes reads of the value ask `handler` (Read Request, and each Read Blob Request of a long read, with its
    /// offset): it returns the whole value, which is answered from the request's offset; throw a
    /// `GATTAttributeError` (e.g. an application error 0x80...0x9F) to answer an Error Response. Runs on a task
    /// of its own. Returns self, for use inside a ``Service`` builder.
    @discardableResult
    public func onRead(_ handler: @escaping @Sendable (CharacteristicRead) async throws -> [UInt8]) -> Characteristic {
        state.withLock { $0.readHandler = handler }
        return self
    }

    /// Makes Write Requests (and Execute Writes of long writes, with the whole new value) ask `handler` before they
    /// are answered: returning stores the value and answers success (then ``writes()`` and ``onWrite(_:)`` hear of
    /// it); throwing a `GATTAttributeError` refuses the write with that ATT error. Runs on a task of its own.
    @discardableResult
    public func onWriteRequest(_ handler: @escaping @Sendable (CharacteristicWrite) async throws -> Void) -> Characteristic {
        state.withLock { $0.writeRequestHandler = handler }
        return self
    }

    /// Whether the application answers requests for the value (``onRead(_:)`` or ``onWriteRequest(_:)``).
    var answersRequests: Bool {
        state.withLock { $0.readHandler != nil || $0.writeRequestHandler != nil }
    }

    /// The value as last set or written.
    public var value: [UInt8] { state.withLock { $0.value } }

    /// The handle of the value attribute, once published.
    public var valueHandle: UInt16? { state.withLock { $0.valueHandle } }

    /// The connection handles of the centrals subscribed now (CCCD non-zero), in order.
    public var subscribedConnections: [UInt16] {
        state.withLock { $0.subscriptions.filter { $0.value != 0 }.keys.sorted() }
    }

    /// The CCCD value a connection wrote (0 when none).
    public func clientConfiguration(connectionHandle: UInt16) -> UInt16 {
        state.withLock { $0.subscriptions[connectionHandle] ?? 0 }
    }

    /// The writes centrals make, from now on. Buffers without limit; ends when the consumer leaves its loop.
    public func writes() -> ValueStream<CharacteristicWrite> {
        let (stream, continuation) = AsyncStream.makeStream(of: CharacteristicWrite.self, bufferingPolicy: .unbounded)
        let id = state.withLock { state -> UInt64 in
            state.nextID &+= 1
            state.writeSinks[state.nextID] = continuation
            return state.nextID
        }
        continuation.onTermination = { [state] _ in _ = state.withLock { $0.writeSinks.removeValue(forKey: id) } }
        return ValueStream(base: stream, token: StopToken { continuation.finish() })
    }

    /// How many write streams are open (for leak checks).
    public var writeStreamCount: Int { state.withLock { $0.writeSinks.count } }

    // MARK: Stack side

    /// The definition the database takes.
    var definition: GATTCharacteristicDefinition {
        GATTCharacteristicDefinition(
            uuid: uuid, properties: properties, permissions: permissions, value: .stored(initialValue),
            maximumLength: maximumLength, descriptors: descriptors.map(\.definition))
    }

    func published(valueHandle: UInt16) {
        state.withLock { $0.valueHandle = valueHandle }
    }

    func received(_ write: CharacteristicWrite) {
        let sinks = state.withLock { state in
            state.value = write.value
            return Array(state.writeSinks.values)
        }
        for sink in sinks { sink.yield(write) }
    }

    func stored(_ value: [UInt8]) {
        state.withLock { $0.value = value }
    }

    func setSubscription(_ connectionHandle: UInt16, _ configuration: UInt16) {
        state.withLock { state in
            if configuration == 0 { state.subscriptions[connectionHandle] = nil } else { state.subscriptions[connectionHandle] = configuration }
        }
    }

    public var description: String {
        "characteristic \(uuid)\(valueHandle.map { " value \(Dissection.hex16($0))" } ?? " (not published)")"
    }
}

/// A write a central made to a local ``Characteristic`` (Core 5.4 Vol 3 Part F §3.4.5: Write Request, Write
/// Command, or Execute Write of prepared writes): the whole new value.
public struct CharacteristicWrite: Sendable, CustomStringConvertible {
    /// The central, when it is still connected when the write is reported.
    public var central: Central?
    /// The connection the write came on.
    public var connectionHandle: UInt16
    /// The characteristic's whole new value.
    public var value: [UInt8]

    public var description: String { "write of \(value.count) octets from \(Dissection.hex16(connectionHandle))" }
}

/// A read a central makes of a local ``Characteristic`` with an ``Characteristic/onRead(_:)`` handler (Core 5.4
/// Vol 3 Part F §3.4.4.3 Read Request, §3.4.4.5 Read Blob Request).
public struct CharacteristicRead: Sendable, CustomStringConvertible {
    /// The central, when it is still connected when the read is reported.
    public var central: Central?
    /// The connection the read came on.
    public var connectionHandle: UInt16
    /// 0 for a Read Request; the Read Blob offset of a long read's later parts.
    public var offset: Int

    public var description: String { "read at offset \(offset) from \(Dissection.hex16(connectionHandle))" }
}

/// A descriptor of a local characteristic (Core 5.4 Vol 3 Part G §3.3.3), value-backed.
public struct Descriptor: Sendable {
    /// The descriptor type.
    public var uuid: BluetoothUUID
    /// What the server allows on the value.
    public var permissions: GATTPermissions
    /// The value, kept by the server.
    public var value: [UInt8]

    /// A descriptor with a value, read-only by default.
    public init(_ uuid: BluetoothUUID, permissions: GATTPermissions = .readOnly, value: [UInt8]) {
        self.uuid = uuid
        self.permissions = permissions
        self.value = value
    }

    /// A Characteristic User Description (0x2901, §3.3.3.2).
    public static func userDescription(_ text: String) -> Descriptor {
        Descriptor(GATTUUID.characteristicUserDescription, value: Array(text.utf8))
    }

    var definition: GATTDescriptorDefinition {
        GATTDescriptorDefinition(uuid: uuid, permissions: permissions, value: .stored(value))
    }
}
