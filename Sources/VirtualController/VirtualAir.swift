public import BluetoothCore
public import BluetoothRuntime
public import HCI
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import LinkLayer

/// The shared radio medium of virtual controllers: who hears whom, at which RSSI, and when (DESIGN.md "The
/// virtual controller and the air"). It owns all link-layer scheduling: advertising events (Core 5.4 Vol 6 Part B
/// §4.4.2.2, with the 0–10 ms advDelay) and connection events (§4.5.1), on one timer armed on its loop for the
/// earliest of them. Every random choice (advDelay, loss, jitter, LE Rand, SKD/IV) comes from one generator seeded
/// at init and drawn in loop order, so the same seed and the same scenario give the same packets and events.
///
/// All state is confined to ``eventLoop``; ``configuration`` and device positions may be changed from any thread.
public final class VirtualAir: @unchecked Sendable {
    /// The loop everything on this air runs on.
    public let eventLoop: any EventLoop

    private let configurationValue: LockedValue<AirConfiguration>
    private let observerValue = LockedValue<(@Sendable (AirPacket) -> Void)?>(nil)
    private let identifiers = LockedValue(0)

    /// The radio model; may be changed at any time (takes effect for the next packet).
    public var configuration: AirConfiguration {
        get { configurationValue.load() }
        set { configurationValue.store(newValue) }
    }

