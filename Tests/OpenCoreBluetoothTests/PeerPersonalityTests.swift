import BluetoothCore
import Foundation
import SharedAir
import StackLauncher
import BluetoothRuntime
import BluetoothEngine
import HCI
import Testing
import TestSupport
@testable import OpenCoreBluetooth
#if canImport(Glibc)
import Glibc
#endif

private nonisolated(unsafe) let batteryServiceUUID = CBUUID(string: "180F")

/// Connects to the battery server, records its name updates, and reads the write lengths the link allows.
private final class PersonalityCentral: FirstDeviceCentral, @unchecked Sendable {
    init() { super.init(log: CallLog(label: "personality.central"), services: [batteryServiceUUID]) }

    override func discovered(_ advertisementData: [String: Any]) {
        log.add("discovered \(advertisementData[CBAdvertisementDataLocalNameKey] as? String ?? "-")")
    }
    override func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        log.add("connected, writes up to \(peripheral.maximumWriteValueLength(for: .withoutResponse))")
    }
    override func peripheralDidUpdateName(_ peripheral: CBPeripheral) {
        log.add("name \(peripheral.name ?? "-")")
    }
}

/// Issue 32 item 7 (first part): `blue serve --personality` takes a platform's defaults. A CoreBluetooth central
/// meets an iPhone's (ATT_MTU 185, so writes of 182 octets; the GAP name "iPhone" read after connecting, where the
/// app advertised its own; a resolvable private address) and an Android phone's (517; "Pixel 8"); Android refuses
/// an advertisement that does not fit legacy PDUs instead of shortening it.
@Suite(.serialized) struct PeerPersonalityTests {
    /// `blue serve --personality personality --profile battery --json` and a central on one hub: the central's log
    /// once the name came, and the serve's "serving" event.
    static func meet(_ personality: String) async throws -> (log: [String], serving: [String: Any]) {
        let serve = try await ServeOnHub("personality") { _ in ["--personality", personality, "--profile", "battery"] }
        defer { serve.stop() }
        let serving = try await serve.serving()
        let socket = serve.socket
        let central = PersonalityCentral()
        let manager = CBBackendRegistry.$taskProvider.withValue(HostBackend.provider(.hub(socketPath: socket), pairingAgent: .accepting)) {
            Box(value: CBCentralManager(delegate: central, queue: central.log.queue))
        }
        defer { manager.value.backend?.shutdown() }
        try await waitFor("the GAP name", within: .seconds(30), on: central.log.queue,
                          until: { central.log.entries.contains { $0.hasPrefix("name") } }, seen: { "central \(central.log.entries)" })
        return (central.log.entries, serving)
    }

    @Test func anIPhone() async throws {
        let (log, serving) = try await Self.meet("iphone")
        #expect(log == ["discovered blue battery", "connected, writes up to 182", "name iPhone"])
        #expect(serving["gapName"] as? String == "iPhone")
        // A resolvable private address: random, the two top bits 01 (Core 5.4 Vol 6 Part B §1.3.2.2).
        let address = try #require(serving["address"] as? String)
        let top = try #require(UInt8(address.prefix(2), radix: 16))
        #expect(top & 0xC0 == 0x40, "\(address)")
    }

    @Test func anAndroidPhone() async throws {
        let (log, serving) = try await Self.meet("android")
        #expect(log == ["discovered blue battery", "connected, writes up to 514", "name Pixel 8"])
        #expect(serving["gapName"] as? String == "Pixel 8")
    }

    @Test func androidRefusesAnAdvertisementTooLongForLegacyPDUs() async throws {
        let directory = try makeTestDirectory("personality-long")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let definition = directory + "/long.json"
        let uuids = (1...3).map { "0000AB0\($0)-0000-4000-8000-00000000A32\($0)" }
        try Data("""
            {"name": "A rather long advertised name", "advertise": [\(uuids.map { "\"\($0)\"" }.joined(separator: ", "))],
             "services": [\(uuids.map { "{\"uuid\": \"\($0)\", \"characteristics\": []}" }.joined(separator: ", "))]}
            """.utf8).write(to: URL(fileURLWithPath: definition))
        let blue = try #require(HostBackend.hubExecutable(), "no blue executable beside the tests")
        let errors = directory + "/stderr"
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        let server = Process()
        server.executableURL = URL(fileURLWithPath: blue)
        server.arguments = ["serve", "--hci", "in-process", "--personality", "android", definition]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        try server.run()
        let ended = await poll(within: .seconds(30)) { !server.isRunning }
        if !ended { PairingAgentTests.stop(server) }
        #expect(ended && server.terminationStatus == 64, "still running: \(!ended)")
        let text = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        #expect(text.contains("ADVERTISE_FAILED_DATA_TOO_LARGE"), "\(text)")
    }

    /// As Linux does in `l2cap_le_conn_ready`: a central that connects at 7.5 ms is asked, as peripheral, for the
    /// kernel's 30–50 ms (latency 0, 420 ms timeout), and our central's host takes them (LE Connection Update).
    @Test func aLinuxMachineAsksForItsConnectionInterval() async throws {
        let serve = try await ServeOnHub("personality-bluez") { _ in ["--personality", "bluez", "--profile", "battery"] }
        defer { serve.stop() }
        let serving = try await serve.serving()
        let socket = serve.socket
        let address = try BluetoothAddress(string: try #require(serving["address"] as? String), type: .random)
        let central = try await StackLauncher.open("air:\(socket)")
        defer { central.shutdown() }
        let updates = LockedValue<[UInt16]>([])
        central.engine.addEventHandler { event in
            if case .connectionUpdated(let connection) = event { updates.withLock { $0.append(connection.parameters.interval) } }
        }
        let fast = ConnectOptions(parameters: LEConnectionParameters(intervalMin: 6, intervalMax: 6))
        let connected = await withCheckedContinuation { (done: CheckedContinuation<Result<Connection, HostError>, Never>) in
            central.engine.connect(to: address, options: fast) { done.resume(returning: $0) }
        }
        #expect(try connected.get().parameters.interval == 6)
        try await waitFor("the asked interval", within: .seconds(30), until: { updates.withLock { $0.contains { (24...40).contains($0) } } },
                          seen: { "updates \(updates.withLock { $0 }), serve \(serve.events)" })
        let asked = try #require(serve.events.first { $0["event"] as? String == "parametersAsked" })
        #expect(asked["intervalMin"] as? Int == 24 && asked["intervalMax"] as? Int == 40)
        #expect(asked["latency"] as? Int == 0 && asked["timeout"] as? Int == 42 && asked["accepted"] as? Bool == true)
    }
}
