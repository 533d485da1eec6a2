import BluetoothCore
import BluetoothRuntime
import Foundation
import HCI
import HCITransport
import Testing
@testable import VirtualController
@testable import SharedAir

/// The hub's faults on demand (issue 13 item 6): the command lines (every malformed one refused with one line),
/// and each fault's effect on a hub's devices and links, through the control socket as `blue fault` uses it.
@Suite struct AirHubFaultTests {
    @Test(arguments: [
        ("loss 10", AirHubFault.loss(percent: 10)), ("LOSS 12.5%", .loss(percent: 12.5)), ("loss 0", .loss(percent: 0)),
        ("drop dev2", .drop(device: 2)), ("drop all", .drop(device: nil)), ("  drop 3 \n", .drop(device: 3)),
        ("power dev1 off", .power(device: 1, on: false)), ("power 1 on", .power(device: 1, on: true)),
        ("range dev4 out", .range(device: 4, out: true)), ("range dev4 in", .range(device: 4, out: false)),
        ("move dev2 10 -5", .move(device: 2, AirPosition(x: 10, y: -5))), ("move 2 1 2 3", .move(device: 2, AirPosition(x: 1, y: 2, z: 3))),
        ("devices", .listDevices),
    ])
    func commandLinesParse(line: String, fault: AirHubFault) throws {
        #expect(try AirHubFault(parsing: line) == fault)
        #expect(try AirHubFault(parsing: fault.line) == fault)
    }

    @Test(arguments: [
        "", "   ", "explode", "loss", "loss 101", "loss -1", "loss nan", "loss inf", "loss 10 20", "loss ten",
        "drop", "drop dev0", "drop devx", "drop dev-1", "drop 9999999", "drop 1 2", "power dev1", "power dev1 maybe",
        "range dev1 sideways", "move dev1 1", "move dev1 a b", "move dev1 1e9 0", "devices now",
        String(repeating: "x", count: 5000), "drop \u{0}",
    ])
    func malformedLinesAreRefusedWithOneLine(line: String) {
        #expect(throws: AirHubError.self) { try AirHubFault(parsing: line) }
        do {
            _ = try AirHubFault(parsing: line)
        } catch {
            #expect(error.code == .invalidCommand)
            #expect(!error.reason.contains("\n") && error.reason.count < 300, "\(error.reason)")
        }
    }

