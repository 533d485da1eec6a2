import BluetoothCore
import BluetoothRuntime
import HCI
import HCITransport
import Testing
@testable import VirtualController
@testable import SharedAir

/// A transport driven by the test: `deliver` hands a command to the hub synchronously; what the hub sends is kept.
final class PolishManualTransport: HCITransport {
    private struct State {
        var onFrame: (@Sendable (H4Frame) -> Void)?
        var onClose: (@Sendable (HCITransportError?) -> Void)?
        var sent: [H4Frame] = []
        var closed = false
    }

    private let state = LockedValue(State())
    var name: String { "polish-manual" }

    func start(onFrame: @escaping @Sendable (H4Frame) -> Void,
               onClose: @escaping @Sendable (HCITransportError?) -> Void) throws(HCITransportError) {
        state.withLock { $0.onFrame = onFrame; $0.onClose = onClose }
    }

    func send(_ frame: H4Frame) throws(HCITransportError) {
        let accepted = state.withLock { state in
            guard !state.closed else { return false }
            state.sent.append(frame)
            return true
        }
        if !accepted { throw HCITransportError(.closed, "closed") }
    }

    func close() { state.withLock { $0.closed = true } }

    var closed: Bool { state.withLock { $0.closed } }

    var events: [HCIEvent] {
        state.withLock { $0.sent }.filter { $0.type == .event }.compactMap { try? HCIEvent(decoding: $0.packet) }
    }

    var acl: [HCIACLDataPacket] {
        state.withLock { $0.sent }.filter { $0.type == .aclData }.compactMap { try? HCIACLDataPacket(frame: $0) }
    }

    func deliver(_ command: HCICommand) {
        deliver(H4Frame(type: .command, packet: command.encode()))
    }

    func deliver(_ frame: H4Frame) {
        let handler = state.withLock { $0.onFrame }
        handler?(frame)
    }

    func closeFromPeer() {
        let handler = state.withLock { state in
            state.closed = true
            return state.onClose
        }
        handler?(HCITransportError(.closedByPeer, "peer closed"))
    }
}

/// A host leaving the hub takes its controller off the air (``VirtualAir/detach(_:)``).
@Suite struct PolishDetachTests {
    @Test func fiftyJoinsAndLeavesLeaveNoDeviceAndNoWork() {
        let loop = ManualEventLoop()
        let hub = AirHub(configuration: AirHubConfiguration(socketPath: nil, seed: 5, statisticsInterval: nil), eventLoop: loop)
        let events = LockedValue<[AirHubEvent]>([])
        hub.onEvent = { event in events.withLock { $0.append(event) } }
        #expect(throws: Never.self) { try hub.start() }
        // A device that stays: it connects to every newcomer, which then leaves while connected.
        let anchor = PolishManualTransport()
        hub.adopt(anchor, origin: "test:anchor")
        anchor.deliver(.reset)
        anchor.deliver(.setEventMask(0x3FFF_FFFF_FFFF_FFFF))
        loop.run()
        for round in 0..<50 {
            let guest = PolishManualTransport()
            hub.adopt(guest, origin: "test:guest\(round)")
            guest.deliver(.reset)
            guest.deliver(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 0x20, intervalMax: 0x20)))
            guest.deliver(.leSetAdvertisingEnable(true))
            anchor.deliver(.leCreateConnection(LECreateConnectionParameters(
                peer: AirHub.address(forDevice: round + 2),
                connection: LEConnectionParameters(intervalMin: 24, intervalMax: 24, supervisionTimeout: 50))))
            loop.advance(by: .milliseconds(100))
            guest.closeFromPeer()
            loop.advance(by: .seconds(1))  // the anchor's link times out (500 ms)
        }
        // What the anchor's controller sent its host (read by the hub on the loop; the host gets it from a writer).
        let seen = events.withLock { $0 }
        let completes = seen.filter { if case .connected(1, _, "central", _, _) = $0 { true } else { false } }
        #expect(completes.count == 50)
        let timeouts = seen.filter { if case .disconnected(1, _, .connectionTimeout) = $0 { true } else { false } }
        #expect(timeouts.count == 50)
        #expect(hub.devices.map(\.number) == [1])
        #expect(hub.air.deviceCount == 1, "only the anchor is on the air")
        #expect(hub.air.linkCount == 0)
        anchor.closeFromPeer()
        loop.run()
        #expect(hub.air.deviceCount == 0)
        #expect(hub.air.scheduledTaskCount == 0)
        #expect(hub.devices.isEmpty)
        #expect(loop.pendingWorkDescription == "nothing")
        let final = hub.stop()
        #expect(final.devicesJoined == 51)
        let left = events.withLock { $0 }.filter { if case .left = $0 { true } else { false } }
        #expect(left.count == 51)
        #expect(loop.pendingWorkDescription == "nothing")
    }

    @Test func detachOnTheWorldDropsTheControllerAndItsPeerTimesOut() {
        let world = World()
        guard world.connect(timeout: 100) != nil else {
            Issue.record("no connection")
            return
        }
        world.air.detach(world.hosts[0].controller)
        world.loop.run()
        #expect(world.air.deviceCount == 1)
        world.advance(.seconds(2))
        #expect(world.hosts[1].disconnections.map(\.reason) == [.connectionTimeout])
        #expect(world.hosts[0].disconnections.isEmpty)
        #expect(world.air.linkCount == 0)
        world.hosts[1].controller.powerOff()
        world.loop.run()
        #expect(world.loop.pendingWorkDescription == "nothing")
    }
}
