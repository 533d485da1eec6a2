import BluetoothCore
import BluetoothCrypto
import BluetoothRuntime
import DequeModule
import HCI
import LinkLayer

/// One end of an LE connection in the Connection State (Core 5.4 Vol 6 Part B §4.5, §5): the acknowledgement
/// scheme (SN/NESN, §4.5.9), the data path between host ACL packets and LL data PDUs, and the control procedures
/// this controller runs (§5.1): connection update, termination, encryption start / pause (key refresh), feature
/// and version exchange, data length update, PHY update.
///
/// Sans-I/O: a value owned by its ``VirtualController`` and driven on the air's loop. The air asks it for the next
/// PDU to send (``nextTransmission()``) and hands it what was heard (``receive(_:rssi:now:random:)``); outputs are
/// ``Action``s. Encryption seals PDUs when they enter the transmit queue, so a retransmission resends the same
/// ciphertext (the MIC does not cover SN/NESN/MD) and the packet counters stay in step with the peer.
struct LinkLayerConnection {
    enum Role: Hashable, Sendable {
        case central
        case peripheral
    }

    enum Action: Hashable, Sendable {
        case event(HCIEvent)
        case acl(HCIACLDataPacket)
        /// The peripheral's host must be asked for the LTK (or the request answered negatively if masked).
        case requestLongTermKey(randomNumber: UInt64, encryptedDiversifier: UInt16)
        /// The connection is over for this end; `peerReason` ends the other end too (MIC failure).
        case terminated(reason: HCIStatus, peerReason: HCIStatus?)
    }

    struct Outgoing: Hashable, Sendable {
        var llid: UInt8
        /// The payload as sent (ciphertext and MIC when sealed).
        var payload: [UInt8]
        /// The payload before it was sealed (nil when sent in the clear), for the air's observer.
        var plaintext: [UInt8]?
        /// Host ACL packets fully sent once this PDU is acknowledged.
        var completesHostPackets: Int = 0
        var isTerminate = false
    }

    enum EncryptionState: Hashable, Sendable {
        case idle
        case centralPausing(ltk: Block128, randomNumber: UInt64, encryptedDiversifier: UInt16)
        case centralAwaitingResponse(ltk: Block128, skdm: UInt64, ivm: UInt32, refresh: Bool)
        case centralAwaitingStart(cipher: LinkLayerCipher, refresh: Bool)
        case centralAwaitingStartResponse(refresh: Bool)
        case peripheralPaused
        case peripheralAwaitingKey(skdm: UInt64, ivm: UInt32, skds: UInt64, ivs: UInt32, refresh: Bool)
        case peripheralAwaitingStartResponse(refresh: Bool)
    }

    struct PendingUpdate: Hashable, Sendable {
        var instant: UInt16
        var interval: UInt16
        var latency: UInt16
        var timeout: UInt16
    }

    struct PendingPHY: Hashable, Sendable {
        var instant: UInt16
        var centralToPeripheral: UInt8
        var peripheralToCentral: UInt8
    }

    static let minimumOctets: UInt16 = 27
    static let maximumOctets: UInt16 = 251

    let handle: UInt16
    let role: Role
    let peerAddressType: LEAddressType
    let peerAddress: BluetoothAddress
    var interval: UInt16
    var latency: UInt16
    var timeout: UInt16
    var eventCounter: UInt16 = 0
    var lastHeard: StackInstant
    var lastRSSI: Int8 = 127
    /// The host's largest ACL data packet (fragmentation towards the host).
    var hostMaximumACLLength = Int(maximumOctets)

    var transmitSequence: UInt8 = 0
    var nextExpectedSequence: UInt8 = 0
    var transmitQueue: Deque<Outgoing> = []
    /// Whether the last PDU sent was the head of ``transmitQueue`` (else an empty PDU): what an acknowledgement acks.
    var headSent = false
    /// Whether the last PDU sent still awaits its acknowledgement (it must then be resent unchanged, §4.5.9).
    var awaitingAcknowledgement = false
    var deferred: [LinkLayerControlPDU] = []
    var hostPackets: Deque<HCIACLDataPacket> = []
    var completedHostPackets = 0

