public import BluetoothCore
public import Foundation

/// A Bluetooth UUID as CoreBluetooth presents it (Core 5.4 Vol 3 Part B §2.5.1 for the value rules).
///
/// - `init(string:)` takes 4, 8 or 36 hex digits (any case); `init(data:)` 2, 4 or 16 bytes in big-endian (text)
///   order; `init(nsuuid:)` a `UUID`. As on Apple platforms, an invalid string or length is a programming error
///   and stops the program with Apple's message ("Invalid UUID string"); code handling user input should parse it
///   first with ``init(bluetoothUUID:)`` from `BluetoothUUID(string:)`, which throws.
/// - Values on the Bluetooth Base UUID are canonicalised: `CBUUID(string: "0000180D-0000-1000-8000-00805F9B34FB")`
///   equals `CBUUID(string: "180D")` and prints `uuidString` "180D"; 128-bit values print upper case, hyphenated.
/// - `data` is big-endian (2, 4 or 16 bytes), the opposite of the ATT wire order.
/// - `description` is the SIG name for assigned numbers ("Heart Rate"), `uuidString` otherwise.
public final class CBUUID: NSObject, NSCopying, @unchecked Sendable {
    /// The underlying value (normalised).
    public let bluetoothUUID: BluetoothUUID

    /// Wraps a parsed value.
    public init(bluetoothUUID: BluetoothUUID) {
        self.bluetoothUUID = bluetoothUUID
        super.init()
    }

    /// 4 hex digits (16-bit), 8 (32-bit) or the 36-character hyphenated 128-bit form.
    public convenience init(string theString: String) {
        let characters = theString.count
        guard characters == 4 || characters == 8 || characters == 36,
              let value = try? BluetoothUUID(string: theString), !theString.hasPrefix("0x"), !theString.hasPrefix("0X")
        else {
            Self.invalid("String \(theString) does not represent a valid UUID")
        }
        self.init(bluetoothUUID: value)
    }

    /// 2, 4 or 16 bytes, most significant first.
    public convenience init(data theData: Data) {
        let bytes = [UInt8](theData)
        switch bytes.count {
        case 2: self.init(bluetoothUUID: BluetoothUUID(UInt16(bytes[0]) << 8 | UInt16(bytes[1])))
        case 4: self.init(bluetoothUUID: BluetoothUUID(uuid32: bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }))
        case 16:
            guard let value = BluetoothUUID(bigEndianBytes: bytes) else { Self.invalid("Data \(theData) does not represent a valid UUID") }
            self.init(bluetoothUUID: value)
        default:
            Self.invalid("Data \(theData) does not represent a valid UUID")
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

    private static func invalid(_ reason: String) -> Never {
        // Apple raises NSInvalidArgumentException here: a malformed literal is a bug in the app, not input.
        FileHandle.standardError.write(Data("*** Terminating app due to uncaught exception 'NSInternalInconsistencyException', reason: 'Invalid UUID string: \(reason)'\n".utf8))
        fatalError("Invalid UUID string: \(reason)")
    }
}
