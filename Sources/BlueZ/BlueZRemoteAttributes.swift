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
