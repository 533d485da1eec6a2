public import AdvertisingData
public import BluetoothCore
import BluetoothRuntime
public import HCI
public import BluetoothEngine

/// GAP over HCI (Core 5.4 Vol 3 Part C §9; Vol 4 Part E §7.8): advertising (legacy, or extended with
/// HostStack+ExtendedGAP.swift when the controller has it), scanning with advertising and
/// scan response merged per device, connection parameter updates (both directions),
/// disconnection, RSSI, data length and PHY requests with fallbacks for controllers that refuse or ignore them.
/// Connecting is HostStack+Connecting.swift.
extension HostStack {
    // MARK: Advertising

    /// Starts legacy advertising of `content` (laid out by ``AdvertisingContent/build(hasScanResponse:)``): LE Set
    /// Advertising Parameters, Advertising Data, Scan Response Data, Advertising Enable. Content that does not fit
    /// fails with ``HostError/Code/advertisingDataTooLarge`` before anything is sent.
    public func startAdvertising(_ content: AdvertisingContent, options: AdvertisingOptions = AdvertisingOptions(),
                                 completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        onLoop { [self] in
            let built: (advertisingData: AdvertisingData, scanResponse: AdvertisingData)
            do throws(HostError) {
                do throws(HostError) {
                    guard options.pdus == .automatic || !info.usesExtendedAdvertising else { throw HostError(.advertisingDataTooLarge, "") }
                    built = try content.build(hasScanResponse: options.kind.hasScanResponse)
                } catch where info.usesExtendedAdvertising {
                    // Too much for legacy PDUs (or extended ones asked for): one block of extended advertising data.
                    let capacity = options.kind == .connectable
                        ? min(Self.connectableExtendedDataLength, info.maximumAdvertisingDataLength) : info.maximumAdvertisingDataLength
                    built = (try content.buildExtended(capacity: capacity), AdvertisingData())
                }
            } catch {
                completion(.failure(error))
                return
            }
            startAdvertising(advertisingData: built.advertisingData, scanResponse: built.scanResponse, options: options,
                             completion: completion)
        }
    }

    /// Starts advertising ready-made data: each at most 31 octets with the legacy commands; with the extended ones
    /// (``ControllerInfo/usesExtendedAdvertising``) legacy PDUs when both fit them, else extended PDUs with up to
    /// the controller's maximum (245 octets for connectable advertising, which has no chain).
    public func startAdvertising(advertisingData: AdvertisingData, scanResponse: AdvertisingData = AdvertisingData(),
                                 options: AdvertisingOptions = AdvertisingOptions(),
                                 completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        onLoop { [self] in
            guard (0x0020...0x4000).contains(options.intervalMin), options.intervalMin <= options.intervalMax,
                  options.intervalMax <= 0x4000 else {
                completion(.failure(HostError(.invalidParameters, "advertising interval \(options.intervalMin)...\(options.intervalMax) is outside 0x0020...0x4000")))
                return
            }
            if info.usesExtendedAdvertising {
                do throws(HostError) {
                    let commands = try extendedAdvertisingCommands(advertisingData: advertisingData, scanResponse: scanResponse,
                                                                   options: options)
                    submitGAP(.advertising, enable: true, commands: commands, beforeEnable: {}, completion: completion)
                } catch {
                    completion(.failure(error))
                }
                return
            }
            for (data, name) in [(advertisingData, "advertising data"), (scanResponse, "scan response")] {
                guard data.encodedLength <= HCICommand.maximumAdvertisingDataLength else {
                    completion(.failure(HostError(
                        .advertisingDataTooLarge, "the \(name) takes \(data.encodedLength) octets; legacy advertising carries 31")))
                    return
                }
            }
            let parameters = LEAdvertisingParameters(
                intervalMin: options.intervalMin, intervalMax: options.intervalMax,
                advertisingType: options.kind.advertisingType, ownAddressType: info.ownAddressType,
                channelMap: options.channelMap)
            var commands: [HCICommand] = [.leSetAdvertisingParameters(parameters), .leSetAdvertisingData(advertisingData.encode())]
            if options.kind.hasScanResponse { commands.append(.leSetScanResponseData(scanResponse.encode())) }
            commands.append(.leSetAdvertisingEnable(true))
            submitGAP(.advertising, enable: true, commands: commands, beforeEnable: {}, completion: completion)
        }
    }

