public import BluetoothCore
public import Foundation

/// A Bluetooth UUID as CoreBluetooth presents it (Core 5.4 Vol 3 Part B §2.5.1 for the value rules).
///
/// - `init(string:)` takes 4, 8 or 36 hex digits (any case); `init(data:)` 2, 4 or 16 bytes in big-endian (text)
///   order; `init(nsuuid:)` a `UUID`. Apple stops the program on an invalid string or length; here, since the
///   bytes may come from a peer or a user, the misuse is logged with Apple's message ("Invalid UUID string") and
///   the value is ``invalidValue`` (the all-zero 128-bit UUID, which names no service or attribute), never a crash.
///   Code handling user input should use ``init(validating:)``, which throws.
/// - Values on the Bluetooth Base UUID are canonicalised: `CBUUID(string: "0000180D-0000-1000-8000-00805F9B34FB")`
///   equals `CBUUID(string: "180D")` and prints `uuidString` "180D"; 128-bit values print upper case, hyphenated.
/// - `data` is big-endian (2, 4 or 16 bytes), the opposite of the ATT wire order.
/// - `description` is the SIG name for assigned numbers ("Heart Rate"), `uuidString` otherwise.
public final class CBUUID: NSObject, NSCopying {
    /// The underlying value (normalised).
    public let bluetoothUUID: BluetoothUUID

    /// Wraps a parsed value.
    public init(bluetoothUUID: BluetoothUUID) {
        self.bluetoothUUID = bluetoothUUID
        super.init()
    }

    /// What a malformed string or data becomes (logged): 00000000-0000-0000-0000-000000000000.
    public static let invalidValue = BluetoothUUID(bigEndianBytes: [UInt8](repeating: 0, count: 16)) ?? BluetoothUUID(0)

    /// 4 hex digits (16-bit), 8 (32-bit) or the 36-character hyphenated 128-bit form; anything else is logged
    /// and gives ``invalidValue``.
    public convenience init(string theString: String) {
        do {
            try self.init(validating: theString)
        } catch {
            Self.logInvalid("String \(theString) does not represent a valid UUID")
            self.init(bluetoothUUID: Self.invalidValue)
        }
    }

    /// The same forms as ``init(string:)``, throwing `DecodeError` for anything else (user input).
    public convenience init(validating theString: String) throws(DecodeError) {
        let characters = theString.count
        guard characters == 4 || characters == 8 || characters == 36, !theString.hasPrefix("0x"), !theString.hasPrefix("0X") else {
            throw DecodeError(.invalidValue, at: 0, "a UUID is 4, 8 or 36 characters (\(characters) given)")
        }
        self.init(bluetoothUUID: try BluetoothUUID(string: theString))
    }

    /// 2, 4 or 16 bytes, most significant first.
    public convenience init(data theData: Data) {
        let bytes = [UInt8](theData)
        switch bytes.count {
        case 2: self.init(bluetoothUUID: BluetoothUUID(UInt16(bytes[0]) << 8 | UInt16(bytes[1])))
        case 4: self.init(bluetoothUUID: BluetoothUUID(uuid32: bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }))
        default:
            guard let value = BluetoothUUID(bigEndianBytes: bytes) else {
                Self.logInvalid("Data \(theData) does not represent a valid UUID")
                self.init(bluetoothUUID: Self.invalidValue)
                return
            }
            self.init(bluetoothUUID: value)
        }
    }

    /// A 128-bit UUID from a `UUID` (canonicalised to the short form when it lies on the Bluetooth Base UUID).
    public convenience init(nsuuid theUUID: UUID) {
        let tuple = theUUID.uuid
        let bytes = [tuple.0, tuple.1, tuple.2, tuple.3, tuple.4, tuple.5, tuple.6, tuple.7,
                     tuple.8, tuple.9, tuple.10, tuple.11, tuple.12, tuple.13, tuple.14, tuple.15]
        // 16 bytes by construction.
        self.init(bluetoothUUID: BluetoothUUID(bigEndianBytes: bytes) ?? BluetoothUUID(0))
    }

    /// Objective-C spelling `UUIDWithNSUUID:` as some ports call it.
    public convenience init(NSUUID theUUID: UUID) { self.init(nsuuid: theUUID) }

    /// "180D", "12345678" or "0CDBE648-EED0-11E6-BC64-92361F002671".
    public var uuidString: String { bluetoothUUID.uuidString }

    /// The value in its shortest form (2, 4 or 16 bytes), most significant byte first.
    public var data: Data {
        let big = bluetoothUUID.bigEndianBytes
        switch bluetoothUUID.shortestByteCount {
        case 2: return Data(big[2..<4])
        case 4: return Data(big[0..<4])
        default: return Data(big)
        }
    }

    public override var description: String { bluetoothUUID.assignedName ?? uuidString }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CBUUID else { return false }
        return other.bluetoothUUID == bluetoothUUID
    }

    public override var hash: Int { bluetoothUUID.hashValue }

    public func copy(with zone: NSZone? = nil) -> Any { self }

    /// Apple raises NSInternalInconsistencyException here; we log the same reason and go on (no crash from input).
    private static func logInvalid(_ reason: String) {
        Log.coreBluetooth.warning("[CoreBluetooth] API MISUSE: Invalid UUID string: \(reason)")
    }
}
