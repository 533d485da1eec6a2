import Dispatch
import Foundation
import Host
import Testing
@testable import OpenCoreBluetooth

private nonisolated(unsafe) let serviceUUID = CBUUID(string: "5E1F0100-0000-4000-8000-00000000E5C0")
private nonisolated(unsafe) let valueUUID = CBUUID(string: "5E1F0101-0000-4000-8000-00000000E5C0")

/// Serves a value that needs encryption; can forget every bond it holds (a phone "forgetting" the device).
private final class ForgetfulPeripheral: SecretPeripheral, @unchecked Sendable {
    init() { super.init(service: serviceUUID, characteristic: valueUUID) }

    var host: HostStack? { (manager.backend as? EnginePeripheralBackend)?.launchedStack?.host }
}

/// Connects, reads the value, disconnects; `again()` connects and reads once more. Logs what the app hears.
private final class ReturningCentral: ConnectingCentral, @unchecked Sendable {
    init() { super.init(service: serviceUUID) }

    func again() {
        guard let peripheral else { return }
        manager.connect(peripheral)
    }

    override func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        log.append("disconnected " + ((error as? CBError).map { "\($0.code.rawValue)" } ?? "nil"))
    }

    override func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        guard let characteristic = service.characteristics?.first else { return }
        peripheral.readValue(for: characteristic)
    }

    override func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error = error as? CBError {
            log.append("error CBError \(error.code.rawValue)")
        } else if let error {
            log.append("error \(error)")
        } else {
            log.append("read " + (characteristic.value.map { String(decoding: $0, as: UTF8.self) } ?? "nil"))
            manager.cancelPeripheralConnection(peripheral)
        }
    }
}

@Suite struct SecurityBondLostTests {
    /// The central pairs on demand and keeps the bond; the peripheral then forgets it (as a phone "forgets" a
    /// device). On the next connection the central encrypts with its bond, the peripheral has no key (LTK
    /// negative reply → PIN or Key Missing, Core 5.4 Vol 3 Part H §2.4.4), and the app hears
    /// `CBError.peerRemovedPairingInformation` (14), as on iOS — re-pairing is not silently allowed.
    @Test func aPeerThatForgotTheBondIsReportedAsPeerRemovedPairingInformation() async throws {
        let apps = await makeOnMain(with: HostBackend.privateAirProvider(seed: 97)) { (ForgetfulPeripheral(), ReturningCentral()) }
        try await waitFor("the first connection: read after pairing, then disconnection", until: { apps.value.1.log.count >= 2 },
                          seen: { "central \(apps.value.1.log)" })
        #expect(await onMain { apps.value.1.log } == ["read secret", "disconnected nil"])

        let host = try #require(await onMain { apps.value.0.host })
        let bonds = await withCheckedContinuation { continuation in host.bonds { continuation.resume(returning: $0) } }
        #expect(bonds.count == 1, "the peripheral bonded with the central")
        for bond in bonds {
            await withCheckedContinuation { continuation in
                host.removeBond(identityAddress: bond.identityAddress) { _ in continuation.resume() }
            }
        }

        await onMain { apps.value.1.again() }
        try await waitFor("the second connection's outcome without the peer's bond", until: { apps.value.1.log.count >= 3 },
                          seen: { "central \(apps.value.1.log)" })
        let log = await onMain { apps.value.1.log }
        #expect(log.dropFirst(2).first == "error CBError 14" || log.dropFirst(2).first == "disconnected 14", "\(log)")
        #expect(log.filter { $0 == "read secret" }.count == 1, "no second read without a bond: \(log)")
    }
}
