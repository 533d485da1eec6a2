/// Why a call to bluetoothd (or the kernel's sockets beside it) did not do what was asked: an ATT error the peer
/// answered (Core 5.4 Vol 3 Part F §3.4.1.1, from bluetoothd's error names), or bluetoothd's own failure with its
/// reason. The engine and the CoreBluetooth backends each turn it into their own errors.
package enum BlueZCallError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The peer answered with this ATT error code.
    case att(UInt8)
    /// No link to the device (or it ended during the call).
    case notConnected(String)
    /// The peer ended the link.
    case peerDisconnected(String)
    /// bluetoothd did not answer in time.
    case timedOut(String)
    /// bluetoothd does not know the device (scan first).
    case unknownDevice(String)
    /// No attribute of that handle was found.
    case invalidHandle(String)
    /// The connection (or an L2CAP channel) could not be made.
    case connectionFailed(String)
    /// bluetoothd's API has no call for it.
    case unsupported(String)
    /// bluetoothd refused or failed the call.
    case failed(String)

    package var description: String {
        switch self {
        case .att(let code): "ATT error 0x" + String(code, radix: 16, uppercase: true)
        case .notConnected(let reason), .peerDisconnected(let reason), .timedOut(let reason), .unknownDevice(let reason),
             .invalidHandle(let reason), .connectionFailed(let reason), .unsupported(let reason), .failed(let reason):
            reason
        }
    }
}
