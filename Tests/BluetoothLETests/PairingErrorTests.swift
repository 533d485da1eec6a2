import BluetoothCore
@testable import BluetoothLE
import BluetoothRuntime
import GATT
import Host
import SMP
import Testing
import BluetoothEngine

/// Answers numeric comparison and Just Works consent as told, types a fixed passkey (nil: cancels).
private final class AnsweringDelegate: PairingDelegate, @unchecked Sendable {
    let accept: Bool
    let passkey: UInt32?
    init(accept: Bool, passkey: UInt32? = nil) {
        self.accept = accept
        self.passkey = passkey
    }
    func confirmNumericValue(_ value: UInt32, peer: BluetoothAddress) async -> Bool { accept }
    func acceptJustWorks(peer: BluetoothAddress) async -> Bool { accept }
    func enterPasskey(peer: BluetoothAddress) async -> UInt32? { passkey }
}

private func configuration(seed: UInt64, io: SMPIOCapability, mitm: Bool) -> HostConfiguration {
    var configuration = HostConfiguration(address: .randomStatic(seed: seed))
    configuration.security.ioCapability = io
    configuration.security.mitm = mitm
    configuration.security.secureConnections = .required
    return configuration
}

/// The pairing delegate's failures as typed errors (Core 5.4 Vol 3 Part H §3.5.5): the SMP reason, and whether
/// the peer sent it or we did; host and GATT security failures as ``BluetoothLEError``.
@Suite(.serialized) struct PairingErrorTests {
    /// Runs `pair()` from the central with these delegates; returns its error.
    private func pairingError(central: AnsweringDelegate, peripheral: AnsweringDelegate,
                              io: (SMPIOCapability, SMPIOCapability)) async throws -> PairingError? {
        let air = try await TestAir.started(central: configuration(seed: 2, io: io.0, mitm: true),
                                            peripheral: configuration(seed: 1, io: io.1, mitm: true))
        air.central.setPairingDelegate(central)
        air.peripheral.setPairingDelegate(peripheral)
        let (remote, _) = try await air.connect()
        defer { Task { await air.finish([remote]) } }
        do {
            _ = try await withTimeout { try await remote.pair() }
            return nil
        } catch let error as PairingError {
            return error
        }
    }

    @Test func ourDelegateRejectingTheValueIsALocalNumericComparisonFailed() async throws {
        let error = try #require(try await pairingError(central: AnsweringDelegate(accept: false), peripheral: AnsweringDelegate(accept: true),
                                                        io: (.displayYesNo, .displayYesNo)))
        #expect(error.code == .pairingFailed)
        #expect(error.smpReason == .numericComparisonFailed)
        #expect(error.isRemote == false)
        #expect(error.hostError?.code == .securityFailed)
        #expect(error.reason == "pairing failed: Numeric Comparison Failed (0x0C), local")
    }

    @Test func thePeersDelegateRejectingTheValueIsARemoteNumericComparisonFailed() async throws {
        let error = try #require(try await pairingError(central: AnsweringDelegate(accept: true), peripheral: AnsweringDelegate(accept: false),
                                                        io: (.displayYesNo, .displayYesNo)))
        #expect(error.code == .pairingFailed)
        #expect(error.smpReason == .numericComparisonFailed)
        #expect(error.isRemote == true)
    }

    @Test func ourDelegateCancellingThePasskeyIsALocalPasskeyEntryFailed() async throws {
        let error = try #require(try await pairingError(central: AnsweringDelegate(accept: true, passkey: nil),
                                                        peripheral: AnsweringDelegate(accept: true),
                                                        io: (.keyboardOnly, .displayOnly)))
        #expect(error.code == .pairingFailed)
        #expect(error.smpReason == .passkeyEntryFailed)
        #expect(error.isRemote == false)
    }

    @Test func hostSecurityErrorsMapToTypedCodes() {
        let timeout = PairingError(HostError.security(.smpTimeout), smpReason: nil)
        #expect(timeout.code == .timedOut && timeout.smpReason == nil)
        let lost = PairingError(HostError.security(.bondLost(identity: BluetoothAddress(7, type: .public))), smpReason: nil)
        #expect(lost.code == .bondLost && lost.hciStatus == .pinOrKeyMissing)
        let mic = PairingError(HostError.security(.encryptionFailed(.connectionTerminatedMICFailure)), smpReason: nil)
        #expect(mic.code == .encryptionFailed && mic.hciStatus == .connectionTerminatedMICFailure)
        #expect(PairingError(HostError(.disconnected, "gone"), smpReason: nil).code == .disconnected)

        let wrapped = BluetoothLEError(HostError.security(.pairingFailed(.confirmValueFailed, remote: true)))
        #expect(wrapped.code == .securityFailed)
        #expect(wrapped.smpReason == .confirmValueFailed)
        #expect(wrapped.securityFailure == .pairingFailed(.confirmValueFailed, remote: true))
        let timedOut = BluetoothLEError(HostError.security(.smpTimeout))
        #expect(timedOut.code == .timedOut && timedOut.securityFailure == .timedOut)
    }

    @Test func aRequestWhoseSecuringFailedKeepsItsATTError() {
        let error = BluetoothLEError(GATTClientError.securityFailed(.insufficientEncryption, handle: 9,
                                                                    .pairingFailed(.pairingNotSupported, remote: true)))
        #expect(error.code == .securityFailed)
        #expect(error.attError == .insufficientEncryption)
        #expect(error.smpReason == .pairingNotSupported)
        let lost = BluetoothLEError(GATTClientError.securityFailed(.insufficientAuthentication, handle: 9, .bondLost))
        #expect(lost.hciStatus == .pinOrKeyMissing && lost.securityFailure == .bondLost)
        let mic = BluetoothLEError(GATTClientError.securityFailed(.insufficientEncryption, handle: 9,
                                                                  .encryptionFailed(.connectionTerminatedMICFailure)))
        #expect(mic.hciStatus == .connectionTerminatedMICFailure)
    }
}