    /// Two devices join a real hub (DispatchEventLoop, UNIX socket) through in-process controllers' H4; one
    /// advertises, the other connects; then each fault through the control socket, checked on the air.
    @Test(.timeLimit(.minutes(1)))
    func faultsThroughTheControlSocketChangeTheAir() async throws {
        let socket = FileManager.default.temporaryDirectory.appendingPathComponent("ocb-fault-\(UUID().uuidString.prefix(6)).sock").path
        let events = LockedValue<[AirHubEvent]>([])
        let hub = AirHub(configuration: AirHubConfiguration(socketPath: socket, statisticsInterval: nil),
                         eventLoop: DispatchEventLoop(label: "fault-test"))
        hub.onEvent = { event in events.withLock { $0.append(event) } }
        try hub.start()
        defer { hub.stop() }
        // Nobody on the air yet: a device is refused, the loss rate is not.
        #expect(try AirHub.control("power dev1 off", socketPath: socket).hasPrefix("error: no dev1 on the air"))
        #expect(try AirHub.control("loss 25", socketPath: socket) == "ok: loss 25% of packets heard")
        #expect(hub.air.configuration.packetLoss == 0.25)
        #expect(try AirHub.control("loss 0", socketPath: socket) == "ok: loss 0% of packets heard")
        #expect(try AirHub.control("what", socketPath: socket).hasPrefix("error: unknown command \"what\""))

        let hosts = try (0..<2).map { _ in try HubHost(socket: socket) }
        defer { for host in hosts { host.close() } }
        // One after the other: host n is devn.
        for host in hosts {
            host.send(.reset)
            host.send(.setEventMask(0x3FFF_FFFF_FFFF_FFFF))  // LE Meta too
            try await waitUntil { hub.devices.count == (host === hosts[0] ? 1 : 2) }
        }
        hosts[0].send(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 32, intervalMax: 32)))
        hosts[0].send(.leSetAdvertisingEnable(true))
        hosts[1].send(.leCreateConnection(LECreateConnectionParameters(
            peer: AirHub.address(forDevice: 1),
            connection: LEConnectionParameters(intervalMin: 6, intervalMax: 6, supervisionTimeout: 50))))
        try await waitUntil { hosts.allSatisfy { $0.connected } }

        let list = try AirHub.control("devices", socketPath: socket)
        #expect(list.hasPrefix("ok: dev1 0A:1B:00:00:00:01 at (0.0, 0.0, 0.0) m, radio on, 1 link"), "\(list)")
        #expect(list.contains("dev2 0A:1B:00:00:00:02") && list.hasSuffix("loss 0%"), "\(list)")

        // 100 km away for longer than the supervision timeout (500 ms): the link ends at both ends with Connection
        // Timeout; back in range, the device is where it was.
        #expect(try AirHub.control("range dev2 out", socketPath: socket) == "ok: range: dev2 out of range (100 km away)")
        try await waitUntil { hosts.allSatisfy { $0.disconnections.contains(.connectionTimeout) } }
        #expect(try AirHub.control("range 2 in", socketPath: socket) == "ok: range: dev2 back at (2.0, 0.0, 0.0) m")
        #expect(hub.controller(ofDevice: 2)?.position == AirPosition(x: 2))

        // Reconnect, then drop the link: both ends time out.
        try await reconnect(hosts)
        #expect(try AirHub.control("drop dev1", socketPath: socket)
                == "ok: drop: dev1's 1 link no longer heard; both ends will see a supervision timeout")
        try await waitUntil { hosts.allSatisfy { $0.disconnections.filter { $0 == .connectionTimeout }.count == 2 } }
        #expect(try AirHub.control("drop all", socketPath: socket) == "error: no link on the air")

        // Reconnect, then the peripheral's radio off: both ends time out; on again, it is heard again.
        try await reconnect(hosts)
        #expect(try AirHub.control("power dev1 off", socketPath: socket) == "ok: power: dev1's radio off (its 1 link will time out)")
        try await waitUntil { hosts.allSatisfy { $0.disconnections.filter { $0 == .connectionTimeout }.count == 3 } }
        #expect(try AirHub.control("power dev1 on", socketPath: socket) == "ok: power: dev1's radio on")
        try await reconnect(hosts)

        // Each applied fault was reported by the hub, in order.
        let faults = events.load().compactMap { event -> String? in
            if case .fault(let fault, _) = event { return fault.line }
            return nil
        }
        #expect(faults == ["loss 25%", "loss 0%", "range dev2 out", "range dev2 in", "drop dev1", "power dev1 off", "power dev1 on"])
        #expect(events.load().contains { $0.text == "fault: power: dev1's radio on" })
        #expect(events.load().contains { $0.json.contains("\"event\":\"fault\"") && $0.json.contains("\"command\":\"drop dev1\"") })
    }

    /// A client that connects and sends nothing, or too long a line, gets an error and the socket serves the next.
    @Test(.timeLimit(.minutes(1)))
    func aSilentOrFloodingClientDoesNotHoldTheControlSocket() async throws {
        let socket = FileManager.default.temporaryDirectory.appendingPathComponent("ocb-fault-\(UUID().uuidString.prefix(6)).sock").path
        let hub = AirHub(configuration: AirHubConfiguration(socketPath: socket, statisticsInterval: nil),
                         eventLoop: DispatchEventLoop(label: "fault-test"))
        try hub.start()
        defer { hub.stop() }
        #expect(try AirHub.control(String(repeating: "loss ", count: 100), socketPath: socket)
                == "error: a command line is at most 256 octets")
        #expect(try AirHub.control("devices", socketPath: socket) == "ok: no devices\nloss 0%")
        #expect(throws: AirHubError.self) { try AirHub.control("devices", socketPath: socket + ".none") }
    }

    private func reconnect(_ hosts: [HubHost]) async throws {
        hosts[0].send(.leSetAdvertisingEnable(true))
        hosts[1].send(.leCreateConnection(LECreateConnectionParameters(
            peer: AirHub.address(forDevice: 1),
            connection: LEConnectionParameters(intervalMin: 6, intervalMax: 6, supervisionTimeout: 50))))
        try await waitUntil { hosts.allSatisfy { $0.connected } }
    }
}