    /// Stops advertising (LE Set Advertising Enable off). Requests are ordered: a stop made while a start is still
    /// under way cancels it (the start fails with ``HostError/Code/cancelled`` unless its enable already went out),
    /// and the controller ends in the state of the last request.
    public func stopAdvertising(completion: (@Sendable (Result<Void, HostError>) -> Void)? = nil) {
        onLoop { [self] in
            isAdvertising = false
            let disable = info.usesExtendedAdvertising ? Self.extendedAdvertisingDisable : .leSetAdvertisingEnable(false)
            submitGAP(.advertising, enable: false, commands: [disable], beforeEnable: { [self] in
                isAdvertising = false
            }) { completion?($0) }
        }
    }

    // MARK: Scanning

    /// Starts scanning (LE Set Scan Parameters, LE Set Scan Enable). Reports arrive as
    /// ``HostEvent/advertisingReport(_:)``, each merged with the device's other packet.
    public func startScanning(_ options: ScanOptions = ScanOptions(),
                              completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        onLoop { [self] in
            guard (0x0004...0x4000).contains(options.interval), (0x0004...0x4000).contains(options.window),
                  options.window <= options.interval else {
                completion(.failure(HostError(.invalidParameters,
                                              "scan interval \(options.interval) / window \(options.window): both 0x0004...0x4000, window ≤ interval")))
                return
            }
            let parameters = LEScanParameters(scanType: options.active ? 0x01 : 0x00, interval: options.interval,
                                              window: options.window, ownAddressType: info.ownAddressType)
            let commands: [HCICommand] = info.usesExtendedAdvertising ? extendedScanCommands(options) : [
                .leSetScanParameters(parameters), .leSetScanEnable(enable: true, filterDuplicates: options.filterDuplicates),
            ]
            submitGAP(.scanning, enable: true, commands: commands, beforeEnable: { [self] in
                scanMerger.reset()
                isScanning = true
            }) { [self] result in
                if case .failure = result, gapLane(.scanning).waiting == nil, !gapLane(.scanning).controllerEnabled {
                    isScanning = false
                }
                completion(result)
            }
        }
    }

    /// Stops scanning; the per-device merge state is forgotten. Ordered with ``startScanning(_:completion:)`` as
    /// ``stopAdvertising(completion:)`` is with advertising: the last request wins.
    public func stopScanning(completion: (@Sendable (Result<Void, HostError>) -> Void)? = nil) {
        onLoop { [self] in
            isScanning = false
            scanMerger.reset()
            let disable = info.usesExtendedAdvertising ? Self.extendedScanDisable : .leSetScanEnable(enable: false, filterDuplicates: false)
            submitGAP(.scanning, enable: false, commands: [disable],
                      beforeEnable: { [self] in
                          isScanning = false
                          scanMerger.reset()
                      }) { completion?($0) }
        }
    }

    // MARK: Ordered GAP state changes

    func gapLane(_ kind: GAPLaneKind) -> GAPLane {
        switch kind {
        case .scanning: securityState.scanLane
        case .advertising: securityState.advertisingLane
        }
    }

    @discardableResult
    func withGAPLane<T>(_ kind: GAPLaneKind, _ body: (inout GAPLane) -> T) -> T {
        switch kind {
        case .scanning: body(&securityState.scanLane)
        case .advertising: body(&securityState.advertisingLane)
        }
    }

    /// Queues one start (`enable` true) or stop of scanning / advertising. The newest request replaces a waiting
    /// one (which completes with ``HostError/Code/cancelled``); a running start stops at its next command when a
    /// newer request came, and completes cancelled. A start on a controller left enabled first disables it (its
    /// failure tolerated: a connection may have stopped advertising already), since parameters cannot change
    /// while enabled (Vol 4 Part E §7.8.5, §7.8.10).
    func submitGAP(_ kind: GAPLaneKind, enable: Bool, commands: [HCICommand], beforeEnable: @escaping () -> Void,
                   completion: @escaping (Result<Void, HostError>) -> Void) {
        let request = GAPLane.Request(enable: enable, commands: commands, beforeEnable: beforeEnable, completion: completion)
        let replaced = withGAPLane(kind) { lane -> GAPLane.Request? in
            lane.generation &+= 1
            let old = lane.waiting
            lane.waiting = request
            return old
        }
        replaced?.completion(.failure(HostError(.cancelled, "a later \(kind) request replaced this one before it ran")))
        runNextGAP(kind)
    }

