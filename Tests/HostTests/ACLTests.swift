import BluetoothCore
import BluetoothRuntime
import HCI
import Host
import TestSupport
import Testing
import BluetoothEngine

@Suite("Connections and ACL data")
struct ACLTests {
    /// An L2CAP PDU on the ATT channel with `count` payload octets.
    static func pdu(_ count: Int, fill: UInt8 = 0xAB) -> [UInt8] {
        [UInt8(count & 0xFF), UInt8(count >> 8), 0x04, 0x00] + [UInt8](repeating: fill, count: count)
    }

    @Test("Connection Complete then ACL in the same batch: the connection exists before the data is processed")
    func connectionBeforeACL() throws {
        let rig = Rig()
        let order = Recorder<String>()
        let onLoop = Recorder<Bool>()
        let loop = rig.loop
        rig.host.setEventHandler { event in
            onLoop.append(loop.inEventLoop)
            if case .connected(let connection) = event { order.append("connected \(connection.handle)") }
        }
        rig.host.setL2CAPHandler { connection, bytes in
            onLoop.append(loop.inEventLoop)
            order.append("pdu \(connection.handle) \(bytes.count)")
        }
        let peer = BluetoothAddress(0xC1_2233_4455_66, type: .random)
        rig.controller.deliver(.leMeta(.connectionComplete(LEConnectionComplete(
            handle: 0x0040, role: .peripheral, peerAddressType: .random, peerAddress: peer,
            connectionInterval: 0x0018, supervisionTimeout: 0x01F4))))
        rig.controller.deliver(try HCIACLDataPacket(handle: 0x0040, packetBoundary: .firstFlushable, data: hex("03 00 04 00 02 17 00")))
        rig.loop.run()
        #expect(order.values == ["connected 64", "pdu 64 7"])
        #expect(onLoop.values == [true, true])
        let connection = try #require(rig.host.openConnections.first)
        #expect(connection.role == .peripheral)
        #expect(connection.peer == peer)
        #expect(connection.parameters == ConnectionParameters(interval: 0x18, latency: 0, supervisionTimeout: 0x1F4))
        #expect(rig.host.statistics.droppedACLPackets == 0)
        rig.expectNothingLeft()
    }

    @Test("the enhanced connection complete creates the connection too")
    func enhancedConnectionComplete() {
        let rig = Rig()
        let peer = BluetoothAddress(0x0102_0304_0506)
        rig.controller.deliver(.leMeta(.enhancedConnectionComplete(LEEnhancedConnectionComplete(connection: LEConnectionComplete(
            handle: 0x0002, role: .central, peerAddressType: .public, peerAddress: peer,
            connectionInterval: 0x0028, peripheralLatency: 2, supervisionTimeout: 0x0100)))))
        rig.loop.run()
        #expect(rig.host.openConnections.map(\.handle) == [0x0002])
        #expect(rig.host.openConnections.first?.role == .central)
        #expect(rig.host.openConnections.first?.parameters.latency == 2)
        rig.expectNothingLeft()
    }

    @Test("ACL for an unknown or just-closed handle is dropped and counted")
    func unknownHandleDropped() throws {
        let rig = Rig()
        rig.controller.deliver(try HCIACLDataPacket(handle: 0x0099, packetBoundary: .firstFlushable, data: hex("01 00 04 00 0A")))
        rig.loop.run()
        #expect(rig.pdus.count == 0)
        #expect(rig.host.statistics.droppedACLPackets == 1)
        rig.connect(handle: 0x0001)
        rig.controller.deliver(.disconnectionComplete(status: .success, handle: 0x0001, reason: .remoteUserTerminatedConnection))
        rig.controller.deliver(try HCIACLDataPacket(handle: 0x0001, packetBoundary: .firstFlushable, data: hex("01 00 04 00 0A")))
        rig.loop.run()
        #expect(rig.pdus.count == 0)
        #expect(rig.host.statistics.droppedACLPackets == 2)
        #expect(rig.host.openConnections.isEmpty)
        rig.expectNothingLeft()
    }

    @Test("inbound fragments are reassembled into one L2CAP PDU")
    func reassembly() throws {
        let rig = Rig()
        rig.connect(handle: 0x0003)
        let whole = Self.pdu(50)
        rig.controller.deliver(try HCIACLDataPacket(handle: 0x0003, packetBoundary: .firstFlushable, data: Array(whole[0..<27])))
        rig.loop.run()
        #expect(rig.pdus.count == 0)
        #expect(rig.host.resources.reassemblyBufferedBytes == 27)
        rig.controller.deliver(try HCIACLDataPacket(handle: 0x0003, packetBoundary: .continuing, data: Array(whole[27...])))
        rig.loop.run()
        #expect(rig.pdus.values.map(\.1) == [whole])
        #expect(rig.pdus.values.first?.0.handle == 0x0003)
        rig.expectNothingLeft()
    }

