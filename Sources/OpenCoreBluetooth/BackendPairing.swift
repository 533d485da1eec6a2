package import BlueZ

/// A central backend that pairs on request and hands the prompts to its caller (bluetoothd's Device1.Pair with an
/// agent of ours; Core 5.4 Vol 3 Part H §2.3), for the async API's `pair()` on bluetoothd.
package protocol BackendPairing: AnyObject, Sendable {
    func pair(_ peer: CBBackendPeer, prompts: @escaping BlueZAgent.Handler,
              completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void)
}

extension BlueZCentralBackend: BackendPairing {}
