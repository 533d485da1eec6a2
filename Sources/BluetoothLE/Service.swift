public import BluetoothCore
import GATT

/// A service of the local GATT server (Core 5.4 Vol 3 Part G §3.1), declared with its characteristics:
///
/// ```swift
/// let level = Characteristic(BluetoothUUID(0x2A19), properties: [.read, .notify], value: [100])
/// try await stack.publish {
///     Service(BluetoothUUID(0x180F)) { level }
/// }
/// ```
public struct Service: Sendable {
    /// The service type.
    public var uuid: BluetoothUUID
    /// Whether it is a primary service (true) or a secondary one.
    public var isPrimary: Bool
    /// The service's characteristics, in declaration order.
    public var characteristics: [Characteristic]

    /// A service of type `uuid`, primary by default, with the characteristics the builder lists.
    public init(_ uuid: BluetoothUUID, primary: Bool = true, @CharacteristicBuilder _ characteristics: () -> [Characteristic]) {
        self.uuid = uuid
        isPrimary = primary
        self.characteristics = characteristics()
    }

    var definition: GATTServiceDefinition {
        GATTServiceDefinition(uuid: uuid, isPrimary: isPrimary, characteristics: characteristics.map(\.definition))
    }
}

/// Collects the characteristics of a ``Service`` (conditionals and loops allowed).
@resultBuilder
public enum CharacteristicBuilder {
    /// One characteristic.
    public static func buildExpression(_ characteristic: Characteristic) -> [Characteristic] { [characteristic] }
    /// An array of characteristics.
    public static func buildExpression(_ characteristics: [Characteristic]) -> [Characteristic] { characteristics }
    /// The characteristics of every statement, in order.
    public static func buildBlock(_ parts: [Characteristic]...) -> [Characteristic] { parts.flatMap { $0 } }
    /// An `if` without `else`: its characteristics, or none.
    public static func buildOptional(_ part: [Characteristic]?) -> [Characteristic] { part ?? [] }
    /// The first branch of an `if`-`else` or `switch`.
    public static func buildEither(first part: [Characteristic]) -> [Characteristic] { part }
    /// The second branch of an `if`-`else` or `switch`.
    public static func buildEither(second part: [Characteristic]) -> [Characteristic] { part }
    /// A `for` loop: the characteristics of every iteration.
    public static func buildArray(_ parts: [[Characteristic]]) -> [Characteristic] { parts.flatMap { $0 } }
}

/// Collects the services given to ``BluetoothStack/publish(deviceName:_:)``.
@resultBuilder
public enum ServiceBuilder {
    /// One service.
    public static func buildExpression(_ service: Service) -> [Service] { [service] }
    /// An array of services.
    public static func buildExpression(_ services: [Service]) -> [Service] { services }
    /// The services of every statement, in order.
    public static func buildBlock(_ parts: [Service]...) -> [Service] { parts.flatMap { $0 } }
    /// An `if` without `else`: its services, or none.
    public static func buildOptional(_ part: [Service]?) -> [Service] { part ?? [] }
    /// The first branch of an `if`-`else` or `switch`.
    public static func buildEither(first part: [Service]) -> [Service] { part }
    /// The second branch of an `if`-`else` or `switch`.
    public static func buildEither(second part: [Service]) -> [Service] { part }
    /// A `for` loop: the services of every iteration.
    public static func buildArray(_ parts: [[Service]]) -> [Service] { parts.flatMap { $0 } }
}
