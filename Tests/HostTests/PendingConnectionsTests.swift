import BluetoothCore
import BluetoothRuntime
import HCI
import Host
import Testing
import BluetoothEngine

/// Any number of connects pending at once (issue 32 item 1), on a scripted controller: one pending names its peer
/// (initiator filter policy 0); two or more go through the Filter Accept List with filter policy 1 (Core 5.4 Vol 4
/// Part E §7.8.12, §7.8.14–§7.8.17), the list rewritten only between initiations (after LE Create Connection
/// Cancel, §7.8.13); each connect ends on its own.
@Suite("Pending connections")
struct PendingConnectionsTests {
    static let lock = BluetoothAddress(0xC1_0000_0000_0A, type: .random)
    static let heartRate = BluetoothAddress(0xC1_0000_0000_0B, type: .random)
    static let thermometer = BluetoothAddress(0x00_1B_DC_00_00_0C, type: .public)

    /// The LE Create Connection commands sent, as (filter policy, peer).
    static func initiations(_ rig: Rig) -> [(policy: UInt8, peer: BluetoothAddress)] {
        rig.controller.sentCommands.compactMap {
            guard case .leCreateConnection(let parameters) = $0 else { return nil }
            return (parameters.initiatorFilterPolicy, parameters.peerAddress)
        }
    }

    /// The Filter Accept List as the commands sent leave it.
    static func acceptList(_ rig: Rig) -> Set<BluetoothAddress> {
        var list: Set<BluetoothAddress> = []
        for command in rig.controller.sentCommands {
            switch command {
            case .leClearFilterAcceptList: list = []
            case .leAddDeviceToFilterAcceptList(let type, let address):
                list.insert(BluetoothAddress(address.value, type: type == .public ? .public : .random))
            case .leRemoveDeviceFromFilterAcceptList(_, let address): list = list.filter { $0.value != address.value }
            default: break
            }
        }
        return list
    }

    static func connected(_ handle: UInt16, _ peer: BluetoothAddress) -> HCIEvent {
        .leMeta(.connectionComplete(LEConnectionComplete(
            handle: handle, role: .central, peerAddressType: LEAddressType(peer.type), peerAddress: peer,
            connectionInterval: 0x0018, supervisionTimeout: 0x01F4)))
    }

    /// The controller's answer to a cancelled initiation (§7.8.13).
    static let cancelled = HCIEvent.leMeta(.connectionComplete(LEConnectionComplete(
        status: .unknownConnectionIdentifier, handle: 0, role: .central, peerAddressType: .public, peerAddress: .zero,
        connectionInterval: 0, supervisionTimeout: 0)))

    typealias Connects = Recorder<Result<Connection, HostError>>

    /// A connect to the lock, then one to the heart rate sensor (`options` for the lock's), run until the
    /// controller initiates to both (the first initiation's cancelled Connection Complete delivered and swallowed).
    static func lockAndHeartRate(_ rig: Rig, lockOptions: ConnectOptions = ConnectOptions()) -> (lock: Connects, heartRate: Connects) {
        let lock = Connects(), heartRate = Connects()
        rig.host.connect(to: Self.lock, options: lockOptions) { lock.append($0) }
        rig.host.connect(to: Self.heartRate) { heartRate.append($0) }
        rig.loop.run()
        rig.controller.deliver(Self.cancelled)
        rig.loop.run()
        return (lock, heartRate)
    }