    private func runNextGAP(_ kind: GAPLaneKind) {
        let next = withGAPLane(kind) { lane -> (GAPLane.Request, UInt64, Bool)? in
            guard !lane.busy, let next = lane.waiting else { return nil }
            lane.waiting = nil
            lane.busy = true
            return (next, lane.generation, lane.controllerEnabled)
        }
        guard let (request, generation, enabled) = next else { return }
        var steps = request.commands.map { GAPLane.Step(command: $0, toleratesFailure: $0.isGAPCleanup) }
        if request.enable, enabled {
            let extended = info.usesExtendedAdvertising
            let disable: HCICommand = kind == .scanning
                ? (extended ? Self.extendedScanDisable : .leSetScanEnable(enable: false, filterDuplicates: false))
                : (extended ? Self.extendedAdvertisingDisable : .leSetAdvertisingEnable(false))
            steps.insert(GAPLane.Step(command: disable, toleratesFailure: true), at: 0)
        }
        runGAPSteps(kind, request, steps[...], generation: generation)
    }

    private func runGAPSteps(_ kind: GAPLaneKind, _ request: GAPLane.Request, _ steps: ArraySlice<GAPLane.Step>,
                             generation: UInt64) {
        guard let step = steps.first else {
            return finishGAP(kind, request, .success(()))
        }
        if request.enable, gapLane(kind).generation != generation {
            return finishGAP(kind, request, .failure(HostError(.cancelled, "a later \(kind) request came before this start finished")))
        }
        let enableValue = step.command.gapEnableValue
        if enableValue != nil, !step.toleratesFailure { request.beforeEnable() }
        command(step.command) { [self] result in
            switch result {
            case .success:
                if let enableValue { withGAPLane(kind) { $0.controllerEnabled = enableValue } }
                runGAPSteps(kind, request, steps.dropFirst(), generation: generation)
            case .failure where step.toleratesFailure:
                withGAPLane(kind) { $0.controllerEnabled = false }
                runGAPSteps(kind, request, steps.dropFirst(), generation: generation)
            case .failure(let error):
                finishGAP(kind, request, .failure(error))
            }
        }
    }

    private func finishGAP(_ kind: GAPLaneKind, _ request: GAPLane.Request, _ result: Result<Void, HostError>) {
        withGAPLane(kind) { $0.busy = false }
        if kind == .advertising, request.enable, case .success = result, gapLane(kind).waiting == nil {
            isAdvertising = true
        }
        request.completion(result)
        runNextGAP(kind)
    }

    // MARK: Connection parameters

    /// Asks for new connection parameters (LE Connection Update, §7.8.18); completes with the connection when
    /// LE Connection Update Complete comes, which is also reported as ``HostEvent/connectionUpdated(_:)``.
    public func updateConnectionParameters(connectionHandle handle: UInt16, _ parameters: LEConnectionParameters,
                                           completion: (@Sendable (Result<Connection, HostError>) -> Void)? = nil) {
        onLoop { [self] in
            guard connections[handle] != nil else {
                completion?(.failure(unknownConnection(handle)))
                return
            }
            command(.leConnectionUpdate(handle: handle, parameters: parameters)) { [self] result in
                switch result {
                case .success:
                    guard connections[handle] != nil else {
                        completion?(.failure(HostError(.disconnected, "connection \(Dissection.hex16(handle)) ended")))
                        return
                    }
                    connections[handle]?.pendingUpdates.append { completion?($0) }
                case .failure(let error):
                    completion?(.failure(error))
                }
            }
        }
    }

    func connectionUpdateComplete(status: HCIStatus, handle: UInt16, parameters: ConnectionParameters) {
        guard let record = connections[handle] else {
            stats.unknownHandleEvents += 1
            return
        }
        let waiting = record.pendingUpdates.popFirst()
        if status == .success { record.connection.parameters = parameters }
        connections[handle] = record
        if status == .success {
            emit(.connectionUpdated(record.connection))
            waiting?(.success(record.connection))
        } else {
            waiting?(.failure(HostError(.commandFailed, "connection update failed: \(status)", status: status)))
        }
    }

