public import DBus

/// What a bluetoothd error reply means for an attribute operation (BlueZ's doc/org.bluez.GattCharacteristic.rst:
/// Failed, InProgress, NotPermitted, NotAuthorized, InvalidOffset, NotSupported, InvalidValueLength): the ATT error
/// code (Core 5.4 Vol 3 Part F §3.4.1.1) when the reply names one, else nil.
public enum BlueZErrors {
    /// `reading`: whether the operation was a read (NotPermitted then means Read Not Permitted, else Write Not
    /// Permitted).
    public static func attErrorCode(_ error: DBusError, reading: Bool) -> UInt8? {
        guard error.code == .errorReply, let name = error.name else { return nil }
        // bluetoothd's gatt-client says "Operation failed with ATT error: 0x0e" when the peer answered an error.
        if let range = error.reason.firstRange(of: "ATT error: 0x"),
           let code = UInt8(error.reason[range.upperBound...].prefix(2), radix: 16) {
            return code
        }
        switch name {
        case "org.bluez.Error.NotPermitted": return reading ? 0x02 : 0x03
        case "org.bluez.Error.NotAuthorized": return 0x05
        case "org.bluez.Error.InvalidOffset": return 0x07
        case "org.bluez.Error.InvalidValueLength": return 0x0D
        case "org.bluez.Error.NotSupported": return 0x06
        default: return nil
        }
    }
}
