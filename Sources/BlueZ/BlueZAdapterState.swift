/// What bluetoothd says of its adapter: powered (Adapter1.Powered), off, or not there at all (no bluetoothd, no
/// adapter, the bus refused us).
package enum BlueZAdapterState: Sendable, Hashable {
    case poweredOn
    case poweredOff
    case unavailable
}
