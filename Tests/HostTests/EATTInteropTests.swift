import BluetoothCore
import Foundation
import GATT
import HCI
import Host
import L2CAP
import Testing
import BluetoothEngine

/// Issue 15 item 3 against code we did not write: **our central** (HostStack over `SocketH4Transport`) with a
/// **Bumble peripheral that has EATT enabled** (Interop/peers/bumble_eatt_peripheral.py), on our virtual controller
/// and on Bumble's stock controller (Core 5.4 Vol 3 Part F §3.2.11, Part G §7.2/§7.4).
///
/// After LE Secure Connections Just Works pairing our host reads Bumble's Server Supported Features by itself,
/// writes Client Supported Features (EATT, Multiple Handle Value Notifications) and opens three EATT bearers in
/// one L2CAP Credit Based Connection Request. Then discovery and two reads of a value Bumble takes 0.5 s to answer
/// run over EATT, in parallel on two bearers (Bumble reports both reads started before either ended), and
/// notifications arrive.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct EATTInteropTests {
    static let ourAddress = BluetoothAddress(0xC0CB_0000_00E1, type: .random)
    static let peerAddress = BluetoothAddress(0xF00C_B100_00E2, type: .random)
    static let slow = try? BluetoothUUID(string: "3C1D00E1-7B6E-4E5C-9A3B-0C0FFEE00001")
    static let notify = try? BluetoothUUID(string: "3C1D00E2-7B6E-4E5C-9A3B-0C0FFEE00001")

    @Test(.enabled(if: InteropEnvironment.bumbleEnabled, "no Python with Bumble (set OCB_PYTHON)"))
    func ourCentralOnOurAirAgainstBumbleEATT() async throws {
        try await Self.run(.ourAir)
    }

    @Test(.enabled(if: InteropEnvironment.bumbleEnabled, "no Python with Bumble (set OCB_PYTHON)"))
    func ourCentralOnBumbleControllerAgainstBumbleEATT() async throws {
        try await Self.run(.bumble)
    }

    static func run(_ kind: InteropControllerKind) async throws {
        guard let python = InteropEnvironment.python else {
            Issue.record("OCB_REQUIRE_INTEROP=1 but no Python with Bumble was found (set OCB_PYTHON)")
            return
        }
        guard let slow, let notify else {
            Issue.record("bad UUIDs")
            return
        }
        let controllers = try InteropControllers.start(kind)
        defer { controllers.stop() }
        var configuration = HostConfiguration(commandTimeout: .seconds(2), address: .fixedRandom(ourAddress))
        configuration.security.bondStore = InMemoryBondStore()
        let ours = try await InteropHost(port: controllers.hostPort, label: "eatt", configuration: configuration,
                                         controllerAlive: { controllers.isRunning })
        defer { ours.shutdown() }
        let host = ours.host
        ours.react { event in
            if case .pairingInteraction(let handle, .confirmJustWorks) = event { host.answerPairing(connectionHandle: handle, .confirm(true)) }
        }
        _ = try await ours.start()
        let peer = try InteropProcess("bumble-eatt", executable: python, arguments: [
            InteropEnvironment.peersDirectory + "/bumble_eatt_peripheral.py", "--port", "\(controllers.peerPort)",
            "--address", peerAddress.string, "--name", "OCB-Bumble-EATT", "--timeout", "120",
        ])
        defer { peer.kill() }
        do {
            try await exercise(kind, ours, peer, slow: slow, notify: notify)
        } catch {
            Issue.record("\(kind): \(error)\n\(peer.transcript)\n\(controllers.transcript)")
            throw error
        }
    }

    static func exercise(_ kind: InteropControllerKind, _ ours: InteropHost, _ peer: InteropProcess,
                         slow: BluetoothUUID, notify: BluetoothUUID) async throws {
        _ = try await peer.waitForEvent("ready", seconds: 30)
        let connected: Result<Connection, HostError> = try await InteropHost.wait(20, "connect") { done in
            ours.host.connect(to: peerAddress, options: ConnectOptions(timeout: .seconds(15))) { done($0) }
        }
        let handle = try connected.get().handle
        _ = try await peer.waitForEvent("connected", seconds: 10)
        let paired: Result<PairingOutcome, HostError> = try await InteropHost.wait(40, "pair") { done in
            ours.host.pair(connectionHandle: handle) { done($0) }
        }
        _ = try paired.get()
        _ = try await peer.waitForEvent("encrypted", seconds: 10)

        // Our host opens three bearers by itself once it has read Bumble's Server Supported Features.
        try await ours.waitForEvents(15, "three EATT bearers") { events in
            events.filter { if case .enhancedATTBearerOpened(handle, _, _) = $0 { true } else { false } }.count == 3
        }
        let mtus = ours.events.compactMap { event -> Int? in
            if case .enhancedATTBearerOpened(handle, _, let mtu) = event { mtu } else { nil }
        }
        #expect(mtus == [517, 517, 517], "\(kind): ATT_MTU min(517, Bumble's 2048)")
        _ = try await peer.waitForEvent("eatt", seconds: 5)
        #expect(peer.jsonLines.filter { $0.string("event") == "eatt" }.count == 3, "\(kind)")

        // Discovery and reads over EATT.
        guard case .services(let services) = try await ours.gatt(handle, .discoverAllPrimaryServices) else {
            throw InteropFailure("service discovery returned something else")
        }
        var characteristics: [BluetoothUUID: GATTDiscoveredCharacteristic] = [:]
        for service in services {
            guard case .characteristics(let found) = try await ours.gatt(handle, .discoverAllCharacteristics(of: service)) else {
                throw InteropFailure("characteristic discovery returned something else")
            }
            for characteristic in found { characteristics[characteristic.uuid] = characteristic }
        }
        guard let slowValue = characteristics[slow]?.valueHandle, let notifying = characteristics[notify] else {
            throw InteropFailure("\(kind): Bumble's characteristics were not discovered: \(characteristics.keys)")
        }
        let reads = try await ours.gattBatch(handle, [.readCharacteristicValue(handle: slowValue), .readCharacteristicValue(handle: slowValue)],
                                             seconds: 20)
        #expect(reads.compactMap { try? $0.get() } == [.value(Array("slow over eatt".utf8)), .value(Array("slow over eatt".utf8))], "\(kind)")
        let steps = peer.jsonLines.filter { ["read-start", "read-end"].contains($0.string("event") ?? "") }
        #expect(steps.count == 4, "\(kind): \(steps.map(\.object))")
        #expect(steps.allSatisfy { $0.string("bearer") == "eatt" }, "\(kind): reads on \(steps.map(\.object))")
        #expect(steps.prefix(2).allSatisfy { $0.string("event") == "read-start" }, "\(kind): not in parallel: \(steps.map(\.object))")
        #expect(Set(steps.prefix(2).compactMap { $0.int("cid") }).count == 2, "\(kind): one bearer: \(steps.map(\.object))")

        // Notifications.
        guard case .descriptors(let descriptors) = try await ours.gatt(handle, .discoverAllDescriptors(of: notifying)),
              let cccd = descriptors.first(where: { $0.uuid == GATTUUID.clientCharacteristicConfiguration }) else {
            throw InteropFailure("\(kind): no CCCD")
        }
        #expect(try await ours.gatt(handle, .writeCharacteristicValue(handle: cccd.handle, value: [0x01, 0x00])) == .written)
        try await ours.waitForEvents(10, "two notifications") { events in
            events.filter { if case .gattNotification(handle, notifying.valueHandle, _) = $0 { true } else { false } }.count == 2
        }

        let result: Result<HCIStatus, HostError> = try await InteropHost.wait(10, "disconnect") { done in
            ours.host.disconnect(connectionHandle: handle) { done($0) }
        }
        _ = try result.get()
        let features = try await peer.waitForEvent("client-features", seconds: 10)
        let value = UInt8(features.string("value") ?? "", radix: 16) ?? 0
        #expect(value & 0x06 == 0x06, "\(kind): Client Supported Features \(features.object)")
    }
}
