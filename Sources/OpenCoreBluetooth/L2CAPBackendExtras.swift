/// What the async API (`BluetoothLE` on bluetoothd) needs of a backend's L2CAP beyond CoreBluetooth's: a published
/// PSM of its own choosing (CoreBluetooth's `publishL2CAPChannel` lets the stack pick one; Core 5.4 Vol 3 Part A
/// §4.22 LE_PSM, dynamic range 0x0080–0x00FF).
package protocol L2CAPFixedPSMPublishing: AnyObject, Sendable {
    func publishL2CAPChannel(psm: UInt16, encryptionRequired: Bool,
                             completion: @escaping @Sendable (Result<CBL2CAPPSM, CBBackendError>) -> Void)
}

/// A channel that knows the largest SDU its peer accepts (Vol 3 Part A §4.22: the peer's MTU), so that one SDU is
/// one write.
package protocol L2CAPChannelPeerMTU: AnyObject, Sendable {
    var peerMTU: Int { get }
}
