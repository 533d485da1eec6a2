import BluetoothCore
import BluetoothRuntime
import HCI
import Host
import TestSupport
import Testing
import BluetoothEngine

/// What the hostile-controller fuzz (Fuzz/hostile-controller.sh) found, on virtual time: regression tests of the
/// fixes.
@Suite("Hostile controller findings")
struct HostileControllerFindingsTests {
    /// Fuzz seed 7044 (`--commands explore --set gatt_lies=1.0`, with the controller never completing a Disconnect):
    /// explore's GATT discovery got a service ending before it starts, the host dropped the link (HCI Disconnect
    /// `01 06 04 03 D1 02 13`, Command Status `04 0F 04 00 01 06 04`), no Disconnection Complete came, and
    /// `blue explore` waited for it forever. The LL gives up a termination after the supervision timeout (Core 5.4
    /// Vol 6 Part B §5.1.1), so the host can bound the wait: supervision timeout plus the command timeout.
    @Test("a Disconnect whose Disconnection Complete never comes completes after a bound")
    func disconnectionCompleteNeverComes() {
        let rig = Rig()
        guard rig.connect(handle: 0x02D1) != nil else {
            Issue.record("no connection")
            return
        }
        let disconnected = Recorder<Result<HCIStatus, HostError>>()
        rig.host.disconnect(connectionHandle: 0x02D1) { disconnected.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentCommands.last == .disconnect(handle: 0x02D1, reason: .remoteUserTerminatedConnection))
        // The connection's supervision timeout is 5 s (0x01F4); wait far longer.
        rig.loop.advance(by: .seconds(60))
        #expect(disconnected.count == 1)
        #expect(rig.host.openConnections.isEmpty)
        if case .success(let reason)? = disconnected.values.first {
            #expect(reason == .connectionTerminatedByLocalHost)
        } else {
            Issue.record("the disconnect did not complete with a reason: \(disconnected.values)")
        }
    }

    /// Fuzz seed 200230 (`--commands explore`): the controller stopped answering after LE Create Connection's Command
    /// Status; at the connect's own time limit the host sent LE Create Connection Cancel (`01 0E 20 00`), which timed
    /// out as an unresponsive controller (or failed by a credit starvation), and the connect then waited for a
    /// Connection Complete forever (`cancelPendingConnect` keeps the connect pending on any failure of the Cancel,
    /// meant for Command Disallowed): `blue explore` never ended.
    @Test("a connect whose cancel times out completes after a bound")
    func connectCancelUnanswered() {
        let (rig, connected) = Self.connectWithUnansweredCancel(to: 0xC1_0000_0000_01)
        rig.loop.advance(by: .seconds(60))
        #expect(rig.controller.sentCommands.map(\.opcode) == [.leCreateConnection, .leCreateConnectionCancel])
        #expect(connected.count == 1)
        if case .failure(let error)? = connected.values.first {
            #expect(error.code == .timedOut, "\(error)")
        } else {
            Issue.record("the connect did not fail: \(connected.values)")
        }
    }
}

extension HostileControllerFindingsTests {
    /// A connect with a 1 s limit to `peer` on a controller that never answers LE Create Connection Cancel, run
    /// until the connect is pending.
    static func connectWithUnansweredCancel(to peer: UInt64) -> (Rig, Recorder<Result<Connection, HostError>>) {
        var model = ControllerModel()
        model.ignored = [.leCreateConnectionCancel]
        let rig = Rig(model: model)
        let connected = Recorder<Result<Connection, HostError>>()
        var options = ConnectOptions()
        options.timeout = .seconds(1)
        rig.host.connect(to: BluetoothAddress(peer, type: .random), options: options) { connected.append($0) }
        rig.loop.run()
        return (rig, connected)
    }

    /// A controller that refuses the cancel (Command Disallowed: "the connection is being made") and then never
    /// reports the connection: the connect ends a command timeout later, as an unresponsive controller.
    @Test("a connect whose cancel is refused and never completed ends after a command timeout")
    func connectCancelRefusedThenNothing() {
        let (rig, connected) = Self.connectWithUnansweredCancel(to: 0xC1_0000_0000_02)
        rig.loop.advance(by: .seconds(1))
        // The cancel is in flight: answer it with Command Disallowed.
        #expect(rig.controller.sentCommands.map(\.opcode) == [.leCreateConnection, .leCreateConnectionCancel])
        rig.controller.deliver(.commandComplete(numHCICommandPackets: 1, opcode: .leCreateConnectionCancel,
                                                returnParameters: .status(.commandDisallowed)))
        rig.loop.run()
        #expect(connected.count == 0, "the Connection Complete may still come")
        rig.loop.advance(by: .seconds(30))
        #expect(connected.count == 1)
        if case .failure(let error)? = connected.values.first {
            #expect(error.code == .unresponsiveController, "\(error)")
        } else {
            Issue.record("the connect did not fail: \(connected.values)")
        }
    }
}