    @Test("a second connect moves the initiation to the Filter Accept List; each peer connects when heard, the absent one stays pending")
    func connectsGoThroughTheAcceptList() throws {
        let rig = Rig()
        let lock = Recorder<Result<Connection, HostError>>()
        let heartRate = Recorder<Result<Connection, HostError>>()
        let thermometer = Recorder<Result<Connection, HostError>>()
        rig.host.connect(to: Self.lock) { lock.append($0) }
        rig.loop.run()
        #expect(Self.initiations(rig).map(\.policy) == [0])
        #expect(Self.initiations(rig).map(\.peer) == [Self.lock])

        rig.host.connect(to: Self.heartRate) { heartRate.append($0) }
        rig.loop.run()
        // The list's size is read and the list cleared, the directed initiation cancelled, both peers written to
        // the list, and the controller initiates from it.
        #expect(rig.controller.sentCommands.map(\.opcode) == [
            .leCreateConnection, .leReadFilterAcceptListSize, .leClearFilterAcceptList, .leCreateConnectionCancel,
            .leAddDeviceToFilterAcceptList, .leAddDeviceToFilterAcceptList, .leCreateConnection,
        ])
        #expect(lock.count == 0 && heartRate.count == 0)
        rig.controller.deliver(Self.cancelled)  // the cancelled initiation's Connection Complete, swallowed
        rig.loop.run()
        #expect(Self.acceptList(rig) == [Self.lock, Self.heartRate])
        #expect(Self.initiations(rig).last?.policy == 1)
        #expect(rig.events.count == 0)

        // The heart rate sensor is heard first: its connect completes; the lock's goes on, to it alone.
        rig.controller.deliver(Self.connected(0x0040, Self.heartRate))
        rig.loop.run()
        #expect((try? heartRate.last?.get())?.handle == 0x0040)
        #expect(lock.count == 0)
        #expect(Self.initiations(rig).last.map { $0.policy == 0 && $0.peer == Self.lock } == true)

        // A third connect: the list is rewritten (the heart rate sensor out, the thermometer in).
        rig.host.connect(to: Self.thermometer) { thermometer.append($0) }
        rig.loop.run()
        rig.controller.deliver(Self.cancelled)
        rig.loop.run()
        #expect(Self.acceptList(rig) == [Self.lock, Self.thermometer])
        #expect(Self.initiations(rig).last?.policy == 1)
        rig.controller.deliver(Self.connected(0x0041, Self.thermometer))
        rig.loop.run()
        #expect((try? thermometer.last?.get())?.handle == 0x0041)

        // The lock never appears and its connect never times out; cancelled, it ends and nothing is left.
        rig.loop.advance(by: .seconds(600))
        #expect(lock.count == 0)
        let cancel = Recorder<Result<Void, HostError>>()
        rig.host.cancelConnect(to: Self.lock) { cancel.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentCommands.last?.opcode == .leCreateConnectionCancel)
        if case .failure(let error)? = lock.last { #expect(error.code == .cancelled) } else { Issue.record("\(lock.values)") }
        #expect((try? cancel.last?.get()) != nil)
        rig.controller.deliver(Self.cancelled)
        rig.expectNothingLeft()
        #expect(rig.host.openConnections.map(\.handle) == [0x0040, 0x0041])
    }

    @Test("cancelling one of two pending connects restarts the initiation for the other")
    func cancelOneOfTwo() {
        let rig = Rig()
        let (lock, heartRate) = Self.lockAndHeartRate(rig)
        #expect(Self.initiations(rig).last?.policy == 1)

        let cancel = Recorder<Result<Void, HostError>>()
        rig.host.cancelConnect(to: Self.lock) { cancel.append($0) }
        rig.loop.run()
        // The cancel of the initiation was confirmed: the lock's connect ends, the heart rate's goes on, directed.
        if case .failure(let error)? = lock.last { #expect(error.code == .cancelled) } else { Issue.record("\(lock.values)") }
        #expect((try? cancel.last?.get()) != nil)
        #expect(heartRate.count == 0)
        rig.controller.deliver(Self.cancelled)
        rig.loop.run()
        #expect(Self.initiations(rig).last.map { $0.policy == 0 && $0.peer == Self.heartRate } == true)
        rig.controller.deliver(Self.connected(0x0040, Self.heartRate))
        rig.loop.run()
        #expect((try? heartRate.last?.get()) != nil)
        rig.expectNothingLeft()
    }

    @Test("a connect cancelled while the controller connects it succeeds; the cancel fails")
    func cancelLosesTheRace() throws {
        var model = ControllerModel()
        model.refused[.leCreateConnectionCancel] = .commandDisallowed
        let rig = Rig(model: model)
        let lock = Recorder<Result<Connection, HostError>>()
        let heartRate = Recorder<Result<Connection, HostError>>()
        rig.host.connect(to: Self.lock) { lock.append($0) }
        rig.loop.run()
        // The cancel is refused (the connection is being made), so the first initiation still runs, directed.
        rig.host.connect(to: Self.heartRate) { heartRate.append($0) }
        rig.loop.run()
        let cancel = Recorder<Result<Void, HostError>>()
        rig.host.cancelConnect(to: Self.lock) { cancel.append($0) }
        rig.loop.run()
        #expect(lock.count == 0)
        rig.controller.deliver(Self.connected(0x0040, Self.lock))
        rig.loop.run()
        #expect((try? lock.last?.get())?.handle == 0x0040)
        if case .failure? = cancel.last {} else { Issue.record("the cancel should fail: \(cancel.values)") }
        // The heart rate sensor's connect goes on, alone now: directed.
        #expect(Self.initiations(rig).last.map { $0.policy == 0 && $0.peer == Self.heartRate } == true)
        #expect(heartRate.count == 0)
    }

    @Test("each pending connect keeps its own time limit")
    func timeLimitsApart() {
        let rig = Rig()
        let (lock, heartRate) = Self.lockAndHeartRate(rig, lockOptions: ConnectOptions(timeout: .seconds(5)))
        rig.loop.advance(by: .seconds(5))
        if case .failure(let error)? = lock.last { #expect(error.code == .timedOut) } else { Issue.record("\(lock.values)") }
        rig.controller.deliver(Self.cancelled)
        rig.loop.run()
        #expect(heartRate.count == 0)
        #expect(Self.initiations(rig).last.map { $0.policy == 0 && $0.peer == Self.heartRate } == true)
        rig.loop.advance(by: .seconds(600))
        #expect(heartRate.count == 0)
    }

    @Test("a controller that refuses the Filter Accept List gets the connects one at a time, oldest first")
    func refusedAcceptListFallsBackToOneAtATime() {
        var model = ControllerModel()
        model.refused[.leAddDeviceToFilterAcceptList] = .memoryCapacityExceeded
        let rig = Rig(model: model)
        let (lock, heartRate) = Self.lockAndHeartRate(rig)
        #expect(!Self.initiations(rig).contains { $0.policy == 1 })
        #expect(Self.initiations(rig).last.map { $0.policy == 0 && $0.peer == Self.lock } == true)
        rig.controller.deliver(Self.connected(0x0040, Self.lock))
        rig.loop.run()
        #expect((try? lock.last?.get()) != nil)
        #expect(Self.initiations(rig).last.map { $0.policy == 0 && $0.peer == Self.heartRate } == true)
        #expect(heartRate.count == 0)
    }

    @Test("a list refused for now (Command Disallowed) is written again a moment later, a few times, then given up")
    func passingRefusalsAreTriedAgainThenGivenUp() {
        var model = ControllerModel()
        model.refused[.leAddDeviceToFilterAcceptList] = .commandDisallowed
        let rig = Rig(model: model)
        let (lock, heartRate) = Self.lockAndHeartRate(rig)
        let adds = { rig.controller.sentCommands.filter { $0.opcode == .leAddDeviceToFilterAcceptList }.count }
        #expect(adds() == 1)
        rig.loop.advance(by: HostStack.connectRetryDelay)
        #expect(adds() == 2)
        for _ in 0..<10 { rig.loop.advance(by: HostStack.connectRetryDelay) }
        #expect(adds() == HostStack.acceptListAttempts)
        // Given up: one at a time, oldest first.
        #expect(Self.initiations(rig).last.map { $0.policy == 0 && $0.peer == Self.lock } == true)
        #expect(lock.count == 0 && heartRate.count == 0)
    }

    @Test("a controller failure of a Filter Accept List initiation fails every connect it covered")
    func controllerFailureFailsTheCoveredConnects() {
        let rig = Rig()
        let (lock, heartRate) = Self.lockAndHeartRate(rig)
        rig.controller.deliver(.leMeta(.connectionComplete(LEConnectionComplete(
            status: .rejectedLimitedResources, handle: 0, role: .central, peerAddressType: .public, peerAddress: .zero,
            connectionInterval: 0, supervisionTimeout: 0))))
        rig.loop.run()
        for recorder in [lock, heartRate] {
            if case .failure(let error)? = recorder.last { #expect(error.status == .rejectedLimitedResources) } else {
                Issue.record("\(recorder.values)")
            }
        }
        rig.expectNothingLeft()
    }
}
