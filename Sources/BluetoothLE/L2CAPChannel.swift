public import BluetoothCore
import Host
public import L2CAP

/// An open LE credit-based connection-oriented channel (Core 5.4 Vol 3 Part A §4.22–§4.24, §10.1): SDUs in as an
/// `AsyncStream`, SDUs out with ``send(_:)``. The stream finishes when the channel closes (either side, or the
/// link ends). Incoming SDUs are buffered without limit (credits are returned automatically as SDUs complete).
public final class L2CAPChannel: Sendable, Hashable, CustomStringConvertible {
    let core: StackCore
    /// The HCI connection handle of the link the channel runs on.
    public let connectionHandle: UInt16
    /// What the link negotiated: PSM, CIDs, MTUs and MPSs of both sides.
    public let info: L2CAPChannelInfo
    /// The peer's address.
    public let peer: BluetoothAddress?
    /// The SDUs received, in order.
    public let incoming: AsyncStream<[UInt8]>
    let continuation: AsyncStream<[UInt8]>.Continuation

    init(core: StackCore, connectionHandle: UInt16, info: L2CAPChannelInfo, peer: BluetoothAddress?) {
        self.core = core
        self.connectionHandle = connectionHandle
        self.info = info
        self.peer = peer
        (incoming, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .unbounded)
    }

    /// The LE_PSM the channel was opened on.
    public var psm: UInt16 { info.psm }
    /// The largest SDU the peer accepts.
    public var peerMTU: Int { Int(info.remoteMTU) }

    /// Sends one SDU (at most ``peerMTU`` octets), segmented into K-frames sent as the peer's credits allow;
    /// returns once the last of them went to the controller, so a loop of awaited sends is paced by the peer.
    public func send(_ sdu: [UInt8]) async throws {
        let engine = core.engine, handle = connectionHandle, channel = info.localCID
        let result: Result<Void, BluetoothLEError> = try await PendingOperation.run { operation in
            engine.sendL2CAPSDU(connectionHandle: handle, channel: channel, sdu) { result in
                operation.succeed(result.mapError { BluetoothLEError(.channelFailed, $0.reason, hciStatus: $0.status) })
            }
        }
        try result.get()
    }

    /// Closes the channel (Disconnection Request) and waits for the peer's answer.
    public func close() async {
        let engine = core.engine, handle = connectionHandle, channel = info.localCID
        _ = try? await PendingOperation<Void>.run { operation in
            engine.closeL2CAPChannel(connectionHandle: handle, channel: channel) { _ in operation.succeed(()) }
        }
    }

    public static func == (lhs: L2CAPChannel, rhs: L2CAPChannel) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    public var description: String {
        "L2CAP channel PSM \(info.psm) CID \(info.localCID.rawValue) on \(Dissection.hex16(connectionHandle))"
    }
}