    var localMaxTxOctets: UInt16
    var localMaxRxOctets: UInt16 = maximumOctets
    var remoteMaxTxOctets: UInt16 = minimumOctets
    var remoteMaxRxOctets: UInt16 = minimumOctets
    var maxTxOctets: UInt16 = minimumOctets
    var maxRxOctets: UInt16 = minimumOctets

    var txPHY = LEPhy.le1M
    var rxPHY = LEPhy.le1M
    var preferredTxPHYs: UInt8
    var preferredRxPHYs: UInt8
    var pendingPHY: PendingPHY?
    var hostAwaitsPHY = false
    var pendingUpdate: PendingUpdate?

    let localFeatures: UInt64
    let localVersion: (version: UInt8, company: UInt16, subversion: UInt16)
    var remoteFeatures: UInt64?
    var hostAwaitsFeatures = false
    var remoteVersion: (version: UInt8, company: UInt16, subversion: UInt16)?
    var versionSent = false
    var hostAwaitsVersion = false

    var session: LinkLayerEncryptionSession?
    var transmitEncrypted = false
    var receiveEncrypted = false
    var encrypted = false
    var encryption = EncryptionState.idle
    /// The reason the local host gave in HCI_Disconnect, while LL_TERMINATE_IND is on its way.
    var terminating: HCIStatus?
    /// T_Terminate (§5.1.6): when this end gives up waiting for the acknowledgement of LL_TERMINATE_IND and leaves
    /// the Connection State anyway (the supervision timeout after HCI_Disconnect).
    var terminateDeadline: StackInstant?

    init(handle: UInt16, role: Role, peerAddressType: LEAddressType, peerAddress: BluetoothAddress, interval: UInt16,
         latency: UInt16, timeout: UInt16, now: StackInstant, suggestedTxOctets: UInt16, preferredTxPHYs: UInt8,
         preferredRxPHYs: UInt8, localFeatures: UInt64, localVersion: (UInt8, UInt16, UInt16)) {
        self.handle = handle
        self.role = role
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.interval = interval
        self.latency = latency
        self.timeout = timeout
        self.lastHeard = now
        self.localMaxTxOctets = suggestedTxOctets
        self.preferredTxPHYs = preferredTxPHYs
        self.preferredRxPHYs = preferredRxPHYs
        self.localFeatures = localFeatures
        self.localVersion = localVersion
    }

    // MARK: Timing

    var supervisionTimeout: Duration { .milliseconds(Int(timeout) * 10) }
    var intervalDuration: Duration { .microseconds(Int(interval) * 1250) }

    // Always inlined, as `hasMoreData` below: the controller calls them on the struct stored in its connection
    // record (a class), and an out-of-line call copied the whole link state out of the record first (issue 31).
    @inline(__always)
    func supervisionExpired(now: StackInstant) -> Bool {
        if let terminateDeadline, now >= terminateDeadline { return true }
        return now - lastHeard >= supervisionTimeout
    }

    /// Applies the procedures whose instant is this event (§5.1.1, §5.1.10).
    mutating func beginEvent() -> [Action] {
        var actions: [Action] = []
        if let update = pendingUpdate, update.instant == eventCounter {
            pendingUpdate = nil
            interval = update.interval
            latency = update.latency
            timeout = update.timeout
            actions.append(.event(.leMeta(.connectionUpdateComplete(
                status: .success, handle: handle, connectionInterval: interval, peripheralLatency: latency,
                supervisionTimeout: timeout))))
        }
        if let phy = pendingPHY, phy.instant == eventCounter {
            pendingPHY = nil
            let (tx, rx) = role == .central
                ? (phy.centralToPeripheral, phy.peripheralToCentral) : (phy.peripheralToCentral, phy.centralToPeripheral)
            let changed = tx != 0 || rx != 0
            if tx != 0 { txPHY = Self.phy(fromBits: tx) }
            if rx != 0 { rxPHY = Self.phy(fromBits: rx) }
            if changed || hostAwaitsPHY {
                actions.append(.event(.leMeta(.phyUpdateComplete(status: .success, handle: handle, txPHY: txPHY, rxPHY: rxPHY))))
            }
            hostAwaitsPHY = false
        }
        return actions
    }

