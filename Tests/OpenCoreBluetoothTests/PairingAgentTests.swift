import BluetoothCore
import Foundation
import SharedAir
import Testing
import TestSupport
@testable import OpenCoreBluetooth
#if canImport(Glibc)
import Glibc
#endif

private nonisolated(unsafe) let lockedServiceUUID = CBUUID(string: "5EC0E000-0000-4000-8000-0000000A9E47")
private nonisolated(unsafe) let lockedCharacteristicUUID = CBUUID(string: "5EC0E001-0000-4000-8000-0000000A9E47")

/// A central that finds the device advertising `name`, connects and reads the characteristic that needs a secured
/// link: the read is refused (Insufficient Authentication or Encryption), the stack pairs and reads again, as iOS
/// does.
private final class LockedReader: FirstDeviceCentral, @unchecked Sendable {
    let service: CBUUID
    let characteristic: CBUUID

    init(name: String, service: CBUUID, characteristic: CBUUID) {
        self.service = service
        self.characteristic = characteristic
        super.init(log: CallLog(label: "agent.central"), name: name)
    }

    override func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.discoverServices([service])
    }
    override func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        guard let found = peripheral.services?.first else { return log.add("no service") }
        peripheral.discoverCharacteristics([characteristic], for: found)
    }
    override func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        guard let characteristic = service.characteristics?.first else { return log.add("no characteristic") }
        peripheral.readValue(for: characteristic)
    }
    override func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error {
            log.add("read failed \((error as NSError).domain) \((error as NSError).code)")
        } else {
            log.add("read \(String(decoding: characteristic.value ?? Data(), as: UTF8.self))")
        }
    }
}

/// Issue 32 item 4: the system's pairing dialogs answered by an agent, so that a CoreBluetooth app pairs as an
/// iPhone (KeyboardDisplay, MITM) with a peripheral that requires MITM protection: `blue serve` displaying a
/// passkey (the agent types it), and one that compares numbers (the agent confirms or denies). Without an agent the
/// app pairs as before (Just Works) and the authenticated read is refused.
@Suite(.serialized) struct PairingAgentTests {
    @Test func theAgentComesFromTheEnvironment() throws {
        #expect(OCBPairingAgent.environment([:]) == nil)
        #expect(OCBPairingAgent.environment([OCBPairingAgent.environmentVariable: ""]) == nil)
        for good in ["accept", "confirm", "reject", "deny", "passkey:123456", "passkey:0", " PASSKEY:999999 "] {
            #expect((try? OCBPairingAgent(parsing: good)) != nil, "\(good)")
        }
        for bad in ["yes", "passkey:", "passkey:1000000", "passkey:12ab", "passkey:-1"] {
            #expect(throws: OCBApplication.ConfigurationError.self, "\(bad)") { try OCBPairingAgent(parsing: bad) }
        }
        #expect(OCBPairingAgent.environment([OCBPairingAgent.environmentVariable: "maybe"]) == nil)
    }

    /// A hub, `blue serve` on it with `io` (and `passkey` displayed when given), and a central on it answered by
    /// `agent`; the central's log once it read (or failed), and the prompts the agent saw.
    static func readLocked(io: String, passkey: UInt32?, agent: (@Sendable (OCBPairingAgent.Prompt) -> OCBPairingAgent.Answer)?)
        async throws -> (log: [String], prompts: [OCBPairingAgent.Prompt]) {
        let directory = try makeTestDirectory("agent")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/air.sock"
        let blue = try #require(HostBackend.hubExecutable(), "no blue executable beside the tests")
        let hub = try Self.run(blue, ["air", "--socket", socket, "--stats-interval", "0"])
        defer { Self.stop(hub) }
        #expect(await poll(within: .seconds(30)) { AirHub.isRunning(at: socket) }, "the hub did not listen")
        let definition = directory + "/locked.json"
        try Data("""
            {"name": "Locked", "advertise": ["\(lockedServiceUUID.uuidString)"], "services": [{"uuid": "\(lockedServiceUUID.uuidString)",
              "characteristics": [{"uuid": "\(lockedCharacteristicUUID.uuidString)", "properties": ["read"],
                                   "permissions": ["read-authenticated"], "value": {"text": "open sesame"}}]}]}
            """.utf8).write(to: URL(fileURLWithPath: definition))
        var arguments = ["serve", "--hci", "air:\(socket)", "--io", io, definition]
        if let passkey { arguments += ["--passkey", String(passkey)] }
        let server = try Self.run(blue, arguments)
        defer { Self.stop(server) }

        let prompts = LockedBox<[OCBPairingAgent.Prompt]>([])
        let pairingAgent = agent.map { answer in
            OCBPairingAgent { prompt, _, reply in
                prompts.value.append(prompt)
                reply(answer(prompt))
            }
        }
        let reader = LockedReader(name: "Locked", service: lockedServiceUUID, characteristic: lockedCharacteristicUUID)
        let manager = CBBackendRegistry.$taskProvider.withValue(HostBackend.provider(.hub(socketPath: socket), pairingAgent: pairingAgent)) {
            Box(value: CBCentralManager(delegate: reader, queue: reader.log.queue))
        }
        try await waitFor("the read, or its failure", within: .seconds(40), on: reader.log.queue,
                          until: { reader.log.entries.contains { $0.hasPrefix("read") } }, seen: { "central \(reader.log.entries)" })
        manager.value.backend?.shutdown()
        return (reader.log.entries, prompts.value)
    }

