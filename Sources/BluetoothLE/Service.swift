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
    public var uuid: BluetoothUUID
    public var isPrimary: Bool
    public var characteristics: [Characteristic]

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
    public static func buildExpression(_ characteristic: Characteristic) -> [Characteristic] { [characteristic] }
    public static func buildExpression(_ characteristics: [Characteristic]) -> [Characteristic] { characteristics }
    public static func buildBlock(_ parts: [Characteristic]...) -> [Characteristic] { parts.flatMap { $0 } }
    public static func buildOptional(_ part: [Characteristic]?) -> [Characteristic] { part ?? [] }
    public static func buildEither(first part: [Characteristic]) -> [Characteristic] { part }
    public static func buildEither(second part: [Characteristic]) -> [Characteristic] { part }
    public static func buildArray(_ parts: [[Characteristic]]) -> [Characteristic] { parts.flatMap { $0 } }
}

/// Collects the services given to ``BluetoothStack/publish(deviceName:_:)``.
@resultBuilder
public enum ServiceBuilder {
    public static func buildExpression(_ service: Service) -> [Service] { [service] }
    public static func buildExpression(_ services: [Service]) -> [Service] { services }
    public static func buildBlock(_ parts: [Service]...) -> [Service] { parts.flatMap { $0 } }
    public static func buildOptional(_ part: [Service]?) -> [Service] { part ?? [] }
    public static func buildEither(first part: [Service]) -> [Service] { part }
    public static func buildEither(second part: [Service]) -> [Service] { part }
    public static func buildArray(_ parts: [[Service]]) -> [Service] { parts.flatMap { $0 } }
}