    @Test("outbound PDUs are fragmented to the LE buffer size and wait for Number Of Completed Packets")
    func fragmentationAndFlowControl() throws {
        var model = ControllerModel()
        model.leBufferCount = 2
        let rig = Rig(model: model)
        rig.connect(handle: 0x0040)
        let sent = Recorder<Result<Void, HostError>>()
        let pdu = Self.pdu(60)  // 64 octets: 27 + 27 + 10
        rig.host.sendL2CAP(connectionHandle: 0x0040, pdu: pdu) { sent.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentBytes == [
            [0x02, 0x40, 0x00, 27, 0x00] + Array(pdu[0..<27]),
            [0x02, 0x40, 0x10, 27, 0x00] + Array(pdu[27..<54]),
        ])
        #expect(sent.count == 0)
        #expect(rig.host.freeACLBuffers == 0)
        #expect(rig.host.resources.queuedACLPackets == 1)
        rig.controller.deliver(.numberOfCompletedPackets([HCICompletedPackets(handle: 0x0040, count: 1)]))
        rig.loop.run()
        #expect(rig.controller.sentBytes.last == [0x02, 0x40, 0x10, 10, 0x00] + Array(pdu[54...]))
        #expect(sent.count == 1)
        #expect((try? sent.last?.get()) != nil)
        // Surplus completions are tolerated and never raise the credits above the controller's count.
        rig.controller.deliver(.numberOfCompletedPackets([HCICompletedPackets(handle: 0x0040, count: 5),
                                                          HCICompletedPackets(handle: 0x0123, count: 1)]))
        rig.loop.run()
        #expect(rig.host.freeACLBuffers == 2)
        #expect(rig.host.statistics.unexpectedCompletedPackets == 2)
        #expect(rig.host.statistics.sentACLPackets == 3)
        rig.expectNothingLeft()
    }

    @Test("connections share the controller buffers round-robin")
    func fairness() throws {
        var model = ControllerModel()
        model.leBufferCount = 1
        let rig = Rig(model: model)
        rig.connect(handle: 0x0001)
        rig.connect(handle: 0x0002)
        rig.host.sendL2CAP(connectionHandle: 0x0001, pdu: Self.pdu(40, fill: 1))
        rig.host.sendL2CAP(connectionHandle: 0x0001, pdu: Self.pdu(10, fill: 2))
        rig.host.sendL2CAP(connectionHandle: 0x0002, pdu: Self.pdu(10, fill: 3))
        rig.loop.run()
        // Handle 1 was served first and rejoined the rotation before handle 2 queued; from then on they alternate,
        // so handle 2's PDU goes before handle 1's second PDU.
        for handle: UInt16 in [0x0001, 0x0001, 0x0002] {
            rig.controller.deliver(.numberOfCompletedPackets([HCICompletedPackets(handle: handle, count: 1)]))
            rig.loop.run()
        }
        let order = rig.controller.sentACL.map { "\($0.handle)/\($0.data.last ?? 0)" }
        #expect(order == ["1/1", "1/1", "2/3", "1/2"])
        rig.controller.deliver(.numberOfCompletedPackets([HCICompletedPackets(handle: 0x0001, count: 1)]))
        rig.expectNothingLeft()
    }

    @Test("Disconnection Complete fails queued sends, frees reassembly and buffers, and reports the reason")
    func disconnectionFlushes() throws {
        var model = ControllerModel()
        model.leBufferCount = 1
        let rig = Rig(model: model)
        rig.connect(handle: 0x0007)
        let sent = Recorder<Result<Void, HostError>>()
        rig.host.sendL2CAP(connectionHandle: 0x0007, pdu: Self.pdu(60)) { sent.append($0) }
        rig.host.sendL2CAP(connectionHandle: 0x0007, pdu: Self.pdu(5)) { sent.append($0) }
        rig.controller.deliver(try HCIACLDataPacket(handle: 0x0007, packetBoundary: .firstFlushable, data: Array(Self.pdu(40)[0..<20])))
        rig.loop.run()
        #expect(rig.host.resources.reassemblyBufferedBytes == 20)
        #expect(rig.host.resources.inFlightACLPackets == 1)
        #expect(rig.host.resources.queuedACLPackets == 3)
        rig.controller.deliver(.disconnectionComplete(status: .success, handle: 0x0007, reason: .connectionTimeout))
        rig.loop.run()
        #expect(sent.count == 2)
        #expect(sent.values.allSatisfy {
            if case .failure(let error) = $0 { error.code == .disconnected && error.status == .connectionTimeout } else { false }
        })
        #expect(rig.host.resources.reassemblyBufferedBytes == 0)
        #expect(rig.host.freeACLBuffers == 1)
        #expect(rig.host.openConnections.isEmpty)
        guard case .disconnected(let handle, let reason) = rig.events.last else {
            Issue.record("expected a disconnected event, got \(rig.events.values)")
            return
        }
        #expect(handle == 0x0007 && reason == .connectionTimeout)
        // Sending on the closed handle fails at once.
        let late = Recorder<Result<Void, HostError>>()
        rig.host.sendL2CAP(connectionHandle: 0x0007, pdu: Self.pdu(1)) { late.append($0) }
        rig.loop.run()
        if case .failure(let error) = late.last { #expect(error.code == .unknownConnection) } else { Issue.record("expected failure") }
        rig.expectNothingLeft()
    }
}