    /// Sees every packet put on the air (on the loop), for traces, hub statistics and determinism checks.
    public var observer: (@Sendable (AirPacket) -> Void)? {
        get { observerValue.load() }
        set { observerValue.store(newValue) }
    }

    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var random: AirRandom
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The controllers on the air by their identifier (an advertising event finds its advertiser, and a device
    /// leaves, without a scan of the air: a list took 100,000 advertisers leaving quadratic time, issue 31 item 5).
    private var devicesByIdentifier: [Int: VirtualController] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The devices scanning or initiating, in identifier (attach) order: who an advertising event can reach.
    private var listeners: [VirtualController] = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var links: [Int: AirLink] = [:]
    private var nextLinkIdentifier = 1

    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// When each advertising and connection event is due (a heap: with a thousand devices on the air, a scan of
    /// every task per event made the air quadratic, issue 13).
    private var tasks = AirSchedule()
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    private var timer: ScheduledJob?
    /// The timer's job, made once (the air arms its timer anew for nearly every event: 100,000 advertisers are
    /// 100,000 of them per interval).
    private lazy var fireJob: @Sendable () -> Void = { [weak self] in self?.fire() }
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    private var armedDeadline: StackInstant?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    private var firing = false

    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The time of the step being taken (see ``now``).
    private var stepTime: StackInstant?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Writes every step (``AirStepRecording``, SharedAir's AirRecorder); set before any device joins, from the thread that made the air.
    public var recorder: (any AirStepRecording)?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Whether the air's timer is driven from outside (``AirReplay``): it is then never armed on the loop, and
    /// ``fireRecordedTick()`` takes the place of its firing.
    package var replaying = false

    /// The air's clock: the loop's, standing still for the length of a step (a timer's firing, a host's frame, a
    /// device joining or leaving, a fault), so that a step does the same whatever the wall clock did meanwhile and a
    /// recorded run replays exactly (``AirStepRecording``, SharedAir's AirRecorder).
    public var now: StackInstant { stepTime ?? eventLoop.now }

    /// Runs `body` as one step at the loop's current time (nested steps share the outer one's time).
    package func step<Result>(_ body: (StackInstant) -> Result) -> Result {
        if let stepTime { return body(stepTime) }
        let time = eventLoop.now
        stepTime = time
        defer { stepTime = nil }
        return body(time)
    }

    public init(eventLoop: any EventLoop, seed: UInt64, configuration: AirConfiguration = AirConfiguration()) {
        self.eventLoop = eventLoop
        self.random = AirRandom(seed: seed)
        self.configurationValue = LockedValue(configuration)
    }

    /// Live connections (both ends or one end still up), for leak checks and the hub.
    public var linkCount: Int { links.count }

    /// Scheduled advertising and connection events, for leak checks.
    public var scheduledTaskCount: Int { tasks.count }

    // MARK: Devices

    func allocateIdentifier() -> Int {
        identifiers.withLock { value in
            value += 1
            return value
        }
    }

    func attach(_ device: VirtualController) {
        if eventLoop.inEventLoop {
            add(device)
        } else {
            eventLoop.execute { [self] in add(device) }
        }
    }

    private func add(_ device: VirtualController) {
        step { time in recorder?.join(device, at: time) }
        devicesByIdentifier[device.identifier] = device
    }

    /// Takes `controller` off this air for good (any thread): it powers off as with
    /// ``VirtualController/powerOff()`` (its peers see a supervision timeout) and the air forgets it, so a
    /// long-running air (``AirHub``) does not keep one controller per past device. A link it was on stays until
    /// the peer's end closes. The controller must not be used afterwards.
    public func detach(_ controller: VirtualController) {
        guard controller.air === self else { return }
        eventLoop.execute { [self] in
            step { time in recorder?.leave(controller, at: time) }
            controller.shutDown()
            forgetTasks(of: controller)
            if devicesByIdentifier[controller.identifier] === controller { devicesByIdentifier[controller.identifier] = nil }
            listeners.removeAll { $0 === controller }
        }
    }

    /// `device` started (true) or stopped listening for advertisements (on the loop).
    func setListening(_ device: VirtualController, _ listening: Bool) {
        listeners.removeAll { $0 === device }
        guard listening else { return }
        let index = listeners.firstIndex { $0.identifier > device.identifier } ?? listeners.endIndex
        listeners.insert(device, at: index)
    }

    /// Controllers on this air, powered or not (for leak checks and the hub).
    public var deviceCount: Int { devicesByIdentifier.count }

    /// The controllers on the air in the order they joined (identifiers grow), for snapshots.
    var devices: [VirtualController] { devicesByIdentifier.values.sorted { $0.identifier < $1.identifier } }

    func nextRandom() -> UInt64 { random.next() }

    func withRandom<Result>(_ body: (inout AirRandom) -> Result) -> Result { body(&random) }

    // MARK: Propagation

    /// The RSSI at which `receiver` hears `sender` on `phy` now, or nil when it does not (off, out of range, or
    /// lost).
    func hear(_ sender: VirtualController, _ receiver: VirtualController, phy: LEPhy = .le1M) -> Int8? {
        let model = configuration
        return hear(sender, receiver, phy: phy, model: model, pathLoss: pathLoss(between: sender, receiver, model))
    }

    /// The path loss between two controllers' positions under `model` (the same both ways).
    private func pathLoss(between one: VirtualController, _ other: VirtualController, _ model: AirConfiguration) -> Double {
        let distance = max(0.1, one.position.distance(to: other.position))
        return model.referenceLoss + 10 * model.pathLossExponent * log10(distance)
    }

    /// ``hear(_:_:phy:)`` with the configuration and path loss already read: a link's exchange reads them once for
    /// both of its packets (each read takes a lock: the configuration and positions can change from any thread).
    private func hear(_ sender: VirtualController, _ receiver: VirtualController, phy: LEPhy,
                      model: AirConfiguration, pathLoss: Double) -> Int8? {
        guard sender.powered, receiver.powered, sender.radioOn, receiver.radioOn, sender !== receiver else { return nil }
        var rssi = Double(sender.txPower) - pathLoss
        if model.rssiJitter > 0 { rssi += (random.unit() * 2 - 1) * model.rssiJitter }
        guard rssi.isFinite, rssi >= model.sensitivity - AirTime.sensitivityGain(phy) else { return nil }
        if model.packetLoss > 0, random.unit() < model.packetLoss { return nil }
        return Int8(clamping: Int(max(-128, min(127, rssi.rounded()))))
    }

    /// The RSSI `receiver` would measure from `sender` without jitter or loss (nil when out of range).
    public func rssi(from sender: VirtualController, to receiver: VirtualController) -> Int8? {
        let model = configuration
        let distance = max(0.1, sender.position.distance(to: receiver.position))
        let rssi = Double(sender.txPower) - (model.referenceLoss + 10 * model.pathLossExponent * log10(distance))
        guard rssi.isFinite, rssi >= model.sensitivity else { return nil }
        return Int8(clamping: Int(max(-128, min(127, rssi.rounded()))))
    }

    /// Gives the observer one PDU (built only when there is one): on the advertising access address unless a
    /// link's radio is given.
    func record(_ kind: AirPacket.Kind, from sender: BluetoothAddress, channel: UInt8, phy: LEPhy = .le1M,
                link radio: AirLinkRadio? = nil, after offset: @autoclosure () -> Duration = .zero, decrypted: () -> [UInt8]? = { nil },
                _ pdu: () -> [UInt8]) {
        guard let observer else { return }
        var packet = AirPacket(time: now + offset(), kind: kind, sender: sender, bytes: pdu(), channel: channel, phy: phy,
                               accessAddress: radio?.accessAddress ?? AdvertisingChannelPDU.accessAddress,
                               crcInit: radio?.crcInit ?? AdvertisingChannelPDU.crcInit)
        packet.decrypted = decrypted()
        observer(packet)
    }

    // MARK: Scheduling (one timer for all tasks)

    private func schedule(_ task: AirSchedule.Task, at deadline: StackInstant) {
        tasks.schedule(task, at: deadline)
        rearm()
    }

    private func cancel(_ task: AirSchedule.Task) {
        tasks.cancel(task)
        rearm()
    }

    private func rearm() {
        guard !firing else { return }
        let next = tasks.earliestDeadline()
        if let timer, !timer.isCancelled, next == armedDeadline { return }
        timer?.cancel()
        timer = nil
        armedDeadline = next
        guard let next, !replaying else { return }
        timer = eventLoop.schedule(at: next, fireJob)
    }

    private func fire() {
        timer = nil
        armedDeadline = nil
        firing = true
        step { time in
            recorder?.tick(at: time)
            while let task = tasks.takeDue(now: time) {
                switch task {
                case .advertising(let device): runAdvertisingEvent(device, set: nil)
                case .advertisingSet(let device, let handle): runAdvertisingEvent(device, set: handle)
                case .controllerTimer(let device): device.deadlineReached(now: time)
                case .connectionEvent(let link): runConnectionEvent(link)
                case .connectionExchange(let link): runTimedExchange(link)
                }
            }
        }
        firing = false
        rearm()
    }

    /// A recorded firing of the air's timer, at the loop's current time (``AirReplay``).
    package func fireRecordedTick() { fire() }

    // MARK: Advertising

    func scheduleAdvertising(_ device: VirtualController, first: Bool) {
        let parameters = device.settings.advertisingParameters
        let highDuty = parameters.advertisingType == .connectableHighDutyCycleDirected
        let delay: Duration = highDuty ? .zero : .microseconds(Int(random.next() % 10_001))
        let interval: Duration = first ? .zero
            : highDuty ? .microseconds(3750) : .microseconds(Int(parameters.intervalMin) * 625)
        schedule(.advertising(device), at: now + interval + delay)
    }

    /// The next advertising event of set `handle` of `device`: at once when `first`, else after its interval, plus
    /// advDelay (none for high duty cycle directed advertising).
    func scheduleAdvertising(_ device: VirtualController, set handle: UInt8, first: Bool) {
        guard let interval = device.advertisingInterval(set: handle) else { return }
        let highDuty = interval == .microseconds(3750)
        let delay: Duration = highDuty ? .zero : .microseconds(Int(random.next() % 10_001))
        schedule(.advertisingSet(device, handle), at: now + (first ? .zero : interval) + delay)
    }

    func cancelAdvertising(_ device: VirtualController) {
        cancel(.advertising(device))
    }

    func cancelAdvertising(_ device: VirtualController, set handle: UInt8) {
        cancel(.advertisingSet(device, handle))
    }

    /// Arms (or disarms) `device`'s own timer for its ``VirtualController/nextDeadline`` (on the loop).
    func rescheduleControllerTimer(_ device: VirtualController) {
        if let deadline = device.nextDeadline {
            schedule(.controllerTimer(device), at: deadline)
        } else {
            cancel(.controllerTimer(device))
        }
    }

    func cancelControllerTimer(_ device: VirtualController) {
        cancel(.controllerTimer(device))
    }

    /// Cancels whatever `device` still has scheduled (it leaves the air).
    private func forgetTasks(of device: VirtualController) {
        tasks.cancel(.advertising(device))
        tasks.cancel(.controllerTimer(device))
        for handle in device.airTasks.advertisingSets.keys { tasks.cancel(.advertisingSet(device, handle)) }
        rearm()
    }

    /// One advertising event: legacy PDUs on LE 1M, or ADV_EXT_IND on the primary PHY with its AUX_ADV_IND and
    /// AUX_CHAIN_INDs on the secondary PHY (Core 5.4 Vol 6 Part B §4.4.2.2). Each listener hears each PDU on its
    /// own (loss is per PDU and per listener), and a chain stops for a listener at its first lost PDU.
    private func runAdvertisingEvent(_ advertiser: VirtualController, set handle: UInt8?) {
        guard advertiser.powered else { return }
        let advertisement = handle.map { advertiser.currentAdvertisement(set: $0, now: now) } ?? advertiser.currentAdvertisement(now: now)
        guard let advertisement else { return }
        var fragments: [[UInt8]] = []
        if advertisement.isLegacy {
            record(.advertising(advertisement.legacyType), from: advertisement.address, channel: 37) {
                AdvertisingChannelPDU.legacyAdvertising(advertisement.legacyType, advertiser: advertisement.address,
                                                        target: advertisement.target, data: advertisement.data)
            }
        } else {
            fragments = AuxiliaryChain.fragments(advertisement.data, first: .auxAdvInd, properties: advertisement.properties)
            if observer != nil {
                let auxiliaryChannel = UInt8(truncatingIfNeeded: advertiser.identifier % 37)
                let payloads = AuxiliaryChain.payloads(
                    advMode: UInt8(advertisement.properties.rawValue & 0x03),
                    address: advertisement.isAnonymous ? nil : advertisement.address, target: advertisement.target,
                    adi: (advertisement.dataID, advertisement.sid), txPower: advertisement.txPower,
                    primaryPHY: advertisement.primaryPHY, phy: advertisement.secondaryPHY,
                    channel: auxiliaryChannel, fragments: fragments, first: .auxAdvInd, withIndication: true)
                // Each PDU where the AuxPtr before it says (the air delivers the chain at once; the record keeps its timing).
                var offset = Duration.zero
                for (index, payload) in payloads.enumerated() {
                    let kind: ExtendedAdvertisingPDU = index == 0 ? .advExtInd : index == 1 ? .auxAdvInd : .auxChainInd
                    record(.extendedAdvertising(kind), from: advertisement.address, channel: index == 0 ? 37 : auxiliaryChannel,
                           phy: index == 0 ? advertisement.primaryPHY : advertisement.secondaryPHY, after: offset) {
                        AdvertisingChannelPDU.extended(payload)
                    }
                    offset += payload.auxPtr?.offset ?? .zero
                }
            }
        }
        for listener in listeners where listener !== advertiser && listener.isListening(now: now, phy: advertisement.primaryPHY) {
            guard let rssi = hear(advertiser, listener, phy: advertisement.primaryPHY) else { continue }
            if advertisement.isLegacy {
                listener.receiveAdvertisement(advertisement, rssi: rssi, from: advertiser, now: now)
            } else if let (data, complete, auxiliaryRSSI) = hearChain(fragments, from: advertiser, to: listener,
                                                                        phy: advertisement.secondaryPHY) {
                listener.receiveExtendedAdvertisement(advertisement, data: data, complete: complete, rssi: auxiliaryRSSI,
                                                      from: advertiser, now: now)
            }
            guard isAdvertising(advertiser, handle) else { break }
        }
        guard isAdvertising(advertiser, handle) else { return }
        if let handle {
            advertiser.advertisingEventSent(set: handle)
            if isAdvertising(advertiser, handle) { scheduleAdvertising(advertiser, set: handle, first: false) }
        } else {
            scheduleAdvertising(advertiser, first: false)
        }
    }

    private func isAdvertising(_ device: VirtualController, _ handle: UInt8?) -> Bool {
        guard let handle else { return device.settings.advertising }
        return device.settings.advertisingSets[handle]?.enabled == true
    }

    /// When a SCAN_REQ, CONNECT_IND or their auxiliary forms start, from the start of the advertising event: T_IFS
    /// after the ADV_* PDU, or after the AUX_ADV_IND that ADV_EXT_IND's AuxPtr points to (for the record only: the
    /// air exchanges them at once).
    static func afterAdvertisingPDU(_ advertisement: AirAdvertisement) -> Duration {
        if advertisement.isLegacy {
            let payload = 6 + (advertisement.isDirected ? 6 : advertisement.data.count)
            return AirTime.packet(pduOctets: 2 + payload, phy: .le1M) + AirTime.interFrameSpace
        }
        // ADV_EXT_IND (ADI and AuxPtr) on the primary PHY, the AuxPtr's offset (AuxiliaryChain's), then the
        // AUX_ADV_IND's header fields.
        let indication = AirTime.packet(pduOctets: 2 + 1 + 1 + 2 + 3, phy: advertisement.primaryPHY)
        let pointer = Duration.microseconds(Int(UInt16(clamping: (indication + .microseconds(300)).nanosecondsClamped / 30_000)) * 30)
        let header = ExtendedAdvertisingPayload(advA: advertisement.isAnonymous ? nil : advertisement.address,
                                                targetA: advertisement.target, adi: (advertisement.dataID, advertisement.sid),
                                                txPower: advertisement.txPower)
        let auxiliary = AirTime.packet(pduOctets: 2 + header.encode().count + (advertisement.isScannable ? 0 : advertisement.data.count),
                                       phy: advertisement.secondaryPHY)
        return pointer + auxiliary + AirTime.interFrameSpace
    }

    /// From the start of a SCAN_REQ or AUX_SCAN_REQ (12 octets) to the start of the response.
    static func afterScanRequest(_ phy: LEPhy) -> Duration {
        AirTime.packet(pduOctets: 2 + 12, phy: phy) + AirTime.interFrameSpace
    }

    /// The PDUs of an auxiliary chain `receiver` hears in a row from the first: their data, whether that was all of
    /// them, and the RSSI of the first; nil when it does not hear the first.
    private func hearChain(_ fragments: [[UInt8]], from sender: VirtualController, to receiver: VirtualController,
                           phy: LEPhy) -> (data: [UInt8], complete: Bool, rssi: Int8)? {
        guard let first = fragments.first, let rssi = hear(sender, receiver, phy: phy) else { return nil }
        var data = first
        var heard = 1
        while heard < fragments.count, hear(sender, receiver, phy: phy) != nil {
            data += fragments[heard]
            heard += 1
        }
        return (data, heard == fragments.count, rssi)
    }

    /// SCAN_REQ from `scanner` and the SCAN_RSP back; nil when either is not heard or the advertiser refuses.
    func exchangeScanRequest(scanner: VirtualController, scannerAddress: BluetoothAddress,
                             advertiser: VirtualController, advertisement: AirAdvertisement) -> (data: [UInt8], rssi: Int8)? {
        record(.scanRequest, from: scannerAddress, channel: 37, after: Self.afterAdvertisingPDU(advertisement)) {
            AdvertisingChannelPDU.scanRequest(scanner: scannerAddress, advertiser: advertisement.address)
        }
        guard hear(scanner, advertiser) != nil, advertiser.acceptsScanRequest(from: scannerAddress, for: advertisement) else { return nil }
        let data = advertiser.scanResponseData(for: advertisement)
        record(.scanResponse, from: advertisement.address, channel: 37,
               after: Self.afterAdvertisingPDU(advertisement) + Self.afterScanRequest(.le1M)) {
            AdvertisingChannelPDU.scanResponse(advertiser: advertisement.address, data: data)
        }
        guard let rssi = hear(advertiser, scanner) else { return nil }
        return (data, rssi)
    }

    /// AUX_SCAN_REQ from `scanner` on the secondary PHY and the AUX_SCAN_RSP with its AUX_CHAIN_INDs back
    /// (§4.4.3.2): the scan response data heard in a row, whether all of it; nil when the request or the response
    /// is not heard, or the advertiser refuses.
    func exchangeAuxiliaryScanRequest(scanner: VirtualController, scannerAddress: BluetoothAddress, advertiser: VirtualController,
                                      advertisement: AirAdvertisement) -> (data: [UInt8], complete: Bool, rssi: Int8)? {
        let phy = advertisement.secondaryPHY
        // AUX_SCAN_REQ and AUX_SCAN_RSP on the channel of the AUX_ADV_IND; the response's chain where its AuxPtrs say.
        let advertisingChannel = UInt8(truncatingIfNeeded: advertiser.identifier % 37)
        let auxiliaryChannel = UInt8(truncatingIfNeeded: scanner.identifier % 37)
        record(.extendedAdvertising(.auxScanReq), from: scannerAddress, channel: advertisingChannel, phy: phy,
               after: Self.afterAdvertisingPDU(advertisement)) {
            AdvertisingChannelPDU.scanRequest(scanner: scannerAddress, advertiser: advertisement.address)
        }
        guard hear(scanner, advertiser, phy: phy) != nil,
              advertiser.acceptsScanRequest(from: scannerAddress, for: advertisement) else { return nil }
        let fragments = AuxiliaryChain.fragments(advertiser.scanResponseData(for: advertisement), first: .auxScanRsp,
                                                 properties: advertisement.properties)
        if observer != nil {
            let payloads = AuxiliaryChain.payloads(
                advMode: 0, address: advertisement.address, target: nil, adi: (advertisement.dataID, advertisement.sid),
                txPower: nil, phy: phy, channel: auxiliaryChannel, fragments: fragments,
                first: .auxScanRsp, withIndication: false)
            var offset = Self.afterAdvertisingPDU(advertisement) + Self.afterScanRequest(phy)
            for (index, payload) in payloads.enumerated() {
                record(.extendedAdvertising(index == 0 ? .auxScanRsp : .auxChainInd), from: advertisement.address,
                       channel: index == 0 ? advertisingChannel : auxiliaryChannel, phy: phy, after: offset) {
                    AdvertisingChannelPDU.extended(payload)
                }
                offset += payload.auxPtr?.offset ?? .zero
            }
        }
        return hearChain(fragments, from: advertiser, to: scanner, phy: phy)
    }

    /// CONNECT_IND (legacy PDUs) or AUX_CONNECT_REQ and AUX_CONNECT_RSP on the secondary PHY (§4.4.2.2.2) from
    /// `initiator`; true when the advertiser heard and accepted it (and for AUX_CONNECT_REQ the initiator heard the
    /// response): both ends are then connected, on the PHY the request went on.
    func connect(initiator: VirtualController, initiatorAddress: BluetoothAddress, advertiser: VirtualController,
                 advertisement: AirAdvertisement, parameters: LEConnectionParameters) -> Bool {
        let advertiserAddress = advertisement.address
        let phy = advertisement.isLegacy ? LEPhy.le1M : advertisement.secondaryPHY
        let radio = AirLinkRadio(link: nextLinkIdentifier)
        let requestChannel = advertisement.isLegacy ? 37 : UInt8(truncatingIfNeeded: advertiser.identifier % 37)
        record(advertisement.isLegacy ? .connectRequest : .extendedAdvertising(.auxConnectReq), from: initiatorAddress,
               channel: requestChannel, phy: phy, after: Self.afterAdvertisingPDU(advertisement)) {
            AdvertisingChannelPDU.connectIndication(initiator: initiatorAddress, advertiser: advertiserAddress, AdvertisingChannelPDU.LinkLayerData(
                accessAddress: radio.accessAddress, crcInit: radio.crcInit, interval: parameters.intervalMin,
                latency: parameters.maxLatency, timeout: parameters.supervisionTimeout, hopIncrement: radio.hopIncrement))
        }
        guard hear(initiator, advertiser, phy: phy) != nil,
              advertiser.acceptsConnection(from: initiatorAddress, for: advertisement) else { return false }
        if !advertisement.isLegacy {
            // AUX_CONNECT_REQ is 34 octets of payload, AUX_CONNECT_RSP follows T_IFS after it.
            record(.extendedAdvertising(.auxConnectRsp), from: advertiserAddress, channel: requestChannel, phy: phy,
                   after: Self.afterAdvertisingPDU(advertisement) + AirTime.packet(pduOctets: 2 + 34, phy: phy) + AirTime.interFrameSpace) {
                AdvertisingChannelPDU.extended(ExtendedAdvertisingPayload(advA: advertiserAddress, targetA: initiatorAddress),
                                               connectResponse: true)
            }
            guard hear(advertiser, initiator, phy: phy) != nil else { return false }
        }
        let link = AirLink(identifier: nextLinkIdentifier, central: initiator, peripheral: advertiser, radio: radio)
        nextLinkIdentifier += 1
        links[link.identifier] = link
        let now = self.now
        link.peripheralHandle = advertiser.establishConnection(link: link, role: .peripheral, peer: initiatorAddress,
                                                               local: advertiserAddress, parameters: parameters, phy: phy,
                                                               advertisingSet: advertisement.setHandle, now: now)
        link.centralHandle = initiator.establishConnection(link: link, role: .central, peer: advertiserAddress,
                                                           local: initiatorAddress, parameters: parameters, phy: phy, now: now)
        schedule(.connectionEvent(link), at: now + .microseconds(Int(parameters.intervalMin) * 1250))
        return true
    }

    // MARK: Connection events

    private func runConnectionEvent(_ link: AirLink) {
        let now = self.now
        if link.centralAlive { link.central.linkBeginEvent(link.centralHandle) }
        if link.peripheralAlive { link.peripheral.linkBeginEvent(link.peripheralHandle) }
        link.eventStart = now
        link.radio.advance()
        let model = configuration
        if model.realRadioTiming {
            runTimedExchange(link)
            return
        }
        let limit = max(1, model.maximumExchangesPerEvent)
        var exchanges = 0
        while exchanges < limit {
            exchanges += 1
            guard exchange(on: link, now: now).more else { break }
        }
        endConnectionEvent(link, now: now, nextAnchor: now + interval(of: link))
    }

    /// One exchange of a timed connection event (``AirConfiguration/realRadioTiming``): it takes its air time,
    /// and the next one follows when both ends have more to send and it would fit before the next anchor.
    private func runTimedExchange(_ link: AirLink) {
        let now = self.now
        let (time, more) = exchange(on: link, now: now)
        if link.centralAlive { link.central.linkExchangeEnded(link.centralHandle) }
        if link.peripheralAlive { link.peripheral.linkExchangeEnded(link.peripheralHandle) }
        let interval = interval(of: link)
        let end = now + time
        if more, link.centralAlive, link.peripheralAlive, end + time <= link.eventStart + interval {
            schedule(.connectionExchange(link), at: end)
            return
        }
        // An exchange longer than the interval (Coded PHY, long PDUs) overruns anchors: the next event is at the
        // first anchor after it.
        var anchor = link.eventStart + interval
        if end > anchor, interval > .zero {
            let missed = (end - anchor).nanosecondsClamped / max(1, interval.nanosecondsClamped) + 1
            anchor = anchor + interval * Int(missed)
        }
        endConnectionEvent(link, now: now, nextAnchor: anchor)
    }

    /// The central's PDU and the peripheral's answer: the exchange's air time (as far as it got) and whether the
    /// event may go on (both ends up, both packets heard, more data on either side; §4.5.6).
    private func exchange(on link: AirLink, now: StackInstant) -> (time: Duration, more: Bool) {
        let central = link.central, peripheral = link.peripheral
        guard let centralEnd = link.centralRecord, let request = central.linkTransmit(centralEnd) else { return (.zero, false) }
        let centralPHY = central.linkTransmitPHY(centralEnd)
        var time = AirTime.packet(pduOctets: request.count, phy: centralPHY) + AirTime.interFrameSpace
        record(.data(link: link.identifier, fromCentral: true), from: central.publicAddress, channel: link.radio.channel,
               phy: centralPHY, link: link.radio, decrypted: { central.linkLastPlaintext(centralEnd) }) { request }
        let model = configuration
        let pathLoss = pathLoss(between: central, peripheral, model)
        guard !link.jammed, let peripheralEnd = link.peripheralRecord,
              let rssi = hear(central, peripheral, phy: centralPHY, model: model, pathLoss: pathLoss) else { return (time, false) }
        peripheral.linkReceive(peripheralEnd, request, rssi: rssi, now: now)
        // Receiving may have ended either end (a terminate, a MIC failure): each is read from the link again.
        guard let peripheralEnd = link.peripheralRecord, let response = peripheral.linkTransmit(peripheralEnd) else { return (time, false) }
        let peripheralPHY = peripheral.linkTransmitPHY(peripheralEnd)
        time += AirTime.packet(pduOctets: response.count, phy: peripheralPHY) + AirTime.interFrameSpace
        record(.data(link: link.identifier, fromCentral: false), from: peripheral.publicAddress, channel: link.radio.channel,
               phy: peripheralPHY, link: link.radio, decrypted: { peripheral.linkLastPlaintext(peripheralEnd) }) { response }
        guard let centralEnd = link.centralRecord,
              let back = hear(peripheral, central, phy: peripheralPHY, model: model, pathLoss: pathLoss) else { return (time, false) }
        central.linkReceive(centralEnd, response, rssi: back, now: now)
        guard let centralEnd = link.centralRecord, let peripheralEnd = link.peripheralRecord else { return (time, false) }
        return (time, central.linkHasMoreData(centralEnd) || peripheral.linkHasMoreData(peripheralEnd))
    }

    private func interval(of link: AirLink) -> Duration {
        let interval = link.centralAlive ? link.central.linkInterval(link.centralHandle)
            : link.peripheral.linkInterval(link.peripheralHandle)
        return interval ?? .milliseconds(30)
    }

    /// Closes the event at both ends (supervision, event counter, completed packets) and schedules the next one.
    private func endConnectionEvent(_ link: AirLink, now: StackInstant, nextAnchor: StackInstant) {
        if link.centralAlive { link.central.linkEndEvent(link.centralHandle, now: now) }
        if link.peripheralAlive { link.peripheral.linkEndEvent(link.peripheralHandle, now: now) }
        guard link.centralAlive || link.peripheralAlive else {
            links[link.identifier] = nil
            tasks.cancel(.connectionExchange(link))
            return
        }
        schedule(.connectionEvent(link), at: nextAnchor)
    }

    // MARK: Faults on demand (AirHub.apply)

    /// Jams every link `device` is an end of (every link when nil): from now on nothing sent on them is heard, so
    /// both ends leave the Connection State by supervision timeout (§4.5.2), as when a link fades. On the loop;
    /// returns how many links were jammed.
    package func jamLinks(of device: VirtualController?) -> Int {
        var jammed = 0
        for link in links.values where !link.jammed && (device == nil || link.central === device || link.peripheral === device) {
            link.jammed = true
            jammed += 1
        }
        return jammed
    }

    /// Sets the part of packets lost (0...1) as one recorded step, from any thread (on the loop).
    package func setPacketLoss(_ loss: Double) {
        let clamped = min(max(loss, 0), 1)
        eventLoop.execute { [self] in
            step { time in
                configuration.packetLoss = clamped
                recorder?.fault("loss \(clamped)", at: time)
            }
        }
    }

    /// Moves `device` as one recorded step (on the loop).
    package func move(_ device: VirtualController, to position: AirPosition) {
        step { time in
            recorder?.fault("move \(device.identifier) \(position.x) \(position.y) \(position.z)", at: time)
            device.position = position
        }
    }

    /// The live links `device` is an end of (on the loop).
    package func linkCount(of device: VirtualController) -> Int {
        links.values.filter { ($0.central === device && $0.centralAlive) || ($0.peripheral === device && $0.peripheralAlive) }.count
    }

    /// Ends the other side of `link` (a MIC failure seen by one end is reported on both).
    func terminatePeer(of device: VirtualController, link: AirLink, reason: HCIStatus) {
        if device === link.central, link.peripheralAlive {
            link.peripheral.closeConnection(link.peripheralHandle, reason: reason)
        } else if device === link.peripheral, link.centralAlive {
            link.central.closeConnection(link.centralHandle, reason: reason)
        }
    }
}

/// One connection on the air: its two ends and whether each is still in the Connection State.
final class AirLink {
    let identifier: Int
    let central: VirtualController
    let peripheral: VirtualController
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var centralHandle: UInt16 = 0
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var peripheralHandle: UInt16 = 0
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The anchor of the current (or last) connection event.
    var eventStart = StackInstant.zero
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Nothing sent on the link is heard any more (``VirtualAir/jamLinks(of:)``).
    var jammed = false
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Its access address, CRC_INIT and data channel, for the observer.
    var radio: AirLinkRadio
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Each end's connection record while that end is in the Connection State (the record holds this link: the
    /// cycle ends when the end goes, ``endGone(_:)``).
    var centralRecord: VirtualController.ConnectionRecord?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var peripheralRecord: VirtualController.ConnectionRecord?
    /// Whether each end is still in the Connection State: it holds its record until it goes.
    var centralAlive: Bool { centralRecord != nil }
    var peripheralAlive: Bool { peripheralRecord != nil }
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The sequence numbers of its current entries in the air's ``AirSchedule`` (0: not scheduled).
    var eventSequence: UInt64 = 0
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var exchangeSequence: UInt64 = 0

    init(identifier: Int, central: VirtualController, peripheral: VirtualController, radio: AirLinkRadio) {
        self.identifier = identifier
        self.radio = radio
        self.central = central
        self.peripheral = peripheral
    }

    func endGone(_ device: VirtualController) {
        if device === central { centralRecord = nil }
        if device === peripheral { peripheralRecord = nil }
    }
}

/// A packet put on the air, as the ``VirtualAir/observer`` sees it.
public struct AirPacket: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable {
        case advertising(LEAdvertisingType)
        /// ADV_EXT_IND and the auxiliary PDUs of extended advertising: for ADV_EXT_IND, AUX_ADV_IND, AUX_SCAN_RSP and
        /// AUX_CHAIN_IND the payload in the Common Extended Advertising Payload Format (``ExtendedAdvertisingPayload``).
        case extendedAdvertising(ExtendedAdvertisingPDU)
        case scanRequest
        case scanResponse
        case connectRequest
        /// A data channel PDU (header and payload, sealed when encrypted) on link `link`.
        case data(link: Int, fromCentral: Bool)
    }

    public var time: StackInstant
    public var kind: Kind
    public var sender: BluetoothAddress
    /// The PDU: its header and payload (Vol 6 Part B §2.3 and §2.4), the payload sealed when the link is encrypted.
    public var bytes: [UInt8]
    /// The channel index (0...36 data, 37...39 primary advertising) it went on.
    public var channel: UInt8
    public var phy: LEPhy
    public var accessAddress: UInt32
    /// CRC_INIT of its channel (0x555555 on advertising channels, the link's otherwise).
    public var crcInit: UInt32
    /// A data PDU sealed by the link's encryption as its sender had it before: header, plaintext payload and the
    /// MIC (nil for PDUs sent in the clear).
    public var decrypted: [UInt8]?

    public init(time: StackInstant, kind: Kind, sender: BluetoothAddress, bytes: [UInt8], channel: UInt8, phy: LEPhy,
                accessAddress: UInt32, crcInit: UInt32) {
        self.time = time
        self.kind = kind
        self.sender = sender
        self.bytes = bytes
        self.channel = channel
        self.phy = phy
        self.accessAddress = accessAddress
        self.crcInit = crcInit
    }

    public var description: String { "\(time) \(kind) \(sender.string) ch\(channel) \(Hex.encode(bytes))" }
}
