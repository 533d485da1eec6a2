public import HCI

/// What the host knows of one LE link right now (Core 5.4 Vol 4 Part E §7.7.65.1 / §7.7.65.3 connection
/// parameters, §7.7.65.7 data length, §7.7.65.12 PHYs; Vol 3 Part F §3.2.8 ATT_MTU): the connection record, the PHYs
/// and maximum payload octets each way as the controller last reported them (1M and 27 until it reports a change),
/// and the ATT_MTU.
public struct LinkInfo: Hashable, Sendable, Codable {
    public var connection: Connection
    public var txPHY: LEPhy
    public var rxPHY: LEPhy
    public var maxTxOctets: UInt16
    public var maxRxOctets: UInt16
    public var attMTU: Int

    public init(connection: Connection, txPHY: LEPhy = .le1M, rxPHY: LEPhy = .le1M, maxTxOctets: UInt16 = 27,
                maxRxOctets: UInt16 = 27, attMTU: Int = 23) {
        self.connection = connection
        self.txPHY = txPHY
        self.rxPHY = rxPHY
        self.maxTxOctets = maxTxOctets
        self.maxRxOctets = maxRxOctets
        self.attMTU = attMTU
    }
}
