public import BluetoothEngine
public import HCI

/// What a controller says of itself, for `blue info`: what initialisation read (``ControllerInfo``: version,
/// features, Supported_Commands, buffers, addresses) and the sizes and states it is asked for here (Core 5.4 Vol 4
/// Part E §7.8.27 LE Read Supported States, §7.8.14 LE Read Filter Accept List Size, §7.8.41 LE Read Resolving List
/// Size, §7.8.46 LE Read Maximum Data Length, §7.8.58 LE Read Number of Supported Advertising Sets). A value is nil
/// when the controller does not list the command or refused it.
public struct ControllerDetails: Sendable {
    /// The longest LL data PDU payload and its time, each way (§7.8.46).
    public struct DataLength: Hashable, Sendable {
        public var txOctets: Int
        public var txTime: Int
        public var rxOctets: Int
        public var rxTime: Int

        public init(txOctets: Int, txTime: Int, rxOctets: Int, rxTime: Int) {
            (self.txOctets, self.txTime, self.rxOctets, self.rxTime) = (txOctets, txTime, rxOctets, rxTime)
        }
    }

    public var info: ControllerInfo
    public var supportedStates: UInt64?
    public var filterAcceptListSize: Int?
    public var resolvingListSize: Int?
    public var maximumDataLength: DataLength?
    public var advertisingSets: Int?

    /// What initialisation read; the rest unknown until asked.
    public init(info: ControllerInfo) {
        self.info = info
    }

    /// The Supported_Commands mask, read.
    public var supportedCommands: HCISupportedCommands { HCISupportedCommands(mask: info.supportedCommands) }
}