    mutating func endEvent() { eventCounter &+= 1 }

    // MARK: Host side

    var isEncryptionProcedureRunning: Bool {
        // A pattern, not `!= .idle`: the synthesized == copied the procedure's state (and with it, from the
        // per-exchange ``hasMoreData``, the whole connection) to compare it.
        @inline(__always) get {
            if case .idle = encryption { return false }
            return true
        }
    }

    var hasMoreData: Bool {
        @inline(__always) get {
            !transmitQueue.isEmpty || (!hostPackets.isEmpty && !isEncryptionProcedureRunning)
        }
    }

    var outstandingHostPackets: Int {
        hostPackets.count + transmitQueue.reduce(0) { $0 + $1.completesHostPackets }
    }

    mutating func queueHostPacket(_ packet: HCIACLDataPacket) { hostPackets.append(packet) }

    /// HCI_Disconnect: the termination procedure (§5.1.6). Data the host handed over before the command (still in
    /// the controller's buffers, at most ``ControllerSettings/aclDataPacketCount`` packets of 251 octets: 80 PDUs
    /// of 27 octets) goes out first, then LL_TERMINATE_IND; ACL data sent after the command is not transmitted.
    /// Bound: with the default 32 exchanges per event that is 3 connection events without loss, and T_Terminate
    /// ends this side one supervision timeout after the command whatever the peer does. During an encryption
    /// procedure no data may be sent (§5.1.3.1): the buffered packets are then dropped with the connection.
    mutating func disconnect(reason: HCIStatus, now: StackInstant) {
        moveHostPackets(limit: Int.max)
        terminating = reason
        terminateDeadline = now + supervisionTimeout
        append(llid: LinkLayerDataHeader.control, payload: LinkLayerControlPDU.terminateIndication(errorCode: reason.rawValue).encode(),
               isTerminate: true)
    }

    mutating func readRemoteFeatures() -> [Action] {
        if let features = remoteFeatures {
            return [.event(.leMeta(.readRemoteFeaturesComplete(status: .success, handle: handle, features: features)))]
        }
        hostAwaitsFeatures = true
        enqueue(role == .central ? .featureRequest(features: localFeatures) : .peripheralFeatureRequest(features: localFeatures))
        return []
    }

    mutating func readRemoteVersion() -> [Action] {
        if let remote = remoteVersion {
            return [versionEvent(remote)]
        }
        hostAwaitsVersion = true
        if !versionSent {
            versionSent = true
            enqueue(.versionIndication(version: localVersion.version, companyIdentifier: localVersion.company,
                                       subversion: localVersion.subversion))
        }
        return []
    }

    private func versionEvent(_ remote: (version: UInt8, company: UInt16, subversion: UInt16)) -> Action {
        .event(.readRemoteVersionInformationComplete(status: .success, handle: handle, version: remote.version,
                                                     companyIdentifier: CompanyIdentifier(remote.company),
                                                     subversion: remote.subversion))
    }

    /// Central only: LL_CONNECTION_UPDATE_IND with an instant far enough ahead for the queue and a few losses.
    mutating func updateConnection(interval: UInt16, latency: UInt16, timeout: UInt16) {
        let instant = eventCounter &+ 6 &+ UInt16(truncatingIfNeeded: min(transmitQueue.count, 1000))
        pendingUpdate = PendingUpdate(instant: instant, interval: interval, latency: latency, timeout: timeout)
        enqueue(.connectionUpdateIndication(windowSize: 1, windowOffset: 0, interval: interval, latency: latency,
                                            timeout: timeout, instant: instant))
    }

    mutating func setDataLength(txOctets: UInt16) {
        localMaxTxOctets = txOctets
        enqueue(.lengthRequest(localLengths))
    }

