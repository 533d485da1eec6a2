import ATT
import BluetoothCore
import HCI
import L2CAP
import Logging
import SMP
import BluetoothEngine

/// What the host logs (labels and levels in `LogLabel`): every HCI command and event it sends or receives, every
/// L2CAP PDU of every connection under the label of its channel's protocol (ATT, SMP, L2CAP), and the events that
/// change a link. Each message is built only when its level is enabled (swift-log's autoclosures), so a disabled
/// log costs one level check. Keys never reach a log: the commands and events that carry one (LE Encrypt, LE Rand,
/// LE Enable Encryption, LE Long Term Key Request Reply, LE Add Device To Resolving List, LE Generate DHKey
/// Complete) and SMP key distribution are logged by name only.
extension HostStack {
    /// Commands whose parameters or return parameters are keys or the randomness keys are made of.
    static let secretOpcodes: Set<HCIOpcode> = [
        .leEncrypt, .leRand, .leEnableEncryption, .leLongTermKeyRequestReply, .leAddDeviceToResolvingList,
        .leGenerateDHKey,
    ]

    func logSent(_ command: HCICommand) {
        loggers.hci.debug("sent \(Self.secretOpcodes.contains(command.opcode) ? command.name : command.dissection.renderLine())")
    }

    func logReceived(_ event: HCIEvent) {
        switch event {
        case .numberOfCompletedPackets:
            loggers.hci.trace("received \(event.dissection.renderLine())")
        case .commandComplete(_, let opcode, _) where Self.secretOpcodes.contains(opcode):
            loggers.hci.debug("received Command Complete for \(HCIOpcode.names[opcode.rawValue] ?? "\(opcode)")")
        case .leMeta(.generateDHKeyComplete(let status, _)):
            loggers.hci.debug("received LE Generate DHKey Complete: \(status)")
        default:
            loggers.hci.debug("received \(event.dissection.renderLine())")
        }
    }

    func logACL(_ frame: H4Frame, sent: Bool) {
        guard loggers.logsPackets else { return }
        loggers.hci.trace("\(sent ? "sent" : "received") ACL data: \(frame.packet.count) bytes")
    }

    /// One L2CAP PDU (basic header included) sent or received on a connection, under its protocol's label.
    func logL2CAP(_ pdu: [UInt8], handle: UInt16, sent: Bool) {
        guard loggers.logsPackets, pdu.count >= L2CAPBasicFrame.headerLength else { return }
        let channel = L2CAPChannelIdentifier(UInt16(pdu[2]) | UInt16(pdu[3]) << 8)
        let logger = switch channel {
        case .attributeProtocol: loggers.att
        case .securityManager: loggers.smp
        default: loggers.l2cap
        }
        logger.debug("\(sent ? "sent" : "received") \(Self.describeL2CAP(pdu, channel: channel))",
                     metadata: linkMetadata(handle))
    }

    /// The connection handle and the peer, as every per-connection message carries them.
    func linkMetadata(_ handle: UInt16) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["connection": "\(Dissection.hex16(handle))"]
        if let peer = connections[handle]?.connection.peer { metadata["peer"] = "\(peer)" }
        return metadata
    }

    static func describeL2CAP(_ pdu: [UInt8], channel: L2CAPChannelIdentifier) -> String {
        guard let frame = try? L2CAPBasicFrame(decoding: pdu) else {
            return "L2CAP PDU on channel \(Dissection.hex16(channel.rawValue)) (\(pdu.count) bytes, not a whole frame)"
        }
        switch channel {
        case .attributeProtocol:
            return (try? ATTPDU(decoding: frame.payload).dissection.renderLine()) ?? "undecodable ATT PDU \(Hex.encode(frame.payload.prefix(8)))"
        case .securityManager:
            guard let pdu = try? SMPPDU(decoding: frame.payload) else { return "undecodable SMP PDU" }
            switch pdu {
            case .encryptionInformation, .centralIdentification, .identityInformation, .signingInformation:
                return pdu.dissection.label
            default:
                return pdu.dissection.renderLine()
            }
        case .leSignaling:
            return (try? L2CAPSignalingCommand(decoding: frame.payload).dissection.renderLine())
                ?? "undecodable L2CAP signaling command"
        default:
            return "L2CAP channel \(Dissection.hex16(channel.rawValue)): \(frame.payload.count) bytes"
        }
    }

    /// A pairing's outcome without its keys: "Just Works, LE Secure Connections, unauthenticated, key size 16, bonded".
    static func describe(_ outcome: PairingOutcome) -> String {
        let keySize = outcome.keySize.map { "key size \($0)" }
        if outcome.usedExistingBond { return "encrypted with the stored bond" + (keySize.map { ", \($0)" } ?? "") }
        return [
            outcome.method.map { "\($0)" } ?? "unknown method",
            outcome.secureConnections.map { $0 ? "LE Secure Connections" : "legacy" },
            outcome.authenticated.map { $0 ? "authenticated" : "unauthenticated" },
            keySize,
            outcome.bonded ? "bonded" : "not bonded",
        ].compactMap { $0 }.joined(separator: ", ")
    }

    /// The events that change a link or the controller, at debug like the exchanges (the owner gets each as a
    /// `HostEvent`; a library logs at info and above only what its app could not otherwise see).
    func logEvent(_ event: HostEvent) {
        switch event {
        case .connected(let connection):
            loggers.gap.debug("connected as \(connection.role) to \(connection.peer)", metadata: [
                "connection": "\(Dissection.hex16(connection.handle))",
                "interval": "\(connection.parameters.interval)", "latency": "\(connection.parameters.latency)",
                "timeout": "\(connection.parameters.supervisionTimeout)",
            ])
        case .disconnected(let handle, let reason):
            loggers.gap.debug("disconnected: \(reason)", metadata: ["connection": "\(Dissection.hex16(handle))"])
        case .encryptionChanged(let handle, let status, let enabled):
            loggers.gap.debug("encryption \(enabled ? "on" : "off")\(status == .success ? "" : ": \(status)")",
                             metadata: linkMetadata(handle))
        case .pairingCompleted(let handle, let outcome):
            loggers.smp.debug("paired: \(Self.describe(outcome))", metadata: linkMetadata(handle))
        case .pairingFailed(let handle, _, let error):
            loggers.smp.debug("pairing failed: \(error)", metadata: linkMetadata(handle))
        case .controllerError(let error):
            loggers.hci.debug("\(error)")
        case .bondStoreError(let error):
            loggers.smp.warning("\(error)")
        default:
            break
        }
    }
}
