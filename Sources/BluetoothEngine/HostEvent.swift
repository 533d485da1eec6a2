public import ATT
public import BluetoothCore
public import GATT
public import HCI
public import L2CAP

/// What the host tells its owner, delivered in order on the host's event loop (Core 5.4 Vol 4 Part E §7.7: the
/// events behind each case).
public enum HostEvent: Sendable, Codable {
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

    // MARK: ATT / GATT (Core 5.4 Vol 3 Part F, Part G)

    /// ATT_MTU of the connection changed after an Exchange MTU (either direction, Vol 3 Part F §3.4.2).
    case attMTUChanged(handle: UInt16, mtu: Int)
    /// The engine learned the peer's GAP Device Name (Vol 3 Part C §12.1): bluetoothd reads it as it connects
    /// (our host does not yet).
    case peerNameUpdated(peer: BluetoothAddress, name: String)
    /// A Handle Value Notification from the peer's server (one per tuple of a Multiple Handle Value
    /// Notification), Vol 3 Part G §4.10.
    case gattNotification(handle: UInt16, attributeHandle: UInt16, value: [UInt8])
    /// A Handle Value Indication from the peer's server (§4.11). The host sends the Handle Value Confirmation
    /// right after this event has been handled.
    case gattIndication(handle: UInt16, attributeHandle: UInt16, value: [UInt8])
    /// Something a peer's client did to the local GATT server (a value written, a CCCD changed...).
    case gattServer(GATTServerEvent)
    /// The peer confirmed our indication of `attributeHandle`.
    case gattIndicationConfirmed(handle: UInt16, attributeHandle: UInt16)
    /// Our indication of `attributeHandle` will never be confirmed (the bearer ended).
    case gattIndicationFailed(handle: UInt16, attributeHandle: UInt16, ATTBearerError)
    /// The connection's send queue, found full earlier (``HostStack/isReadyToSend(connectionHandle:)`` false, or
    /// a refused ``HostStack/updateValue(_:handle:to:requireReady:completion:)``), has room again: CoreBluetooth's
    /// `peripheralManagerIsReady(toUpdateSubscribers:)` / `peripheralIsReady(toSendWriteWithoutResponse:)`.
    case readyToSend(handle: UInt16)
    /// An Enhanced ATT bearer opened on the connection (either side opened it), on the L2CAP channel with local
    /// CID `channel`, with this ATT_MTU (Vol 3 Part F §3.2.11).
    case enhancedATTBearerOpened(handle: UInt16, channel: L2CAPChannelIdentifier, mtu: Int)
    /// An Enhanced ATT bearer closed (its procedures failed).
    case enhancedATTBearerClosed(handle: UInt16, channel: L2CAPChannelIdentifier)

    // MARK: L2CAP (Core 5.4 Vol 3 Part A)

    /// A credit-based channel opened, either side initiated (§4.22, §4.23).
    case l2capChannelOpened(handle: UInt16, L2CAPChannelInfo)
    /// A complete SDU arrived on the channel with local CID `channel`.
    case l2capSDU(handle: UInt16, channel: L2CAPChannelIdentifier, sdu: [UInt8])
    /// The channel closed (either side, a violation, or the link went down).
    case l2capChannelClosed(handle: UInt16, channel: L2CAPChannelIdentifier, L2CAPChannelCloseReason)
    /// Credits arrived and the channel's queue is empty: more SDUs may be sent without queueing.
    case l2capCreditsAvailable(handle: UInt16, channel: L2CAPChannelIdentifier)
    /// A payload on the SMP fixed channel 0x0006, for the security layer.
    case securityManagerPDU(handle: UInt16, [UInt8])

    // MARK: Security (Core 5.4 Vol 3 Part H; `HostStack+Security.swift`)

    /// Pairing needs the user: answer with ``HostStack/answerPairing(connectionHandle:_:)``.
    case pairingInteraction(handle: UInt16, PairingInteraction)
    /// Pairing (and key distribution) succeeded; bonded keys are stored.
    case pairingCompleted(handle: UInt16, PairingOutcome)
    /// Securing the link failed: the SMP reason when pairing failed (nil: timeout, encryption failure, bond lost,
    /// disconnection).
    case pairingFailed(handle: UInt16, reason: SMPPairingFailedReason?, error: HostError)
    /// The peer lost the bond we hold (encryption failed with PIN or Key Missing, or it pairs again);
    /// ``HostSecurityConfiguration/allowRepairing`` decides whether it may re-pair.
    case bondLost(handle: UInt16, identity: BluetoothAddress)
    /// The bond store could not read (a corrupt file, left untouched) or write a bond.
    case bondStoreError(BondStoreError)
    /// The peer on this connection is this bonded identity (its RPA resolved, or Identity Address Information).
    case peerIdentityResolved(handle: UInt16, identity: BluetoothAddress)
    /// Our own resolvable private address changed (RPA rotation).
    case privateAddressChanged(BluetoothAddress)
    /// A GATT client request answered with `attError` could not be retried: securing the link failed with `error`.
    /// The request completes with ``GATTClientError/securityFailed(_:handle:_:)``, which keeps the ATT error.
    case gattSecurityFailed(handle: UInt16, attError: ATTErrorCode, error: HostError)
}
