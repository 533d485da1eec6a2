package import BluetoothCore

/// A peer's service as bluetoothd resolved it (GattService1, Core 5.4 Vol 3 Part G §3.1), named by the handles in
/// its object path; bluetoothd does not say where a service ends, so ``endHandle`` is inferred.
package struct BlueZRemoteService: Sendable, Hashable {
    package var uuid: BluetoothUUID
    package var isPrimary: Bool
    package var startHandle: UInt16
    package var endHandle: UInt16

    package init(uuid: BluetoothUUID, isPrimary: Bool, startHandle: UInt16, endHandle: UInt16) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.startHandle = startHandle
        self.endHandle = endHandle
    }
}

/// A peer's characteristic (GattCharacteristic1, Vol 3 Part G §3.3): its path names the declaration, the value is
/// the handle after it; ``properties`` is the GATT properties octet rebuilt from bluetoothd's Flags.
package struct BlueZRemoteCharacteristic: Sendable, Hashable {
    package var uuid: BluetoothUUID
    package var properties: UInt8
    package var declarationHandle: UInt16
    package var valueHandle: UInt16
    package var endHandle: UInt16

    package init(uuid: BluetoothUUID, properties: UInt8, declarationHandle: UInt16, valueHandle: UInt16, endHandle: UInt16) {
        self.uuid = uuid
        self.properties = properties
        self.declarationHandle = declarationHandle
        self.valueHandle = valueHandle
        self.endHandle = endHandle
    }
}

/// A peer's characteristic descriptor (GattDescriptor1, Vol 3 Part G §3.3.3).
package struct BlueZRemoteDescriptor: Sendable, Hashable {
    package var uuid: BluetoothUUID
    package var handle: UInt16

    package init(uuid: BluetoothUUID, handle: UInt16) {
        self.uuid = uuid
        self.handle = handle
    }
}
