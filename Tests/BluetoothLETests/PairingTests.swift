import BluetoothCore
@testable import BluetoothLE
import BluetoothRuntime
import Host
import SMP
import Testing

/// A delegate that records what it was asked and answers as told; a displayed passkey is put in `shown` for the
/// other side's delegate to type.
private final class RecordingDelegate: PairingDelegate, @unchecked Sendable {
    let log = LockedValue<[String]>([])
    let shown: LockedValue<UInt32?>
    let confirm: Bool
    let typeFrom: LockedValue<UInt32?>?

    init(confirm: Bool = true, shown: LockedValue<UInt32?> = LockedValue(nil), typeFrom: LockedValue<UInt32?>? = nil) {
        self.confirm = confirm
        self.shown = shown
        self.typeFrom = typeFrom
    }

    func confirmNumericValue(_ value: UInt32, peer: BluetoothAddress) async -> Bool {
        log.withLock { $0.append("numeric \(value)") }
        return confirm
    }

    func enterPasskey(peer: BluetoothAddress) async -> UInt32? {
        log.withLock { $0.append("enter") }
        guard let typeFrom else { return nil }
        for _ in 0..<200 {
            if let value = typeFrom.load() { return value }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    func displayPasskey(_ passkey: UInt32, peer: BluetoothAddress) async {
        log.withLock { $0.append("display") }
        shown.store(passkey)
    }

    func acceptJustWorks(peer: BluetoothAddress) async -> Bool {
        log.withLock { $0.append("justWorks") }
        return confirm
    }
}

private func configuration(seed: UInt64, io: SMPIOCapability, mitm: Bool, consent: Bool = false) -> HostConfiguration {
    var configuration = HostConfiguration(address: .randomStatic(seed: seed))
    configuration.security.ioCapability = io
    configuration.security.mitm = mitm
    configuration.security.secureConnections = .required
    configuration.security.justWorksConsent = consent
    return configuration
}

@Suite(.serialized) struct PairingTests {
    /// LE SC Numeric Comparison (Vol 3 Part H §2.3.5.6.2): both delegates are asked to confirm the same six-digit
    /// value; both confirm, the link is encrypted with an authenticated key and bonded.
    @Test func numericComparisonConfirmedOnBothSides() async throws {
        let air = try await TestAir.started(central: configuration(seed: 2, io: .displayYesNo, mitm: true),
                                            peripheral: configuration(seed: 1, io: .displayYesNo, mitm: true))
        let centralDelegate = RecordingDelegate(), peripheralDelegate = RecordingDelegate()
        air.central.setPairingDelegate(centralDelegate)
        air.peripheral.setPairingDelegate(peripheralDelegate)
        let (remote, _) = try await air.connect()
        let outcome = try await withTimeout { try await remote.pair() }
        #expect(outcome.method == .numericComparison)
        #expect(outcome.authenticated == true && outcome.secureConnections == true && outcome.bonded && !outcome.usedExistingBond)
        let centralLog = centralDelegate.log.load(), peripheralLog = peripheralDelegate.log.load()
        #expect(centralLog.count == 1 && centralLog.first?.hasPrefix("numeric ") == true)
        #expect(centralLog == peripheralLog, "both sides show the same value")
        #expect(air.central.pairing.takeFailure(remote.connectionHandle) == nil)
        await air.finish([remote])
        #expect(air.central.pairing.heldCount == 0 && air.peripheral.pairing.heldCount == 0)
    }

    /// LE SC Passkey Entry (§2.3.5.6.3): the peripheral (DisplayOnly) displays, the central (KeyboardOnly) types
    /// the displayed value; authenticated.
    @Test func passkeyTypedFromTheDisplayedValue() async throws {
        let air = try await TestAir.started(central: configuration(seed: 2, io: .keyboardOnly, mitm: true),
                                            peripheral: configuration(seed: 1, io: .displayOnly, mitm: true))
        let shown = LockedValue<UInt32?>(nil)
        let peripheralDelegate = RecordingDelegate(shown: shown)
        let centralDelegate = RecordingDelegate(typeFrom: shown)
        air.central.setPairingDelegate(centralDelegate)
        air.peripheral.setPairingDelegate(peripheralDelegate)
        let (remote, _) = try await air.connect()
        let outcome = try await withTimeout { try await remote.pair() }
        #expect(outcome.method == .passkeyEntry(.responderDisplays))
        #expect(outcome.authenticated == true && outcome.bonded)
        #expect(peripheralDelegate.log.load() == ["display"])
        #expect(centralDelegate.log.load() == ["enter"])
        #expect(shown.load().map { $0 <= 999_999 } == true)
        await air.finish([remote])
    }

    /// Passkey Entry where the central types a wrong value: Confirm Value Failed (§2.3.5.6.3, §3.5.5), thrown as
    /// ``PairingError`` with the SMP reason.
    @Test func wrongPasskeyFailsWithConfirmValueFailed() async throws {
        var peripheral = configuration(seed: 1, io: .displayOnly, mitm: true)
        peripheral.security.fixedPasskey = 123_456
        let air = try await TestAir.started(central: configuration(seed: 2, io: .keyboardOnly, mitm: true), peripheral: peripheral)
        air.central.setPairingDelegate(RecordingDelegate(typeFrom: LockedValue(111_111)))
        let (remote, _) = try await air.connect()
        do {
            _ = try await withTimeout { try await remote.pair() }
            Issue.record("pairing succeeded with a wrong passkey")
        } catch let error as PairingError {
            #expect(error.code == .pairingFailed)
            #expect(error.smpReason == .confirmValueFailed)
        }
        await air.finish([remote])
    }

    /// Just Works with consent asked (``HostSecurityConfiguration/justWorksConsent``) and refused by the central's
    /// delegate: pairing fails with a typed error, the link is not encrypted.
    @Test func justWorksRefusedThrowsATypedError() async throws {
        let air = try await TestAir.started(central: configuration(seed: 2, io: .noInputNoOutput, mitm: false, consent: true),
                                            peripheral: configuration(seed: 1, io: .noInputNoOutput, mitm: false))
        let centralDelegate = RecordingDelegate(confirm: false)
        air.central.setPairingDelegate(centralDelegate)
        let (remote, _) = try await air.connect()
        do {
            _ = try await withTimeout { try await remote.pair() }
            Issue.record("pairing succeeded although Just Works was refused")
        } catch let error as PairingError {
            #expect(error.code == .pairingFailed)
            #expect(error.smpReason != nil)
            #expect(error.hostError != nil)
        }
        #expect(centralDelegate.log.load() == ["justWorks"])
        await air.finish([remote])
    }

    /// The peripheral asks for security (Security Request, §3.6.7): the central pairs by itself (Just Works
    /// here), both sides get the outcome.
    @Test func securityRequestFromThePeripheral() async throws {
        let air = try await TestAir.started(central: configuration(seed: 2, io: .noInputNoOutput, mitm: false),
                                            peripheral: configuration(seed: 1, io: .noInputNoOutput, mitm: false))
        let (remote, local) = try await air.connect()
        let outcome = try await withTimeout { try await local.requestSecurity() }
        #expect(outcome.method == .justWorks)
        #expect(outcome.secureConnections == true && outcome.authenticated == false && outcome.bonded)
        await air.finish([remote])
    }
}