    /// LE Remote Connection Parameter Request (§7.7.65.6): accepted with the requested values, or rejected with
    /// Unacceptable Connection Parameters when the configuration says so.
    func answerParameterRequest(handle: UInt16, _ parameters: LEConnectionParameters) {
        let reply: HCICommand = configuration.acceptsConnectionParameterRequests
            ? .leRemoteConnectionParameterRequestReply(handle: handle, parameters: parameters)
            : .leRemoteConnectionParameterRequestNegativeReply(handle: handle, reason: .unacceptableConnectionParameters)
        command(reply) { [self] result in
            if case .failure(let error) = result { emit(.controllerError(error)) }
        }
    }

    // MARK: Disconnecting, link queries

    /// The earliest deadline of a Disconnect whose Disconnection Complete has not come (nil when none: the common
    /// case costs one emptiness check per timer arming).
    var disconnectNextDeadline: StackInstant? {
        disconnectDeadlines.isEmpty ? nil : disconnectDeadlines.values.min()
    }

    /// Ends the connections whose Disconnection Complete did not come in time, as the controller would have
    /// reported a termination it gave up on (Connection Terminated by Local Host), and says the controller did not.
    func disconnectsTimedOut(now: StackInstant) {
        guard !disconnectDeadlines.isEmpty else { return }
        let expired = disconnectDeadlines.filter { $0.value <= now }.keys.sorted()
        for handle in expired {
            disconnectDeadlines[handle] = nil
            guard connections[handle] != nil else { continue }
            emit(.controllerError(HostError(
                .unresponsiveController,
                "the controller did not complete the disconnection of \(Dissection.hex16(handle)) "
                    + "(supervision timeout and \(pipe.timeout) passed)")))
            closeConnection(handle, reason: .connectionTerminatedByLocalHost)
        }
    }

    /// Disconnects (HCI Disconnect, §7.1.6) with `reason` (Remote User Terminated Connection by default); completes
    /// with the reason of Disconnection Complete.
    public func disconnect(connectionHandle handle: UInt16, reason: HCIStatus = .remoteUserTerminatedConnection,
                           completion: (@Sendable (Result<HCIStatus, HostError>) -> Void)? = nil) {
        onLoop { [self] in
            guard connections[handle] != nil else {
                completion?(.failure(unknownConnection(handle)))
                return
            }
            connections[handle]?.pendingDisconnects.append { completion?($0) }
            command(.disconnect(handle: handle, reason: reason)) { [self] result in
                guard let record = connections[handle] else { return }
                switch result {
                case .success:
                    // The link layer gives up a termination the peer does not acknowledge after the supervision
                    // timeout (Core 5.4 Vol 6 Part B §5.1.1); a controller that then still reports nothing is not
                    // waited for past that plus a command timeout (hostile-controller fuzz, seed 7044).
                    let deadline = eventLoop.now + record.connection.parameters.supervisionTimeoutDuration + pipe.timeout
                    if disconnectDeadlines[handle] == nil { disconnectDeadlines[handle] = deadline }
                    armTimer()
                case .failure(let error):
                    let waiting = record.pendingDisconnects
                    record.pendingDisconnects = []
                    connections[handle] = record
                    for callback in waiting { callback(.failure(error)) }
                }
            }
        }
    }

    /// The link's parameters, PHYs, data length and ATT_MTU as known now (``LinkInfo``); nil for no such link.
    public func linkInfo(connectionHandle handle: UInt16, completion: @escaping @Sendable (LinkInfo?) -> Void) {
        onLoop { [self] in
            guard let record = connections[handle] else { return completion(nil) }
            completion(LinkInfo(connection: record.connection, txPHY: record.phys.tx, rxPHY: record.phys.rx,
                                maxTxOctets: record.payloadOctets.tx, maxRxOctets: record.payloadOctets.rx,
                                attMTU: attMTU(connectionHandle: handle) ?? 23))
        }
    }

    /// Reads the RSSI of a connection (Read RSSI, §7.5.4). Controllers without it (Bumble's) fail with
    /// ``HostError/Code/unsupported``; later calls then fail at once.
    public func readRSSI(connectionHandle handle: UInt16, completion: @escaping @Sendable (Result<Int8, HostError>) -> Void) {
        onLoop { [self] in
            guard connections[handle] != nil else { return completion(.failure(unknownConnection(handle))) }
            command(.readRSSI(handle: handle)) { result in
                switch result {
                case .success(.readRSSI(_, _, let rssi)): completion(.success(rssi))
                case .success(let other): completion(.failure(HostError(.protocolError, "unexpected Read RSSI answer \(other)")))
                case .failure(let error): completion(.failure(error))
                }
            }
        }
    }

