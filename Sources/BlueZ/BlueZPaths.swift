/// What bluetoothd's object paths say (BlueZ's doc/org.bluez.Device.rst and gatt-client.c): `/org/bluez/hciN` an
/// adapter, `…/dev_AA_BB_CC_DD_EE_FF` a device, `…/serviceXXXX/charXXXX/descXXXX` attributes named by their handle
/// in hexadecimal.
public enum BlueZPaths {
    /// `/org/bluez/hciN`.
    public static func adapter(index: Int) -> String { "/org/bluez/hci\(index)" }

    /// The device object of `address` ("AA:BB:…") under `adapter`.
    public static func device(adapter: String, address: String) -> String {
        adapter + "/dev_" + address.uppercased().replacing(":", with: "_")
    }

    /// The attribute handle the last element of an attribute path names (`char002a` → 0x2A); nil for others.
    public static func handle(of path: String) -> UInt16? {
        guard let last = path.split(separator: "/").last else { return nil }
        for prefix in ["service", "char", "desc"] where last.hasPrefix(prefix) {
            return UInt16(last.dropFirst(prefix.count), radix: 16)
        }
        return nil
    }

    /// Whether `path` is `parent` or below it.
    public static func isUnder(_ path: String, _ parent: String) -> Bool {
        path == parent || path.hasPrefix(parent + "/")
    }
}
