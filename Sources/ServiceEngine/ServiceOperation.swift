public import AdvertisingData
public import ATT
public import BluetoothCore
public import BluetoothCrypto
public import BluetoothEngine
public import GATT
public import HCI
public import L2CAP

/// One call of the engine seam (BluetoothEngine's `StackEngine`), as it travels from a program to the Bluetooth
/// service, which runs it on the program's host stack there. A case per operation, with the operation's own
/// arguments; what holds closures on the seam travels as data (a deferral as its handles, an L2CAP server as its
/// parameters).
public enum ServiceOperation: Sendable, Codable, Equatable {
    // GAP (Core 5.4 Vol 3 Part C)
    case currentPrivateAddress
    case startScanning(ScanOptions)
    case stopScanning
    case connect(BluetoothAddress, ConnectOptions)
    case cancelConnect(BluetoothAddress)
    case disconnect(handle: UInt16, reason: HCIStatus)
    case startAdvertisingContent(AdvertisingContent, AdvertisingOptions)
    case startAdvertising(advertisingData: AdvertisingData, scanResponse: AdvertisingData, AdvertisingOptions)
    case stopAdvertising

    // The link (Vol 6 Part B, Vol 4 Part E §7.8)
    case linkInfo(handle: UInt16)
    case updateConnectionParameters(handle: UInt16, LEConnectionParameters)
    case requestDataLength(handle: UInt16, txOctets: UInt16, txTime: UInt16)
    case setPHY(handle: UInt16, txPHYs: UInt8, rxPHYs: UInt8)
    case exchangeMTU(handle: UInt16)
    case readRSSI(handle: UInt16)
    case requestConnectionParameterUpdate(handle: UInt16, L2CAPConnectionParameterUpdateRequest)

    // GATT client (Vol 3 Part G §4)
    case gatt(handle: UInt16, GATTProcedure, lane: GATTClientLane?)

    // GATT server (Vol 3 Part G §3)
    case replaceGATTDatabase(ServiceGATTDatabase, changedRange: ATTHandleRange?)
    case setGATTDeferral(handles: Set<UInt16>?)
    case respondToGATTRequest(handle: UInt16, id: UInt64, ServiceGATTAnswer)
    case updateValue([UInt8], attribute: UInt16, targets: Set<UInt16>?, requireReady: Bool)

    // L2CAP credit-based channels (Vol 3 Part A §4.22)
    case registerL2CAPServer(ServiceL2CAPServer, requiresEncryption: Bool)
    case unregisterL2CAPServer(psm: UInt16)
    case openChannel(handle: UInt16, psm: UInt16, mtu: UInt16)
    case sendL2CAPSDU(handle: UInt16, channel: L2CAPChannelIdentifier, [UInt8])
    case closeL2CAPChannel(handle: UInt16, channel: L2CAPChannelIdentifier)

    // Security (Vol 3 Part H)
    case pair(handle: UInt16, PairingOptions)
    case requestSecurity(handle: UInt16, mitm: Bool?)
    case answerPairing(handle: UInt16, PairingAnswer)
    case localOutOfBandData
    case setPeerOutOfBandData(BluetoothAddress, random: Block128, confirm: Block128)
    case setLegacyOutOfBandKey(BluetoothAddress, temporaryKey: Block128)
    case removeOutOfBandData(BluetoothAddress)

    /// Whether the caller waits for an answer (a ``ServiceMessage/result(id:_:)``); the others are told and forgotten.
    public var expectsAnswer: Bool {
        switch self {
        case .respondToGATTRequest, .answerPairing, .setPeerOutOfBandData, .setLegacyOutOfBandKey, .removeOutOfBandData,
             .setGATTDeferral, .unregisterL2CAPServer: false
        default: true
        }
    }
}

/// An answer to a deferred GATT request (Vol 3 Part F §3.4): the value (empty for a write) or the ATT error.
public enum ServiceGATTAnswer: Sendable, Codable, Equatable {
    case value([UInt8])
    case error(GATTAttributeError)

    public init(_ result: Result<[UInt8], GATTAttributeError>) {
        switch result {
        case .success(let value): self = .value(value)
        case .failure(let error): self = .error(error)
        }
    }

    public var result: Result<[UInt8], GATTAttributeError> {
        switch self {
        case .value(let value): .success(value)
        case .error(let error): .failure(error)
        }
    }
}

/// A local L2CAP channel server (L2CAP's `L2CAPChannelServer`, Vol 3 Part A §4.22, §4.25) as data: its accept
/// policy is one that needs no call back into the program (accept all, or refuse all with a result).
public struct ServiceL2CAPServer: Sendable, Codable, Equatable {
    public var psm: UInt16
    public var mtu: UInt16
    public var mps: UInt16
    public var initialCredits: UInt16
    public var creditPolicy: L2CAPChannelCreditPolicy
    /// nil: accept every valid request; else refuse each with this result.
    public var refusal: L2CAPConnectionResult?
    public var modes: Set<L2CAPChannelMode>

    /// The server's data, or nil when its accept policy decides per request (a call the service cannot make).
    public init?(_ server: L2CAPChannelServer) {
        switch server.acceptPolicy {
        case .acceptAll: refusal = nil
        case .refuseAll(let result): refusal = result
        case .decide: return nil
        }
        psm = server.psm
        mtu = server.mtu
        mps = server.mps
        initialCredits = server.initialCredits
        creditPolicy = server.creditPolicy
        modes = server.modes
    }

    public var server: L2CAPChannelServer {
        L2CAPChannelServer(psm: psm, mtu: mtu, mps: mps, initialCredits: initialCredits, creditPolicy: creditPolicy,
                           acceptPolicy: refusal.map { .refuseAll($0) } ?? .acceptAll, modes: modes)
    }
}
