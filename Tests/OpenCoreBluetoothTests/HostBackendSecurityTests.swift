import Dispatch
import Foundation
import BluetoothRuntime
import Host
import StackLauncher
import Testing
@testable import OpenCoreBluetooth
import BluetoothEngine

private nonisolated(unsafe) let secureServiceUUID = CBUUID(string: "5E1F0000-0000-4000-8000-00000000E5C0")
private nonisolated(unsafe) let secureCharacteristicUUID = CBUUID(string: "5E1F0001-0000-4000-8000-00000000E5C0")

/// Serves a value that needs an encrypted link to be read.
private final class SecurePeripheral: SecretPeripheral, @unchecked Sendable {
    init() { super.init(service: secureServiceUUID, characteristic: secureCharacteristicUUID) }
}

/// Reads the first characteristic of the secure service; logs the value or the error.
private final class SecureCentral: ConnectingCentral, @unchecked Sendable {
    var lastError: (any Error)?
    /// The security errors the central's host reported (`pairingFailed` events).
    let securityErrors = LockedValue<[HostError]>([])
    var subscription: LaunchedStack.EventSubscription?

    init() { super.init(service: secureServiceUUID) }

    override func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn, subscription == nil, let stack = (manager.backend as? EngineCentralBackend)?.launchedStack {
            let errors = securityErrors
            subscription = stack.addEventHandler { event in
                if case .pairingFailed(_, _, let error) = event { errors.withLock { $0.append(error) } }
            }
        }
        super.centralManagerDidUpdateState(central)
    }

    override func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        guard let characteristic = service.characteristics?.first else { return }
        peripheral.readValue(for: characteristic)
    }

    override func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        lastError = error
        if let error {
            log.append("error \(error)")
        } else {
            log.append("read " + (characteristic.value.map { String(decoding: $0, as: UTF8.self) } ?? "nil"))
        }
    }
}

private nonisolated(unsafe) let secureWriteUUID = CBUUID(string: "5E1F0002-0000-4000-8000-00000000E5C0")

/// Takes writes only on an encrypted link.
private final class SecureWritePeripheral: MainQueuePeripheral, @unchecked Sendable {
    var written: [String] = []

    override func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        publishAndAdvertise(secureServiceUUID, [CBMutableCharacteristic(type: secureWriteUUID, properties: [.write], value: nil,
                                                                        permissions: [.writeEncryptionRequired])])
    }

    override func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        for request in requests { written.append(request.value.map { String(decoding: $0, as: UTF8.self) } ?? "nil") }
        if let first = requests.first { peripheral.respond(to: first, withResult: .success) }
    }
}

/// Writes "hello" with response to the first characteristic found.
private final class SecureWriteCentral: ConnectingCentral, @unchecked Sendable {
    init() { super.init(service: secureServiceUUID) }

    override func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        guard let characteristic = service.characteristics?.first else { return }
        peripheral.writeValue(Data("hello".utf8), for: characteristic, type: .withResponse)
    }

    override func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        log.append(error.map { "error \($0)" } ?? "written")
    }
}

/// Serves a value that needs encryption, and refuses every pairing: its host answers each Pairing Request with
/// Pairing Failed (Pairing Not Supported), as a device whose user declined would.
private final class RefusingPeripheral: SecretPeripheral, @unchecked Sendable {
    var subscription: LaunchedStack.EventSubscription?

    init() { super.init(service: secureServiceUUID, characteristic: secureCharacteristicUUID) }

    override func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        if let stack = (manager.backend as? EnginePeripheralBackend)?.launchedStack {
            let host = stack.host
            subscription = stack.addEventHandler { event in
                // SMP Pairing Request (0x01) → Pairing Failed (0x05), reason Pairing Not Supported (0x05), on the
                // SMP fixed channel 0x0006 (Core 5.4 Vol 3 Part H §3.5.5).
                guard case .securityManagerPDU(let handle, let payload) = event, payload.first == 0x01 else { return }
                host.sendL2CAP(connectionHandle: handle, pdu: [0x02, 0x00, 0x06, 0x00, 0x05, 0x05])
            }
        }
        super.peripheralManagerDidUpdateState(peripheral)
    }
}

@Suite struct HostBackendSecurityTests {
    /// A value with `readEncryptionRequired`: the first Read is refused with Insufficient Authentication by the
    /// peripheral's GATT server (before the app hears of it), the central's host pairs (Just Works) and sends
    /// the Read again, and the app's answer arrives — as CoreBluetooth pairs on demand.
    @Test func readNeedingEncryptionPairsOnDemand() async throws {
        let apps = await makeOnMain(with: HostBackend.privateAirProvider(seed: 99)) { (SecurePeripheral(), SecureCentral()) }
        try await waitFor("the central's read, after pairing on demand", until: { !apps.value.1.log.isEmpty },
                          seen: { "central \(apps.value.1.log), peripheral reads \(apps.value.0.reads)" })
        #expect(await onMain { apps.value.1.log } == ["read secret"])
        #expect(await onMain { apps.value.0.reads } == 1)
    }

    /// The peer refuses pairing (Pairing Failed, Pairing Not Supported): the read that needed it fails, as on iOS,
    /// with the server's `CBATTError` (Insufficient Encryption, for `readEncryptionRequired`) on `didUpdateValueFor`,
    /// not a CBError.
    @Test func readWhosePairingIsRefusedFailsWithTheATTError() async throws {
        let apps = await makeOnMain(with: HostBackend.privateAirProvider(seed: 97)) { (RefusingPeripheral(), SecureCentral()) }
        try await waitFor("the central's read failing after the refused pairing", until: { !apps.value.1.log.isEmpty },
                          seen: { "central \(apps.value.1.log), security errors \(apps.value.1.securityErrors.load())" })
        let log = await onMain { apps.value.1.log }
        #expect(log.count == 1 && log.first?.hasPrefix("error CBATTError(0xF)") == true, "\(log)")
        let error = await onMain { apps.value.1.lastError }
        #expect((error as? CBATTError)?.code == .insufficientEncryption)
        #expect(!(error is CBError))
        // Underneath: the peer's Pairing Failed, as the central's host reported it.
        let reported = await onMain { apps.value.1.securityErrors.load() }
        #expect(reported.map(\.security) == [.pairingFailed(.pairingNotSupported, remote: true)])
    }

    /// A value with `writeEncryptionRequired`: the Write Request is refused with Insufficient Authentication, the
    /// central pairs (Just Works) and writes again; the app hears one write and one success, no error.
    @Test func writeNeedingEncryptionPairsOnDemand() async throws {
        let apps = await makeOnMain(with: HostBackend.privateAirProvider(seed: 98)) { (SecureWritePeripheral(), SecureWriteCentral()) }
        try await waitFor("the central's write, after pairing on demand", until: { !apps.value.1.log.isEmpty },
                          seen: { "central \(apps.value.1.log), peripheral written \(apps.value.0.written)" })
        #expect(await onMain { apps.value.1.log } == ["written"])
        #expect(await onMain { apps.value.0.written } == ["hello"])
    }
}