    mutating func setPHY(txPHYs: UInt8, rxPHYs: UInt8) {
        preferredTxPHYs = txPHYs
        preferredRxPHYs = rxPHYs
        hostAwaitsPHY = true
        enqueue(.phyRequest(txPHYs: txPHYs, rxPHYs: rxPHYs))
    }

    /// Central: LE Enable Encryption. Starts the encryption start procedure, or the pause procedure first when the
    /// link is already encrypted (key refresh, §5.1.3.2).
    mutating func startEncryption(ltk: Block128, randomNumber: UInt64, encryptedDiversifier: UInt16,
                                  random: inout some RandomNumberGenerator) {
        if encrypted {
            encryption = .centralPausing(ltk: ltk, randomNumber: randomNumber, encryptedDiversifier: encryptedDiversifier)
            enqueue(.pauseEncryptionRequest, procedure: true)
        } else {
            sendEncryptionRequest(ltk: ltk, randomNumber: randomNumber, encryptedDiversifier: encryptedDiversifier,
                                  refresh: false, random: &random)
        }
    }

    private mutating func sendEncryptionRequest(ltk: Block128, randomNumber: UInt64, encryptedDiversifier: UInt16,
                                                refresh: Bool, random: inout some RandomNumberGenerator) {
        let skdm = random.next()
        let ivm = UInt32(truncatingIfNeeded: random.next())
        encryption = .centralAwaitingResponse(ltk: ltk, skdm: skdm, ivm: ivm, refresh: refresh)
        enqueue(.encryptionRequest(randomNumber: randomNumber, encryptedDiversifier: encryptedDiversifier, skdm: skdm, ivm: ivm),
                procedure: true)
    }

    /// Peripheral: the host's LTK (nil: negative reply).
    mutating func longTermKeyReply(_ ltk: Block128?) -> [Action] {
        guard case .peripheralAwaitingKey(let skdm, let ivm, let skds, let ivs, let refresh) = encryption else { return [] }
        guard let ltk else {
            encryption = .idle
            enqueue(.rejectExtendedIndication(rejectOpcode: 0x03, errorCode: HCIStatus.pinOrKeyMissing.rawValue), procedure: true)
            if refresh {
                return [.terminated(reason: .pinOrKeyMissing, peerReason: .pinOrKeyMissing)]
            }
            releaseDeferred()
            return []
        }
        guard let cipher = try? LinkLayerCipher(ltk: ltk, skdm: skdm, skds: skds, ivm: ivm, ivs: ivs) else { return [] }
        session = LinkLayerEncryptionSession(cipher: cipher, role: .peripheral)
        encryption = .peripheralAwaitingStartResponse(refresh: refresh)
        enqueue(.startEncryptionRequest, procedure: true)
        receiveEncrypted = true
        return []
    }

    var awaitsLongTermKey: Bool {
        if case .peripheralAwaitingKey = encryption { return true }
        return false
    }

    // MARK: Queueing

    private var localLengths: LinkLayerControlPDU.LinkLayerLengths {
        .init(maxRxOctets: localMaxRxOctets, maxRxTime: Self.time(localMaxRxOctets),
              maxTxOctets: localMaxTxOctets, maxTxTime: Self.time(localMaxTxOctets))
    }

    /// The 1M PHY air time of a PDU with `octets` payload octets (µs): (octets + 14) × 8 (§4.5.10).
    static func time(_ octets: UInt16) -> UInt16 { (min(octets, maximumOctets) + 14) * 8 }

    private mutating func enqueue(_ pdu: LinkLayerControlPDU, procedure: Bool = false) {
        if isEncryptionProcedureRunning && !procedure {
            deferred.append(pdu)
            return
        }
        append(llid: LinkLayerDataHeader.control, payload: pdu.encode())
    }

    private mutating func releaseDeferred() {
        let held = deferred
        deferred = []
        for pdu in held { enqueue(pdu) }
    }

