/// Keeps one client's GATT procedures in call order on a connection with several ATT bearers (Core 5.4 Vol 3
/// Part F §3.2.11: requests on different bearers are independent, so their order at the server and the order of
/// their completions are not defined).
///
/// A procedure started without a lane takes the connection's least busy bearer, so independent callers run in
/// parallel. The procedures of one lane all go to one bearer while any of them is still running (a bearer runs
/// its procedures one after another, in the order given), and the lane picks the least busy bearer again once it
/// is idle. This is how CoreBluetooth shares a connection between apps over EATT, each app's operations in the
/// order it asked for them: OpenCoreBluetooth gives each central manager its own lane. Writes without response
/// always use the unenhanced bearer, whatever the lane.
public struct GATTClientLane: Hashable, Sendable, Codable {
    /// Identifies the lane; callers pick any value unique among their clients.
    public var identifier: UInt64

    public init(_ identifier: UInt64) {
        self.identifier = identifier
    }
}
