public import BluetoothCore

/// LE Connection Complete (Core 5.4 Vol 4 Part E §7.7.65.1) and the shared part of LE Enhanced Connection
/// Complete (§7.7.65.10). Interval in 1.25 ms, timeout in 10 ms. The handle is checked (≤ 0x0EFF) only when the
/// status is success; on failure controllers put anything there.
public struct LEConnectionComplete: Hashable, Sendable {
    public var status: HCIStatus
    public var handle: UInt16
    public var role: LERole
    public var peerAddressType: LEAddressType
    public var peerAddress: BluetoothAddress
    public var connectionInterval: UInt16
    public var peripheralLatency: UInt16
    public var supervisionTimeout: UInt16
    /// 0x00 = 500 ppm ... 0x07 = 20 ppm.
    public var centralClockAccuracy: UInt8

    public init(status: HCIStatus = .success, handle: UInt16, role: LERole, peerAddressType: LEAddressType,
                peerAddress: BluetoothAddress, connectionInterval: UInt16, peripheralLatency: UInt16 = 0,
                supervisionTimeout: UInt16, centralClockAccuracy: UInt8 = 0) {
        self.status = status
        self.handle = handle
        self.role = role
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
        self.centralClockAccuracy = centralClockAccuracy
    }

    static let clockAccuracyNames: [UInt8: String] = [
        0: "500 ppm", 1: "250 ppm", 2: "150 ppm", 3: "100 ppm", 4: "75 ppm", 5: "50 ppm", 6: "30 ppm", 7: "20 ppm",
    ]
}

/// LE Enhanced Connection Complete [v1] (§7.7.65.10) and [v2] (§7.7.65.10, subevent 0x29, which adds
/// Advertising_Handle and Sync_Handle): the connection plus the resolvable private addresses in use.
public struct LEEnhancedConnectionComplete: Hashable, Sendable {
    public var connection: LEConnectionComplete
    /// All zeros when the controller did not use a resolvable private address.
    public var localResolvablePrivateAddress: BluetoothAddress
    public var peerResolvablePrivateAddress: BluetoothAddress

    public init(connection: LEConnectionComplete, localResolvablePrivateAddress: BluetoothAddress = BluetoothAddress(0, type: .random),
                peerResolvablePrivateAddress: BluetoothAddress = BluetoothAddress(0, type: .random)) {
        self.connection = connection
        self.localResolvablePrivateAddress = localResolvablePrivateAddress
        self.peerResolvablePrivateAddress = peerResolvablePrivateAddress
    }
}

extension LEConnectionComplete {
    /// Reads the fields up to Peer_Address; `rest` reads what follows Peer_Address before the interval.
    static func read(_ r: inout ByteReader, between: (inout ByteReader) throws(DecodeError) -> Void = { _ throws(DecodeError) in })
        throws(DecodeError) -> LEConnectionComplete
    {
        let status = try r.hciReadStatus()
        let handle = try r.hciReadHandle(validate: status == .success)
        let role = LERole(try r.readUInt8("Role"))
        let type = try r.hciReadAddressType("Peer_Address_Type")
        let address = try r.hciReadAddress("Peer_Address", type: type)
        try between(&r)
        return LEConnectionComplete(
            status: status, handle: handle, role: role, peerAddressType: type, peerAddress: address,
            connectionInterval: try r.readUInt16("Connection_Interval"),
            peripheralLatency: try r.readUInt16("Peripheral_Latency"),
            supervisionTimeout: try r.readUInt16("Supervision_Timeout"),
            centralClockAccuracy: try r.readUInt8("Central_Clock_Accuracy"))
    }

    func write(_ w: inout ByteWriter, between: (inout ByteWriter) -> Void = { _ in }) {
        w.write(status.rawValue)
        w.hciWriteHandle(handle)
        w.write(role.rawValue)
        w.write(peerAddressType.rawValue)
        w.hciWrite(peerAddress)
        between(&w)
        w.write(connectionInterval)
        w.write(peripheralLatency)
        w.write(supervisionTimeout)
        w.write(centralClockAccuracy)
    }

    func fields(between: [Dissection] = []) -> [Dissection] {
        typealias F = HCIFieldText
        return [
            F.status(status), F.handle(handle), F.code("Role", role), F.code("Peer_Address_Type", peerAddressType),
            Dissection("Peer_Address", peerAddress.string),
        ] + between + [
            F.connectionInterval("Connection_Interval", connectionInterval),
            F.latency("Peripheral_Latency", peripheralLatency),
            F.supervisionTimeout("Supervision_Timeout", supervisionTimeout),
            F.named("Central_Clock_Accuracy", centralClockAccuracy, Self.clockAccuracyNames),
        ]
    }
}
