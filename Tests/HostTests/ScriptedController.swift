import BluetoothCore
import BluetoothRuntime
import HCI
import HCITransport
import Host

/// A controller played by the test: it records the exact frames the host sends and delivers the events and ACL
/// data the test scripts. An optional responder answers commands as they arrive (for the init sequence and
/// routine commands); without it the test answers by hand.
final class ScriptedController: HCITransport, @unchecked Sendable {
    private struct State {
        var onFrames: (@Sendable ([H4Frame]) -> Void)?
        var onClose: (@Sendable (HCITransportError?) -> Void)?
        var sent: [H4Frame] = []
        /// The frames of each call of `send` or `send(frames:)`: one entry per write the host made.
        var writes: [[H4Frame]] = []
        var closed = false
        var responder: (@Sendable (HCICommand) -> [HCIEvent]?)?
    }

    private let state = LockedValue(State())
    let name = "scripted controller"

    func start(onFrame: @escaping @Sendable (H4Frame) -> Void,
               onClose: @escaping @Sendable (HCITransportError?) -> Void) throws(HCITransportError) {
        try start(onFrames: { frames in for frame in frames { onFrame(frame) } }, onClose: onClose)
    }

    func start(onFrames: @escaping @Sendable ([H4Frame]) -> Void,
               onClose: @escaping @Sendable (HCITransportError?) -> Void) throws(HCITransportError) {
        let started = state.withLock { state -> Bool in
            guard state.onFrames == nil else { return false }
            state.onFrames = onFrames
            state.onClose = onClose
            return true
        }
        guard started else { throw HCITransportError(.alreadyStarted, "started twice") }
    }

    func send(_ frame: H4Frame) throws(HCITransportError) {
        try send(frames: [frame])
    }

    func send(frames: [H4Frame]) throws(HCITransportError) {
        let (open, responder) = state.withLock { state -> (Bool, (@Sendable (HCICommand) -> [HCIEvent]?)?) in
            guard !state.closed else { return (false, nil) }
            state.sent += frames
            state.writes.append(frames)
            return (true, state.responder)
        }
        guard open else { throw HCITransportError(.closed, "closed") }
        guard let responder else { return }
        for frame in frames where frame.type == .command {
            guard let command = try? HCICommand(decoding: frame.packet), let answers = responder(command) else { continue }
            for event in answers { deliver(event) }
        }
    }

    func close() {
        let onClose = state.withLock { state -> (@Sendable (HCITransportError?) -> Void)? in
            guard !state.closed else { return nil }
            state.closed = true
            return state.onClose
        }
        onClose?(nil)
    }

    // MARK: Test side

    /// Answers commands as they are sent (nil answer: the command is ignored, as Bumble ignores LE Set PHY).
    func setResponder(_ responder: (@Sendable (HCICommand) -> [HCIEvent]?)?) {
        state.withLock { $0.responder = responder }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Every frame sent so far, as H4 bytes.
    var sentBytes: [[UInt8]] { state.withLock { $0.sent.map { $0.encode() } } }

    /// The commands sent so far.
    var sentCommands: [HCICommand] {
        state.withLock { $0.sent.filter { $0.type == .command }.compactMap { try? HCICommand(decoding: $0.packet) } }
    }

    /// The ACL packets sent so far.
    var sentACL: [HCIACLDataPacket] {
        state.withLock { $0.sent.filter { $0.type == .aclData }.compactMap { try? HCIACLDataPacket(frame: $0) } }
    }

    /// The frames of each write the host made, in order.
    var writes: [[H4Frame]] { state.withLock { $0.writes } }

    /// Forgets what was sent.
    func clearSent() { state.withLock { $0.sent = []; $0.writes = [] } }

    func deliver(_ event: HCIEvent) {
        deliver(H4Frame(type: .event, packet: event.encode()))
    }

    func deliver(_ packet: HCIACLDataPacket) {
        deliver(packet.frame)
    }

    func deliver(_ frame: H4Frame) {
        deliver(batch: [frame])
    }

    /// Delivers frames as one read of a byte stream would: in one call.
    func deliver(batch frames: [H4Frame]) {
        let onFrames = state.withLock { $0.onFrames }
        onFrames?(frames)
    }

    /// The peer hangs up.
    func hangUp() {
        let onClose = state.withLock { state -> (@Sendable (HCITransportError?) -> Void)? in
            state.closed = true
            return state.onClose
        }
        onClose?(HCITransportError(.closedByPeer, "peer closed"))
    }
}

/// What a scripted controller answers during initialisation and to routine commands.
struct ControllerModel: Sendable {
    var leBufferLength: UInt16 = 27
    var leBufferCount: UInt8 = 3
    var supportsLEReadBufferSizeV2 = false
    var v2BufferLength: UInt16 = 251
    var v2BufferCount: UInt8 = 4
    var sharedBufferLength: UInt16 = 1021
    var sharedBufferCount: UInt16 = 8
    var publicAddress = BluetoothAddress(0x0011_2233_4455)
    /// Commands the controller never answers (Bumble: LE Set PHY, LE Encrypt, P-256).
    var ignored: Set<HCIOpcode> = []
    /// Commands answered with Unknown Command in a Command Complete (Bumble: Read RSSI, LE Set Data Length).
    var unknown: Set<HCIOpcode> = []
    var credits: UInt8 = 1
    /// LE Read Filter Accept List Size's answer (Core 5.4 Vol 4 Part E §7.8.14).
    var filterAcceptListSize: UInt8 = 8
    /// Commands answered with this status instead of success.
    var refused: [HCIOpcode: HCIStatus] = [:]