    private mutating func append(llid: UInt8, payload: [UInt8], completes: Int = 0, isTerminate: Bool = false) {
        var sent = payload
        var plaintext: [UInt8]?
        if transmitEncrypted, var current = session {
            let header = LinkLayerDataHeader(llid: llid, nextExpectedSequence: 0, sequence: 0, moreData: false,
                                             length: UInt8(truncatingIfNeeded: payload.count))
            if let sealed = try? current.seal([header.firstOctet, header.length] + payload) {
                sent = Array(sealed.dropFirst(2))
                plaintext = payload
                session = current
            }
        }
        transmitQueue.append(Outgoing(llid: llid, payload: sent, plaintext: plaintext, completesHostPackets: completes,
                                      isTerminate: isTerminate))
    }

    /// Moves host ACL packets into LL data PDUs of at most ``maxTxOctets``.
    private mutating func refill() {
        guard terminating == nil else { return }
        moveHostPackets(limit: 64)
    }

    /// Segments buffered host packets into the transmit queue while it holds fewer than `limit` PDUs.
    private mutating func moveHostPackets(limit: Int) {
        guard !isEncryptionProcedureRunning else { return }
        while !hostPackets.isEmpty, transmitQueue.count < limit {
            let packet = hostPackets.removeFirst()
            guard !packet.data.isEmpty else {
                completedHostPackets += 1
                continue
            }
            let size = Int(max(1, maxTxOctets))
            var start = 0
            while start < packet.data.count {
                let end = min(packet.data.count, start + size)
                let llid = start == 0 && packet.packetBoundary.isStart ? LinkLayerDataHeader.start : LinkLayerDataHeader.continuation
                // The usual case, one PDU for the whole packet, takes its data as it is (a slice was copied).
                let payload = start == 0 && end == packet.data.count ? packet.data : Array(packet.data[start..<end])
                append(llid: llid, payload: payload, completes: end == packet.data.count ? 1 : 0)
                start = end
            }
        }
    }

    // MARK: Air side

    /// The PDU to send now: the unacknowledged head of the queue (retransmitted until acknowledged) or an empty PDU.
    /// The PDU ``nextTransmission()`` last returned with data, and its header (kept as they are: the plaintext
    /// is assembled only when the air's observer asks).
    private var lastTransmitted: (pdu: Outgoing, header: [UInt8])?

    /// The PDU ``nextTransmission()`` last returned as it was before sealing (the same header, the plaintext
    /// payload, then the MIC: the sealed payload's last four octets); nil when it went in the clear.
    var lastTransmittedPlaintext: [UInt8]? {
        guard let (pdu, header) = lastTransmitted, let plaintext = pdu.plaintext else { return nil }
        return header + plaintext + pdu.payload.suffix(4)
    }

    mutating func nextTransmission() -> [UInt8] {
        refill()
        // An unacknowledged empty PDU is resent as an empty PDU, never replaced by new data.
        let head = awaitingAcknowledgement && !headSent ? nil : transmitQueue.first
        headSent = head != nil
        awaitingAcknowledgement = true
        let header = LinkLayerDataHeader(
            llid: head?.llid ?? LinkLayerDataHeader.continuation, nextExpectedSequence: nextExpectedSequence,
            sequence: transmitSequence, moreData: transmitQueue.count > (head == nil ? 0 : 1),
            length: UInt8(truncatingIfNeeded: head?.payload.count ?? 0))
        lastTransmitted = head.map { ($0, [header.firstOctet, header.length]) }
        // Built at its final size: `[header] + payload` allocated the two-octet array and then grew it.
        guard let payload = head?.payload else { return [header.firstOctet, header.length] }
        var pdu: [UInt8] = []
        pdu.reserveCapacity(2 + payload.count)
        pdu.append(header.firstOctet)
        pdu.append(header.length)
        pdu.append(contentsOf: payload)
        return pdu
    }

