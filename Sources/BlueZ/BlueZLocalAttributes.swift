package import BluetoothCore

/// A service of our GATT application on bluetoothd (BlueZ's doc/org.bluez.GattService.rst); ids are the caller's,
/// stable while published.
package struct BlueZLocalService: Sendable, Hashable {
    package var id: Int
    package var uuid: BluetoothUUID
    package var isPrimary: Bool
    /// The ids of published services this one includes (Core 5.4 Vol 3 Part G §3.2).
    package var includedServiceIDs: [Int]
    package var characteristics: [BlueZLocalCharacteristic]

    package init(id: Int, uuid: BluetoothUUID, isPrimary: Bool, includedServiceIDs: [Int], characteristics: [BlueZLocalCharacteristic]) {
        self.id = id
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.includedServiceIDs = includedServiceIDs
        self.characteristics = characteristics
    }
}

/// The security an access to a local value needs (bluetoothd's `encrypt-*` and `encrypt-authenticated-*` flags;
/// Core 5.4 Vol 3 Part C §10.3).
package enum BlueZAttributeSecurity: Sendable, Hashable {
    case none
    case encrypted
    case authenticated
}

/// A characteristic of our GATT application (doc/org.bluez.GattCharacteristic.rst). `staticValue` non-nil: reads
/// are answered from it at once; nil: every read and write is a request event answered by the caller.
package struct BlueZLocalCharacteristic: Sendable, Hashable {
    package var id: Int
    package var uuid: BluetoothUUID
    /// The GATT properties octet (Vol 3 Part G §3.3.1.1).
    package var properties: UInt8
    package var readSecurity: BlueZAttributeSecurity
    package var writeSecurity: BlueZAttributeSecurity
    /// Notifications and indications only on an encrypted link (bluetoothd's `encrypt-notify`).
    package var encryptedNotifications: Bool
    package var staticValue: [UInt8]?
    /// Static descriptors besides the CCCD and Extended Properties bluetoothd adds itself.
    package var descriptors: [BlueZLocalDescriptor]

    package init(id: Int, uuid: BluetoothUUID, properties: UInt8, readSecurity: BlueZAttributeSecurity = .none,
                 writeSecurity: BlueZAttributeSecurity = .none, encryptedNotifications: Bool = false,
                 staticValue: [UInt8]?, descriptors: [BlueZLocalDescriptor]) {
        self.id = id
        self.uuid = uuid
        self.properties = properties
        self.readSecurity = readSecurity
        self.writeSecurity = writeSecurity
        self.encryptedNotifications = encryptedNotifications
        self.staticValue = staticValue
        self.descriptors = descriptors
    }

    /// bluetoothd's Flags for this characteristic.
    package var flags: [String] {
        var flags = BlueZCentral.propertyBits.filter { properties & $0.value != 0 }.map(\.key).sorted()
        switch readSecurity {
        case .authenticated: flags.append("encrypt-authenticated-read")
        case .encrypted: flags.append("encrypt-read")
        case .none: break
        }
        switch writeSecurity {
        case .authenticated: flags.append("encrypt-authenticated-write")
        case .encrypted: flags.append("encrypt-write")
        case .none: break
        }
        if encryptedNotifications { flags.append("encrypt-notify") }
        return flags
    }
}

/// A static, readable descriptor of a local characteristic (User Description, Presentation Format).
package struct BlueZLocalDescriptor: Sendable, Hashable {
    package var uuid: BluetoothUUID
    package var value: [UInt8]

    package init(uuid: BluetoothUUID, value: [UInt8]) {
        self.uuid = uuid
        self.value = value
    }
}

/// One write of a central's request (several for a long write).
package struct BlueZLocalWrite: Sendable, Hashable {
    package var characteristicID: Int
    package var offset: Int
    package var value: [UInt8]

    package init(characteristicID: Int, offset: Int, value: [UInt8]) {
        self.characteristicID = characteristicID
        self.offset = offset
        self.value = value
    }
}