    func answer(_ command: HCICommand) -> [HCIEvent]? {
        let opcode = command.opcode
        if ignored.contains(opcode) { return nil }
        if unknown.contains(opcode) {
            return [.commandComplete(numHCICommandPackets: credits, opcode: opcode, returnParameters: .status(.unknownCommand))]
        }
        if let status = refused[opcode] {
            if HCICommand.table[opcode]?.answeredByCommandStatus == true {
                return [.commandStatus(status: status, numHCICommandPackets: credits, opcode: opcode)]
            }
            return [.commandComplete(numHCICommandPackets: credits, opcode: opcode, returnParameters: .status(status))]
        }
        let returned: HCIReturnParameters
        switch command {
        case .leReadFilterAcceptListSize:
            returned = .leReadFilterAcceptListSize(status: .success, size: filterAcceptListSize)
        case .readLocalVersionInformation:
            returned = .readLocalVersionInformation(status: .success, version: HCILocalVersionInformation(
                hciVersion: 0x0D, hciSubversion: 0x0001, lmpVersion: 0x0D, companyIdentifier: CompanyIdentifier(0x05F1),
                lmpSubversion: 0x0002))
        case .readLocalSupportedFeatures:
            returned = .readLocalSupportedFeatures(status: .success, features: 0x0000_0060_0000_0000)
        case .readLocalSupportedCommands:
            var mask = [UInt8](repeating: 0xFF, count: 64)
            if !supportsLEReadBufferSizeV2 { mask[41] &= ~(1 << 5) }
            returned = .readLocalSupportedCommands(status: .success, commands: mask)
        case .leReadBufferSize:
            returned = .leReadBufferSize(status: .success, leACLDataPacketLength: leBufferLength, totalNumLEACLDataPackets: leBufferCount)
        case .leReadBufferSizeV2:
            returned = .leReadBufferSizeV2(status: .success, leACLDataPacketLength: v2BufferLength,
                                           totalNumLEACLDataPackets: v2BufferCount, isoDataPacketLength: 0, totalNumISODataPackets: 0)
        case .readBufferSize:
            returned = .readBufferSize(status: .success, aclDataPacketLength: sharedBufferLength, synchronousDataPacketLength: 0,
                                       totalNumACLDataPackets: sharedBufferCount, totalNumSynchronousDataPackets: 0)
        case .readBDADDR:
            returned = .readBDADDR(status: .success, address: publicAddress)
        case .leReadLocalSupportedFeatures:
            returned = .leReadLocalSupportedFeatures(status: .success, features: 0x0000_0000_0000_003F)
        case .leRand:
            returned = .leRand(status: .success, randomNumber: 0x0102_0304_0506_0708)
        case .readRSSI(let handle):
            returned = .readRSSI(status: .success, handle: handle, rssi: -42)
        case .leSetDataLength(let handle, _, _):
            returned = .statusAndHandle(status: .success, handle: handle)
        case .leRemoteConnectionParameterRequestReply(let handle, _),
             .leRemoteConnectionParameterRequestNegativeReply(let handle, _):
            returned = .statusAndHandle(status: .success, handle: handle)
        default:
            guard let info = HCICommand.table[opcode] else { return nil }
            if info.answeredByCommandStatus {
                return [.commandStatus(status: .success, numHCICommandPackets: credits, opcode: opcode)]
            }
            guard info.returnParametersLength == 1 else { return nil }
            returned = .status(.success)
        }
        return [.commandComplete(numHCICommandPackets: credits, opcode: opcode, returnParameters: returned)]
    }
}

/// Collects values handed over on the loop (events, completions).
final class Recorder<Value: Sendable>: @unchecked Sendable {
    private let storage = LockedValue<[Value]>([])
    func append(_ value: Value) { storage.withLock { $0.append(value) } }
    var values: [Value] { storage.withLock { $0 } }
    var last: Value? { values.last }
    var count: Int { values.count }
    func removeAll() { storage.withLock { $0 = [] } }
}
