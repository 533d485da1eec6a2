package import GATT

extension CBBackendLocalCharacteristic {
    /// CoreBluetooth's properties and permissions for a characteristic (CBCharacteristicProperties' low octet is
    /// the GATT octet; CBAttributePermissions: readable 1, writeable 2, read/write encryption 4/8; authentication
    /// is the package's bits beyond them).
    package static func permissions(_ permissions: GATTPermissions) -> UInt {
        var raw: UInt = 0
        if permissions.readable { raw |= 0x01 }
        if permissions.writable { raw |= 0x02 }
        if permissions.read.encryption || permissions.read.authentication { raw |= 0x04 }
        if permissions.write.encryption || permissions.write.authentication { raw |= 0x08 }
        if permissions.read.authentication { raw |= authenticatedReadPermission }
        if permissions.write.authentication { raw |= authenticatedWritePermission }
        return raw
    }
}
