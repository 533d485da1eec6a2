import BluetoothCore
import BluetoothRuntime
import HCI
import Testing
@testable import VirtualController

/// Data the host queued before HCI_Disconnect goes out before LL_TERMINATE_IND (Core 5.4 Vol 6 Part B §5.1.6).
@Suite struct PolishTerminationTests {
    /// Index of the first frame matching `predicate` in what `host` received (nil when none).
    private func index(in host: ScriptedHost, where predicate: (H4Frame) -> Bool) -> Int? {
        host.allFrames.firstIndex(where: predicate)
    }

    private func isDisconnection(_ frame: H4Frame) -> Bool {
        frame.type == .event && frame.packet.first == 0x05
    }

    @Test func aclSentRightBeforeDisconnectReachesThePeerAndIsCompleted() throws {
        let world = World()
        guard let (central, peripheral) = world.connect(central: 1, peripheral: 0) else {
            Issue.record("no connection")
            return
        }
        let a = world.hosts[0], b = world.hosts[1]
        world.loop.run()
        a.drain()
        b.drain()
        // A full host buffer (8 × 251 octets: 80 LL PDUs of 27 octets) then HCI_Disconnect, between two events.
        let pdu = (0..<2008).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let fragments = try ACLFragmenter(maximumDataLength: 251).fragment(pdu, handle: central)
        #expect(fragments.count == 8)
        for fragment in fragments { b.sendACL(fragment) }
        b.send(.disconnect(handle: central, reason: .remoteUserTerminatedConnection))
        // Sent after the command: not part of what the controller promised to deliver.
        b.sendACL(try HCIACLDataPacket(handle: central, packetBoundary: .firstNonFlushable, data: [0xEE, 0xEE]))
        world.loop.run()
        #expect(b.status(.disconnect) == .success)
        let start = world.loop.now
        // 80 data PDUs + LL_TERMINATE_IND at 32 exchanges per event: 3 events (30 ms interval) without loss.
        for _ in 0..<10 where b.disconnections.isEmpty { world.advance(.milliseconds(30)) }
        #expect(world.loop.now - start <= .milliseconds(120))
        let received = a.acl.filter { $0.handle == peripheral }
        #expect(received.flatMap(\.data).count == pdu.count)
        #expect(received.flatMap(\.data) == pdu, "the peer's host lost data queued before HCI_Disconnect")
        #expect(a.disconnections.map(\.reason) == [.remoteUserTerminatedConnection])
        #expect(b.disconnections.map(\.reason) == [.connectionTerminatedByLocalHost])
        // The peer's host sees all the data before Disconnection Complete.
        let lastData = a.allFrames.lastIndex { $0.type == .aclData }
        let peerDisconnection = index(in: a, where: isDisconnection)
        if let lastData, let peerDisconnection { #expect(lastData < peerDisconnection) }
        // Our host gets Number Of Completed Packets for the 8 packets, before Disconnection Complete.
        #expect(b.completedPackets == 8)
        let lastCompleted = b.allFrames.lastIndex { $0.type == .event && $0.packet.first == 0x13 }
        let ownDisconnection = index(in: b, where: isDisconnection)
        if let lastCompleted, let ownDisconnection { #expect(lastCompleted < ownDisconnection) }
        #expect(lastCompleted != nil && ownDisconnection != nil)
        #expect(world.air.linkCount == 0)
        #expect(b.controller.connectionCount == 0 && b.controller.bufferedHostPackets == 0)
        #expect(world.loop.pendingWorkDescription == "nothing")
    }

    @Test func terminationGivesUpAfterTheSupervisionTimeoutWhenThePeerNeverAcknowledges() throws {
        let world = World()
        guard let (central, _) = world.connect(central: 1, peripheral: 0, timeout: 100) else {  // 1 s
            Issue.record("no connection")
            return
        }
        let a = world.hosts[0], b = world.hosts[1]
        world.loop.run()
        a.drain()
        b.drain()
        // Data, then Disconnect, while the peer is out of range: T_Terminate (the supervision timeout) ends it.
        b.sendACL(try HCIACLDataPacket(handle: central, packetBoundary: .firstNonFlushable, data: [1, 2, 3]))
        b.send(.disconnect(handle: central, reason: .remoteUserTerminatedConnection))
        world.loop.run()
        b.controller.position = AirPosition(x: 10_000, y: 0, z: 0)
        world.advance(.milliseconds(900))
        #expect(b.disconnections.isEmpty)
        world.advance(.milliseconds(200))
        #expect(b.disconnections.map(\.reason) == [.connectionTerminatedByLocalHost])
        #expect(a.disconnections.map(\.reason) == [.connectionTimeout])
        #expect(b.completedPackets == 0)
        #expect(world.air.linkCount == 0)
        #expect(world.loop.pendingWorkDescription == "nothing")
    }
}