    /// A PDU heard from the peer.
    mutating func receive(_ bytes: [UInt8], rssi: Int8, now: StackInstant,
                          random: inout some RandomNumberGenerator) -> [Action] {
        guard bytes.count >= 2, bytes.count == 2 + Int(bytes[1]) else { return [] }
        lastHeard = now
        lastRSSI = rssi
        let header = LinkLayerDataHeader(firstOctet: bytes[0], length: bytes[1])
        var actions: [Action] = []
        if header.nextExpectedSequence != transmitSequence {
            transmitSequence ^= 1
            let wasHeadSent = headSent
            headSent = false
            awaitingAcknowledgement = false
            if wasHeadSent, !transmitQueue.isEmpty {
                let acked = transmitQueue.removeFirst()
                completedHostPackets += acked.completesHostPackets
                if acked.isTerminate {
                    return [.terminated(reason: .connectionTerminatedByLocalHost, peerReason: nil)]
                }
            }
        }
        guard header.sequence == nextExpectedSequence else { return actions }  // a retransmission already taken
        nextExpectedSequence ^= 1
        guard header.length > 0 else { return actions }
        var pdu = bytes
        if receiveEncrypted, var current = session {
            do {
                pdu = try current.open(bytes)
                session = current
            } catch {
                return [.terminated(reason: .connectionTerminatedMICFailure, peerReason: .connectionTerminatedMICFailure)]
            }
        }
        let payload = Array(pdu.dropFirst(2))
        switch header.llid {
        case LinkLayerDataHeader.control:
            guard let control = try? LinkLayerControlPDU(decoding: payload) else {
                enqueue(.unknownResponse(unknownType: payload.first ?? 0))
                return actions
            }
            actions += handle(control, random: &random)
        case LinkLayerDataHeader.start, LinkLayerDataHeader.continuation:
            actions += deliver(payload, start: header.llid == LinkLayerDataHeader.start)
        default:
            break
        }
        return actions
    }

    private func deliver(_ payload: [UInt8], start: Bool) -> [Action] {
        let size = max(1, hostMaximumACLLength)
        var actions: [Action] = []
        var offset = 0
        while offset < payload.count {
            let end = min(payload.count, offset + size)
            let boundary: HCIACLDataPacket.PacketBoundary = offset == 0 && start ? .firstFlushable : .continuing
            // The usual case, one ACL packet for the whole payload, takes it as it is (a slice was copied).
            let data = offset == 0 && end == payload.count ? payload : Array(payload[offset..<end])
            if let packet = try? HCIACLDataPacket(handle: handle, packetBoundary: boundary, data: data) {
                actions.append(.acl(packet))
            }
            offset = end
        }
        return actions
    }

    private mutating func recomputeLengths() -> [Action] {
        let tx = max(Self.minimumOctets, min(localMaxTxOctets, remoteMaxRxOctets))
        let rx = max(Self.minimumOctets, min(localMaxRxOctets, remoteMaxTxOctets))
        guard tx != maxTxOctets || rx != maxRxOctets else { return [] }
        maxTxOctets = tx
        maxRxOctets = rx
        return [.event(.leMeta(.dataLengthChange(handle: handle, maxTxOctets: tx, maxTxTime: Self.time(tx),
                                                  maxRxOctets: rx, maxRxTime: Self.time(rx))))]
    }

    /// The PHY of one bit of a PHY field (bit 0 LE 1M, bit 1 LE 2M, bit 2 LE Coded; §2.4.2.22).
    static func phy(fromBits bits: UInt8) -> LEPhy {
        bits & 0x02 != 0 ? .le2M : bits & 0x04 != 0 ? .leCoded : .le1M
    }

    static func bit(of phy: LEPhy) -> UInt8 {
        switch phy {
        case .le2M: 0x02
        case .leCoded: 0x04
        default: 0x01
        }
    }

    /// The PHY one direction moves to (its bit), or 0 to stay: the fastest both ends accept (2M, then 1M, then
    /// Coded), as the central decides in §5.1.10.
    private static func choose(_ sender: UInt8, _ receiver: UInt8, current: LEPhy) -> UInt8 {
        let both = sender & receiver
        let wanted: UInt8 = both & 0x02 != 0 ? 0x02 : both & 0x01 != 0 ? 0x01 : both & 0x04 != 0 ? 0x04 : 0
        return wanted == 0 || wanted == bit(of: current) ? 0 : wanted
    }

