import ATT
import BluetoothCore
import BluetoothRuntime
import GATT
import HCI
@testable import Host
import L2CAP
import TestSupport
import Testing
import BluetoothEngine

/// A host wired with L2CAP / ATT / GATT (no raw L2CAP handler) over a scripted controller: exact bytes.
private struct WiredRig {
    let loop = ManualEventLoop()
    let controller = ScriptedController()
    let host: HostStack
    let events = Recorder<HostEvent>()

    init(configuration: HostConfiguration = Rig.defaultConfiguration) {
        host = HostStack(transport: controller, eventLoop: loop, configuration: configuration)
        let events = self.events
        host.setEventHandler { events.append($0) }
        controller.setResponder { ControllerModel().answer($0) }
        host.start { _ in }
        loop.run()
        var database = GATTDatabase()
        _ = try? database.addGAPService(deviceName: "OCB")
        host.setGATTDatabase(database)
        loop.run()
        controller.clearSent()
    }

    func connect(handle: UInt16, role: LERole) {
        controller.deliver(.leMeta(.connectionComplete(LEConnectionComplete(
            handle: handle, role: role, peerAddressType: .random, peerAddress: BluetoothAddress(0xC1_2233_4455_66, type: .random),
            connectionInterval: 0x0018, supervisionTimeout: 0x01F4))))
        loop.run()
    }

    /// Delivers one L2CAP frame (basic header included) as a single ACL packet.
    func deliverL2CAP(_ handle: UInt16, _ bytes: [UInt8]) throws {
        controller.deliver(try HCIACLDataPacket(handle: handle, packetBoundary: .firstFlushable, data: bytes))
        loop.run()
    }

    /// The L2CAP frames sent (whole, single-fragment), as hex, and forgets them.
    func takeSentL2CAP() -> [String] {
        let sent = controller.sentACL.map { Hex.encode($0.data) }
        controller.clearSent()
        return sent
    }

    /// Number Of Completed Packets for everything sent so far on `handle`.
    func completeAll(_ handle: UInt16, count: UInt16) {
        controller.deliver(.numberOfCompletedPackets([HCICompletedPackets(handle: handle, count: count)]))
        loop.run()
    }
}

@Suite("Wiring: exact bytes over a scripted controller")
struct WiringBytesTests {
    @Test("central: Exchange MTU Request (517) right after connecting; the response sets ATT_MTU and is reported")
    func automaticExchange() throws {
        let rig = WiredRig()
        rig.connect(handle: 0x0040, role: .central)
        #expect(rig.takeSentL2CAP() == ["03000400020502"])
        try rig.deliverL2CAP(0x0040, hex("03 00 04 00 03 F7 00"))
        #expect(rig.host.attMTU(connectionHandle: 0x0040) == 247)
        #expect(rig.events.values.contains { if case .attMTUChanged(0x0040, 247) = $0 { true } else { false } })
        rig.completeAll(0x0040, count: 1)
        #expect(rig.host.resources.isQuiescent, "\(rig.host.resources)")
        #expect(rig.loop.pendingWorkDescription == "nothing")
    }

    @Test("peripheral: no automatic exchange; reads, short PDU, unknown request and command, peer's Exchange MTU")
    func serverAnswers() throws {
        let rig = WiredRig()
        rig.connect(handle: 0x0041, role: .peripheral)
        #expect(rig.takeSentL2CAP() == [])
        try rig.deliverL2CAP(0x0041, hex("03 00 04 00 0A 03 00"))   // Read Request, Device Name
        try rig.deliverL2CAP(0x0041, hex("02 00 04 00 0A 03"))      // truncated Read Request
        try rig.deliverL2CAP(0x0041, hex("01 00 04 00 1F"))         // unknown request
        try rig.deliverL2CAP(0x0041, hex("01 00 04 00 7F"))         // unknown command: silence
        try rig.deliverL2CAP(0x0041, hex("03 00 04 00 02 14 00"))   // Exchange MTU 20: ATT_MTU stays 23
        // The model controller has 3 LE buffers: the fourth answer waits for Number Of Completed Packets.
        var sent = rig.takeSentL2CAP()
        #expect(sent.count == 3)
        rig.completeAll(0x0041, count: 3)
        sent += rig.takeSentL2CAP()
        #expect(sent == [
            "040004000b4f4342",
            "05000400010a000004",
            "05000400011f000006",
            "03000400030502",
        ])
        #expect(rig.host.attMTU(connectionHandle: 0x0041) == 23)
        rig.completeAll(0x0041, count: 1)
        #expect(rig.host.resources.isQuiescent, "\(rig.host.resources)")
    }

    @Test("central: the peer's Connection Parameter Update Request becomes LE Connection Update, then the response")
    func parameterUpdateRequestAnswered() throws {
        let rig = WiredRig(configuration: {
            var configuration = Rig.defaultConfiguration
            configuration.exchangesMTUOnConnect = false
            return configuration
        }())
        rig.connect(handle: 0x0042, role: .central)
        rig.controller.clearSent()
        // Signaling: code 0x12, identifier 7, length 8: interval 0x0010...0x0020, latency 1, timeout 0x0100.
        try rig.deliverL2CAP(0x0042, hex("0C 00 05 00 12 07 08 00 10 00 20 00 01 00 00 01"))
        let update = rig.controller.sentCommands.last
        #expect(update == .leConnectionUpdate(handle: 0x0042, parameters: LEConnectionParameters(
            intervalMin: 0x0010, intervalMax: 0x0020, maxLatency: 1, supervisionTimeout: 0x0100)))
        // Accepted (Command Status success came from the model): Connection Parameter Update Response, result 0.
        #expect(rig.takeSentL2CAP() == ["0600050013070200" + "0000"])
        // An invalid request (interval max below min) is rejected by L2CAP itself, no HCI command.
        try rig.deliverL2CAP(0x0042, hex("0C 00 05 00 12 08 08 00 20 00 10 00 01 00 00 01"))
        #expect(rig.controller.sentCommands.isEmpty)
        #expect(rig.takeSentL2CAP() == ["0600050013080200" + "0100"])
        rig.completeAll(0x0042, count: 2)
        #expect(rig.host.resources.isQuiescent, "\(rig.host.resources)")
    }

    @Test("what one read of the transport causes leaves in one write; a send outside a batch leaves at once")
    func oneWritePerBatch() throws {
        let rig = WiredRig()
        rig.connect(handle: 0x0041, role: .peripheral)
        rig.connect(handle: 0x0042, role: .peripheral)
        rig.controller.clearSent()
        // Two Read Requests (Device Name) on two links in one read: both responses in one write, in order.
        let request = hex("03 00 04 00 0A 03 00")
        rig.controller.deliver(batch: [
            try HCIACLDataPacket(handle: 0x0041, packetBoundary: .firstFlushable, data: request).frame,
            try HCIACLDataPacket(handle: 0x0042, packetBoundary: .firstFlushable, data: request).frame,
        ])
        rig.loop.run()
        let writes = rig.controller.writes
        #expect(writes.count == 1, "\(writes)")
        let handles = writes.first?.compactMap { try? HCIACLDataPacket(frame: $0).handle }
        #expect(handles == [0x0041, 0x0042])
        #expect(rig.takeSentL2CAP() == ["040004000b4f4342", "040004000b4f4342"])
        // A command from the application (not in a batch) is written by itself, at once.
        rig.host.send(.readRSSI(handle: 0x0041)) { _ in }
        rig.loop.run()
        #expect(rig.controller.writes.count == 1 && rig.controller.writes.first?.count == 1)
    }
}
