import BluetoothCore
import BluetoothRuntime
import HCI
import Testing
@testable import VirtualController

@Suite struct EncryptionTests {
    let key = (0..<16).map { UInt8($0) }

    private func start(_ world: World, centralKey: [UInt8]) -> (UInt16, UInt16)? {
        guard let handles = world.connect() else { return nil }
        world.hosts[1].send(.leEnableEncryption(handle: handles.0, randomNumber: 0x1122, encryptedDiversifier: 0x33, longTermKey: centralKey))
        world.advance(.milliseconds(300))
        return handles
    }

    @Test func matchingKeysEncryptTheLinkAndDataStillFlows() throws {
        let world = World()
        guard let (central, peripheral) = start(world, centralKey: key) else {
            Issue.record("no connection")
            return
        }
        let a = world.hosts[0], b = world.hosts[1]
        #expect(a.events.contains(.leMeta(.longTermKeyRequest(handle: peripheral, randomNumber: 0x1122, encryptedDiversifier: 0x33))))
        let trace = LockedValue<[[UInt8]]>([])
        world.air.observer = { packet in
            if case .data = packet.kind { trace.withLock { $0.append(packet.bytes) } }
        }
        a.send(.leLongTermKeyRequestReply(handle: peripheral, longTermKey: key))
        world.advance(.milliseconds(300))
        #expect(a.events.contains(.encryptionChange(status: .success, handle: peripheral, encryptionEnabled: 1)))
        #expect(b.events.contains(.encryptionChange(status: .success, handle: central, encryptionEnabled: 1)))
        let secret: [UInt8] = [0x05, 0x00, 0x04, 0x00] + Array("secret".utf8)
        b.sendACL(try HCIACLDataPacket(handle: central, packetBoundary: .firstNonFlushable, data: secret))
        world.advance(.milliseconds(200))
        #expect(a.acl.last?.data == secret)
        // On the air the payload is ciphertext with a 4-octet MIC.
        let dataPDUs = trace.withLock { $0 }.filter { $0.count > 2 && $0[0] & 0x03 == 0x02 }
        #expect(dataPDUs.contains { $0[1] == UInt8(secret.count + 4) && !$0.dropFirst(2).starts(with: secret) })
        // Key refresh.
        b.send(.leEnableEncryption(handle: central, randomNumber: 1, encryptedDiversifier: 2, longTermKey: key))
        world.advance(.milliseconds(300))
        a.send(.leLongTermKeyRequestReply(handle: peripheral, longTermKey: key))
        world.advance(.milliseconds(300))
        #expect(a.events.contains(.encryptionKeyRefreshComplete(status: .success, handle: peripheral)))
        #expect(b.events.contains(.encryptionKeyRefreshComplete(status: .success, handle: central)))
        b.sendACL(try HCIACLDataPacket(handle: central, packetBoundary: .firstNonFlushable, data: secret))
        world.advance(.milliseconds(200))
        #expect(a.acl.filter { $0.data == secret }.count == 2)
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing")
        #expect(settled.links == 0)
    }

    @Test func mismatchedKeysEndInMICFailure() {
        let world = World()
        guard let (_, peripheral) = start(world, centralKey: key) else {
            Issue.record("no connection")
            return
        }
        world.hosts[0].send(.leLongTermKeyRequestReply(handle: peripheral, longTermKey: key.reversed()))
        world.advance(.milliseconds(300))
        #expect(world.hosts[0].disconnections.map(\.reason) == [.connectionTerminatedMICFailure])
        #expect(world.hosts[1].disconnections.map(\.reason) == [.connectionTerminatedMICFailure])
        #expect(world.loop.pendingWorkDescription == "nothing")
    }

    @Test func negativeReplyGivesPinOrKeyMissing() {
        let world = World()
        guard let (central, peripheral) = start(world, centralKey: key) else {
            Issue.record("no connection")
            return
        }
        world.hosts[0].send(.leLongTermKeyRequestNegativeReply(handle: peripheral))
        world.advance(.milliseconds(300))
        #expect(world.hosts[1].events.contains(.encryptionChange(status: .pinOrKeyMissing, handle: central, encryptionEnabled: 0)))
        #expect(world.hosts[1].disconnections.isEmpty)
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing")
        #expect(settled.links == 0)
    }
}