    private mutating func sendPHYUpdate(peerTx: UInt8, peerRx: UInt8) {
        let cToP = Self.choose(preferredTxPHYs, peerRx, current: txPHY)
        let pToC = Self.choose(peerTx, preferredRxPHYs, current: rxPHY)
        let instant = eventCounter &+ 6 &+ UInt16(truncatingIfNeeded: min(transmitQueue.count, 1000))
        pendingPHY = PendingPHY(instant: instant, centralToPeripheral: cToP, peripheralToCentral: pToC)
        enqueue(.phyUpdateIndication(centralToPeripheral: cToP, peripheralToCentral: pToC, instant: instant))
    }

    private mutating func encryptionFinished(refresh: Bool) -> [Action] {
        encrypted = true
        encryption = .idle
        releaseDeferred()
        return [.event(refresh ? .encryptionKeyRefreshComplete(status: .success, handle: handle)
                                : .encryptionChange(status: .success, handle: handle, encryptionEnabled: 0x01))]
    }

    // swiftlint:disable:next cyclomatic_complexity function_body_length
    private mutating func handle(_ control: LinkLayerControlPDU, random: inout some RandomNumberGenerator) -> [Action] {
        switch control {
        case .connectionUpdateIndication(_, _, let interval, let latency, let timeout, let instant):
            guard role == .peripheral else { return [] }
            if instant &- eventCounter >= 0x8000 {
                return [.terminated(reason: .instantPassed, peerReason: nil)]
            }
            pendingUpdate = PendingUpdate(instant: instant, interval: interval, latency: latency, timeout: timeout)
        case .terminateIndication(let code):
            // The acknowledgement of LL_TERMINATE_IND ends the sender's side with 0x16 in the same exchange.
            return [.terminated(reason: HCIStatus(code), peerReason: .connectionTerminatedByLocalHost)]
        case .encryptionRequest(let rand, let ediv, let skdm, let ivm):
            guard role == .peripheral else { return [] }
            let refresh = encryption == .peripheralPaused
            let skds = random.next()
            let ivs = UInt32(truncatingIfNeeded: random.next())
            encryption = .peripheralAwaitingKey(skdm: skdm, ivm: ivm, skds: skds, ivs: ivs, refresh: refresh)
            enqueue(.encryptionResponse(skds: skds, ivs: ivs), procedure: true)
            return [.requestLongTermKey(randomNumber: rand, encryptedDiversifier: ediv)]
        case .encryptionResponse(let skds, let ivs):
            guard case .centralAwaitingResponse(let ltk, let skdm, let ivm, let refresh) = encryption,
                  let cipher = try? LinkLayerCipher(ltk: ltk, skdm: skdm, skds: skds, ivm: ivm, ivs: ivs) else { return [] }
            encryption = .centralAwaitingStart(cipher: cipher, refresh: refresh)
        case .startEncryptionRequest:
            guard case .centralAwaitingStart(let cipher, let refresh) = encryption else { return [] }
            session = LinkLayerEncryptionSession(cipher: cipher, role: .central)
            transmitEncrypted = true
            receiveEncrypted = true
            encryption = .centralAwaitingStartResponse(refresh: refresh)
            enqueue(.startEncryptionResponse, procedure: true)
        case .startEncryptionResponse:
            switch encryption {
            case .peripheralAwaitingStartResponse(let refresh):
                transmitEncrypted = true
                enqueue(.startEncryptionResponse, procedure: true)
                return encryptionFinished(refresh: refresh)
            case .centralAwaitingStartResponse(let refresh):
                return encryptionFinished(refresh: refresh)
            default:
                return []
            }
        case .pauseEncryptionRequest:
            guard role == .peripheral, encrypted else { return [] }
            encryption = .peripheralPaused
            enqueue(.pauseEncryptionResponse, procedure: true)
            receiveEncrypted = false
        case .pauseEncryptionResponse:
            if case .centralPausing(let ltk, let rand, let ediv) = encryption {
                transmitEncrypted = false
                receiveEncrypted = false
                enqueue(.pauseEncryptionResponse, procedure: true)
                sendEncryptionRequest(ltk: ltk, randomNumber: rand, encryptedDiversifier: ediv, refresh: true, random: &random)
            } else if encryption == .peripheralPaused {
                transmitEncrypted = false
            }
        case .rejectIndication(let code), .rejectExtendedIndication(0x03, let code):
            switch encryption {
            case .centralAwaitingResponse(_, _, _, let refresh), .centralAwaitingStart(_, let refresh):
                encryption = .idle
                releaseDeferred()
                if refresh {
                    return [.terminated(reason: HCIStatus(code), peerReason: nil)]
                }
                return [.event(.encryptionChange(status: HCIStatus(code), handle: handle, encryptionEnabled: 0x00))]
            default:
                return []
            }
        case .rejectExtendedIndication(let opcode, let code):
            if opcode == 0x16, hostAwaitsPHY {
                hostAwaitsPHY = false
                return [.event(.leMeta(.phyUpdateComplete(status: HCIStatus(code), handle: handle, txPHY: txPHY, rxPHY: rxPHY)))]
            }
        case .featureRequest(let features), .peripheralFeatureRequest(let features):
            remoteFeatures = features
            enqueue(.featureResponse(features: localFeatures))
        case .featureResponse(let features):
            remoteFeatures = features
            if hostAwaitsFeatures {
                hostAwaitsFeatures = false
                return [.event(.leMeta(.readRemoteFeaturesComplete(status: .success, handle: handle, features: features)))]
            }
        case .versionIndication(let version, let company, let subversion):
            remoteVersion = (version, company, subversion)
            if !versionSent {
                versionSent = true
                enqueue(.versionIndication(version: localVersion.version, companyIdentifier: localVersion.company,
                                           subversion: localVersion.subversion))
            }
            if hostAwaitsVersion {
                hostAwaitsVersion = false
                return [versionEvent((version, company, subversion))]
            }
        case .lengthRequest(let lengths):
            remoteMaxRxOctets = lengths.maxRxOctets
            remoteMaxTxOctets = lengths.maxTxOctets
            enqueue(.lengthResponse(localLengths))
            return recomputeLengths()
        case .lengthResponse(let lengths):
            remoteMaxRxOctets = lengths.maxRxOctets
            remoteMaxTxOctets = lengths.maxTxOctets
            return recomputeLengths()
        case .phyRequest(let tx, let rx):
            if role == .central {
                sendPHYUpdate(peerTx: tx, peerRx: rx)
            } else {
                enqueue(.phyResponse(txPHYs: preferredTxPHYs, rxPHYs: preferredRxPHYs))
            }
        case .phyResponse(let tx, let rx):
            if role == .central { sendPHYUpdate(peerTx: tx, peerRx: rx) }
        case .phyUpdateIndication(let cToP, let pToC, let instant):
            guard role == .peripheral else { return [] }
            if cToP == 0 && pToC == 0 {
                if hostAwaitsPHY {
                    hostAwaitsPHY = false
                    return [.event(.leMeta(.phyUpdateComplete(status: .success, handle: handle, txPHY: txPHY, rxPHY: rxPHY)))]
                }
                return []
            }
            if instant &- eventCounter >= 0x8000 {
                return [.terminated(reason: .instantPassed, peerReason: nil)]
            }
            pendingPHY = PendingPHY(instant: instant, centralToPeripheral: cToP, peripheralToCentral: pToC)
        case .unknownResponse(let type):
            if (type == 0x08 || type == 0x0E), hostAwaitsFeatures {
                hostAwaitsFeatures = false
                return [.event(.leMeta(.readRemoteFeaturesComplete(status: .unsupportedRemoteFeature, handle: handle, features: 0)))]
            }
        case .unknown(let opcode, _):
            enqueue(.unknownResponse(unknownType: opcode))
        }
        return []
    }
}
