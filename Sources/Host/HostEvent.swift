public import BluetoothCore
public import HCI

/// What the host tells its owner, delivered in order on the host's event loop (Core 5.4 Vol 4 Part E §7.7: the
/// events behind each case).
public enum HostEvent: Sendable {
    /// An advertising report, merged with the device's latest scan response (§7.7.65.2).
    case advertisingReport(ScanReport)
    /// A connection exists (LE (Enhanced) Connection Complete, §7.7.65.1 / §7.7.65.10), in either role.
    case connected(Connection)
    /// A connection ended (Disconnection Complete, §7.7.5); everything of it was flushed.
    case disconnected(handle: UInt16, reason: HCIStatus)
    /// New connection parameters (LE Connection Update Complete, §7.7.65.3), in either role.
    case connectionUpdated(Connection)
    /// Encryption Change (§7.7.8, §7.7.8.v2), passed through.
    case encryptionChanged(handle: UInt16, status: HCIStatus, enabled: Bool)
    /// Encryption Key Refresh Complete (§7.7.39), passed through.
    case encryptionKeyRefreshed(handle: UInt16, status: HCIStatus)
    /// LE Long Term Key Request (§7.7.65.5), passed through for the security layer to answer.
    case longTermKeyRequest(handle: UInt16, randomNumber: UInt64, encryptedDiversifier: UInt16)
    /// LE Data Length Change (§7.7.65.7).
    case dataLengthChanged(handle: UInt16, maxTxOctets: UInt16, maxRxOctets: UInt16)
    /// LE PHY Update Complete (§7.7.65.12).
    case phyUpdated(handle: UInt16, status: HCIStatus, tx: LEPhy, rx: LEPhy)
    /// LE Read Remote Features Complete (§7.7.65.4).
    case remoteFeatures(handle: UInt16, status: HCIStatus, features: UInt64)
    /// Something went wrong with the controller that no single operation owns: a command timeout, a hardware
    /// error, a transport failure, an undecodable event.
    case controllerError(HostError)
}