    static func run(_ executable: String, _ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    static func stop(_ process: Process) {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }

    @Test func passkeyEntryWithAPeripheralThatDisplaysOne() async throws {
        let result = try await Self.readLocked(io: "display-only", passkey: 246_810) { prompt in
            prompt == .enterPasskey ? .passkey(246_810) : .accept
        }
        #expect(result.log == ["read open sesame"])
        #expect(result.prompts == [.enterPasskey])
    }

    @Test func aWrongPasskeyFailsTheRead() async throws {
        let result = try await Self.readLocked(io: "display-only", passkey: 246_810) { _ in .passkey(135_790) }
        #expect(result.log.count == 1 && result.log.first?.hasPrefix("read failed") == true, "\(result.log)")
        #expect(result.prompts == [.enterPasskey])
    }

    @Test func numericComparisonConfirmedAndDenied() async throws {
        let confirmed = try await Self.readLocked(io: "display-yes-no", passkey: nil) { _ in .accept }
        #expect(confirmed.log == ["read open sesame"])
        guard case .confirmNumber? = confirmed.prompts.first, confirmed.prompts.count == 1 else {
            Issue.record("prompts \(confirmed.prompts)")
            return
        }
        let denied = try await Self.readLocked(io: "display-yes-no", passkey: nil) { _ in .reject }
        #expect(denied.log.count == 1 && denied.log.first?.hasPrefix("read failed") == true, "\(denied.log)")
    }

    @Test func withoutAnAgentTheAppPairsAsBeforeAndTheAuthenticatedReadIsRefused() async throws {
        let result = try await Self.readLocked(io: "display-only", passkey: 246_810, agent: nil)
        #expect(result.log.count == 1 && result.log.first?.hasPrefix("read failed") == true, "\(result.log)")
    }

    /// Against a host we did not write: Bumble's peripheral (Interop/peers/pairing_peer.py, LE Secure Connections,
    /// DisplayYesNo, MITM, confirming the number itself) on our air; the CoreBluetooth central pairs as an iPhone
    /// when its read of the encrypted characteristic is refused, the agent confirms the number, and both sides end
    /// with an authenticated key.
    @Test(.enabled(if: BumblePython.enabled, "no Python with Bumble (set OCB_PYTHON)"), .timeLimit(.minutes(2)))
    func numericComparisonWithBumble() async throws {
        let python = try #require(BumblePython.path, "OCB_REQUIRE_INTEROP=1 but no Python with Bumble was found (set OCB_PYTHON)")
        let directory = try makeTestDirectory("agent-bumble")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/air.sock"
        let port = try TestPorts.reserve()
        let blue = try #require(HostBackend.hubExecutable(), "no blue executable beside the tests")
        let hub = try Self.run(blue, ["air", "--socket", socket, "--h4-tcp", "127.0.0.1:\(port)", "--stats-interval", "0"])
        defer { Self.stop(hub) }
        #expect(await poll(within: .seconds(30)) { AirHub.isRunning(at: socket) }, "the hub did not listen")
        let output = directory + "/bumble.jsonl"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let peer = Process()
        peer.executableURL = URL(fileURLWithPath: python)
        peer.arguments = [BumblePython.peer("pairing_peer.py"), "--port", "\(port)", "--address", "F0:0C:B1:00:00:32",
                          "--role", "peripheral", "--method", "numeric", "--timeout", "90"]
        peer.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        peer.standardError = FileHandle.nullDevice
        try peer.run()
        defer { if peer.isRunning { kill(peer.processIdentifier, SIGKILL) } }
        let bumble: @Sendable () -> [[String: Any]] = {
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
        }
        try await waitFor("Bumble advertising", within: .seconds(40), until: { bumble().contains { $0["event"] as? String == "ready" } },
                          seen: { "\(bumble())" })

        let prompts = LockedBox<[OCBPairingAgent.Prompt]>([])
        let agent = OCBPairingAgent { prompt, _, reply in
            prompts.value.append(prompt)
            reply(.accept)
        }
        let uuid = { (number: UInt32) in CBUUID(string: String(format: "%08X", number) + "-7B6E-4E5C-9A3B-0C0FFEE0A11B") }
        let reader = LockedReader(name: "OCB-Pairing", service: uuid(0x5E1F_2001), characteristic: uuid(0x5E1F_2002))
        let manager = CBBackendRegistry.$taskProvider.withValue(HostBackend.provider(.hub(socketPath: socket), pairingAgent: agent)) {
            Box(value: CBCentralManager(delegate: reader, queue: reader.log.queue))
        }
        defer { manager.value.backend?.shutdown() }
        try await waitFor("the read, or its failure", within: .seconds(60), on: reader.log.queue,
                          until: { reader.log.entries.contains { $0.hasPrefix("read") } }, seen: { "central \(reader.log.entries), Bumble \(bumble())" })
        #expect(reader.log.entries == ["read secret behind encryption"])
        guard case .confirmNumber(let number)? = prompts.value.first, prompts.value.count == 1 else {
            Issue.record("prompts \(prompts.value)")
            return
        }
        let events = bumble()
        let confirmed = events.first { $0["event"] as? String == "number" }
        #expect(confirmed?["number"] as? Int == Int(number), "Bumble compared \(String(describing: confirmed)), we \(number)")
        let paired = events.first { $0["event"] as? String == "paired" }
        #expect(paired?["sc"] as? Bool == true && paired?["authenticated"] as? Bool == true, "\(String(describing: paired))")
    }
}