    /// Asks for a larger LE data length (LE Set Data Length, §7.8.33). Completes with true when the controller
    /// accepted (the change is reported by ``HostEvent/dataLengthChanged(handle:maxTxOctets:maxRxOctets:)``),
    /// false when it does not support it (Bumble answers Unknown Command): the link stays at 27 octets.
    public func requestDataLength(connectionHandle handle: UInt16, txOctets: UInt16 = 251, txTime: UInt16 = 2120,
                                  completion: @escaping @Sendable (Result<Bool, HostError>) -> Void) {
        onLoop { [self] in
            guard connections[handle] != nil else { return completion(.failure(unknownConnection(handle))) }
            command(.leSetDataLength(handle: handle, txOctets: txOctets, txTime: txTime)) { result in
                switch result {
                case .success: completion(.success(true))
                case .failure(let error) where error.code == .unsupported: completion(.success(false))
                case .failure(let error): completion(.failure(error))
                }
            }
        }
    }

    /// Asks for PHYs (LE Set PHY, §7.8.49; `allPHYs` 0 = use tx/rx masks, bit 0 LE 1M, bit 1 LE 2M, bit 2 Coded).
    /// A controller that ignores it (Bumble's) makes this fail as unresponsive after the command timeout; the
    /// stack goes on.
    public func setPHY(connectionHandle handle: UInt16, txPHYs: UInt8 = 0x02, rxPHYs: UInt8 = 0x02,
                       completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        onLoop { [self] in
            guard connections[handle] != nil else { return completion(.failure(unknownConnection(handle))) }
            command(.leSetPHY(handle: handle, allPHYs: 0, txPHYs: txPHYs, rxPHYs: rxPHYs, phyOptions: 0)) { result in
                completion(result.map { _ in () })
            }
        }
    }

    // MARK: Helpers

    func unknownConnection(_ handle: UInt16) -> HostError {
        HostError(.unknownConnection, "no connection has handle \(Dissection.hex16(handle))")
    }

    /// Runs commands one after the other, stopping at the first failure.
    func runSequence(_ commands: [HCICommand], completion: @escaping (Result<Void, HostError>) -> Void) {
        guard let first = commands.first else { return completion(.success(())) }
        command(first) { [self] result in
            switch result {
            case .success: runSequence(Array(commands.dropFirst()), completion: completion)
            case .failure(let error): completion(.failure(error))
            }
        }
    }
}

/// Which GAP state a ``GAPLane`` orders.
enum GAPLaneKind: CustomStringConvertible {
    case scanning, advertising

    var description: String { self == .scanning ? "scan" : "advertising" }
}

/// The requests that change one GAP state (scanning or advertising, Core 5.4 Vol 3 Part C §9.2, §9.3 over
/// Vol 4 Part E §7.8.10 / §7.8.11, §7.8.5 / §7.8.9), run strictly one after the other so that the controller ends
/// in the state of the last request: one runs, at most one (the newest) waits. Confined to the host's event loop.
struct GAPLane {
    struct Request {
        let enable: Bool
        let commands: [HCICommand]
        /// Called just before the enable command (on or off) goes out.
        let beforeEnable: () -> Void
        let completion: (Result<Void, HostError>) -> Void
    }

    struct Step {
        let command: HCICommand
        let toleratesFailure: Bool
    }

    var busy = false
    /// Bumped by every request: a running start that sees it change stops.
    var generation: UInt64 = 0
    var waiting: Request?
    /// The enable state the controller last accepted.
    var controllerEnabled = false

    /// Requests running or waiting (leak checks).
    var pendingCount: Int { (busy ? 1 : 0) + (waiting == nil ? 0 : 1) }
}

extension HCICommand {
    /// The value of an LE Set (Extended) Scan Enable / LE Set (Extended) Advertising Enable, nil for other commands.
    var gapEnableValue: Bool? {
        switch self {
        case .leSetScanEnable(let enable, _): enable
        case .leSetAdvertisingEnable(let enable): enable
        case .extended(.leSetExtendedScanEnable(let enable, _, _, _)): enable
        case .extended(.leSetExtendedAdvertisingEnable(let enable, _)): enable
        default: nil
        }
    }

    /// A step whose failure does not matter (LE Remove Advertising Set of a set that may not exist).
    var isGAPCleanup: Bool {
        if case .extended(.leRemoveAdvertisingSet) = self { return true }
        return false
    }
}
