/// The type octet of an advertising data structure (Core Specification Supplement Part A §1; values from the
/// SIG's ad_types.yaml).
public struct ADType: OpenCode {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "AD type"
    public static var names: [UInt8: String] { AssignedNumbers.adTypeNames }

    public static let flags = ADType(0x01)
    public static let incompleteList16BitServiceUUIDs = ADType(0x02)
    public static let completeList16BitServiceUUIDs = ADType(0x03)
    public static let incompleteList32BitServiceUUIDs = ADType(0x04)
    public static let completeList32BitServiceUUIDs = ADType(0x05)
    public static let incompleteList128BitServiceUUIDs = ADType(0x06)
    public static let completeList128BitServiceUUIDs = ADType(0x07)
    public static let shortenedLocalName = ADType(0x08)
    public static let completeLocalName = ADType(0x09)
    public static let txPowerLevel = ADType(0x0A)
    public static let classOfDevice = ADType(0x0D)
    public static let peripheralConnectionIntervalRange = ADType(0x12)
    public static let listOf16BitServiceSolicitationUUIDs = ADType(0x14)
    public static let listOf128BitServiceSolicitationUUIDs = ADType(0x15)
    public static let serviceData16BitUUID = ADType(0x16)
    public static let publicTargetAddress = ADType(0x17)
    public static let randomTargetAddress = ADType(0x18)
    public static let appearance = ADType(0x19)
    public static let advertisingInterval = ADType(0x1A)
    public static let leBluetoothDeviceAddress = ADType(0x1B)
    public static let leRole = ADType(0x1C)
    public static let listOf32BitServiceSolicitationUUIDs = ADType(0x1F)
    public static let serviceData32BitUUID = ADType(0x20)
    public static let serviceData128BitUUID = ADType(0x21)
    public static let uri = ADType(0x24)
    public static let leSupportedFeatures = ADType(0x27)
    public static let encryptedData = ADType(0x31)
    public static let manufacturerSpecificData = ADType(0xFF)
}
