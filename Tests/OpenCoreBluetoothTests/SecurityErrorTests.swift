import BluetoothCore
import GATT
import Host
import Testing
@testable import OpenCoreBluetooth
import BluetoothEngine

/// How security outcomes reach a CoreBluetooth app: ATT security errors as `CBATTError`, a peer that removed its
/// pairing information as `CBError.peerRemovedPairingInformation`, an SMP timeout as `.encryptionTimedOut`
/// (Core 5.4 Vol 3 Part F §3.4.1.1; Vol 3 Part H §3.4), and where bonds are kept (`OCB_BONDS`).
@Suite struct SecurityErrorTests {
    @Test func securityATTErrorsStayATTErrorsWhileSecuringDidNotFail() throws {
        for code: UInt8 in [0x05, 0x08, 0x0C, 0x0F] {
            let error = EngineCentralBackend.backendError(.attError(ATTErrorCode(code), handle: 0x0003), securityFailure: nil)
            #expect(error == .att(code))
            let delivered = try #require(error.cbError as? CBATTError)
            #expect(delivered.attErrorCode == code)
        }
        let insufficient = EngineCentralBackend.backendError(.attError(.insufficientEncryption, handle: 3), securityFailure: nil)
        #expect((insufficient.cbError as? CBATTError)?.code == .insufficientEncryption)
    }

    @Test func aLostBondBecomesPeerRemovedPairingInformation() throws {
        let error = EngineCentralBackend.backendError(.attError(.insufficientAuthentication, handle: 3),
                                                    securityFailure: .peerRemovedPairingInformation)
        let delivered = try #require(error.cbError as? CBError)
        #expect(delivered.code == .peerRemovedPairingInformation)
        #expect(delivered.errorCode == 14)
    }

    @Test func anSMPTimeoutBecomesEncryptionTimedOut() throws {
        let error = EngineCentralBackend.backendError(.attError(.insufficientEncryption, handle: 3), securityFailure: .encryptionTimedOut)
        #expect((error.cbError as? CBError)?.code == .encryptionTimedOut)
        #expect((error.cbError as? CBError)?.errorCode == 15)
        // Other ATT errors are not security outcomes, whatever happened to the link's security.
        let other = EngineCentralBackend.backendError(.attError(.readNotPermitted, handle: 3), securityFailure: .encryptionTimedOut)
        #expect(other == .att(0x02))
    }

    /// Without an agent the stacks answer as `OCBPairingAgent.accepting` does.
    @Test func pairingPromptsAreAnsweredLikeAcceptedSystemDialogs() {
        func answer(_ interaction: PairingInteraction) -> PairingAnswer? {
            let answer = LockedBox<PairingAnswer?>(nil)
            OCBPairingAgent.accepting.ask(interaction, peer: .zero) { answer.value = $0 }
            return answer.value
        }
        #expect(answer(.confirmNumericValue(123_456)) == .confirm(true))
        #expect(answer(.confirmJustWorks) == .confirm(true))
        #expect(answer(.enterPasskey) == .passkey(nil))
        #expect(answer(.displayPasskey(1)) == nil)
    }

    @Test func bondsPersistOnlyWithOCBBonds() {
        #expect(HostBackend.bondsDirectory([:]) == nil)
        #expect(HostBackend.bondsDirectory(["OCB_BONDS": ""]) == nil)
        #expect(HostBackend.bondsDirectory(["OCB_BONDS": "1"]) == FileBondStore.defaultDirectory())
        #expect(HostBackend.bondsDirectory(["OCB_BONDS": "/tmp/ocb-bonds-x"]) == "/tmp/ocb-bonds-x")
    }
}

/// ``GATTClientError/securityFailed(_:handle:_:)`` (a request whose securing failed) as CoreBluetooth reports it.
@Suite struct SecurityFailedRequestTests {
    @Test func pairingOrEncryptionFailuresKeepTheServersATTError() throws {
        let refused = EngineCentralBackend.backendError(.securityFailed(.insufficientAuthentication, handle: 3,
                                                                      .pairingFailed(.pairingNotSupported, remote: true)))
        #expect(refused == .att(0x05))
        #expect((refused.cbError as? CBATTError)?.code == .insufficientAuthentication)
        let mic = EngineCentralBackend.backendError(.securityFailed(.insufficientEncryption, handle: 3,
                                                                  .encryptionFailed(.connectionTerminatedMICFailure)))
        #expect((mic.cbError as? CBATTError)?.code == .insufficientEncryption)
        let keySize = EngineCentralBackend.backendError(.securityFailed(.insufficientEncryptionKeySize, handle: 3, .other("no SMP")))
        #expect((keySize.cbError as? CBATTError)?.code == .insufficientEncryptionKeySize)
    }

    @Test func aLostBondAndAnSMPTimeoutBecomeTheirCBErrors() throws {
        let lost = EngineCentralBackend.backendError(.securityFailed(.insufficientEncryption, handle: 3, .bondLost))
        #expect((lost.cbError as? CBError)?.code == .peerRemovedPairingInformation)
        let timedOut = EngineCentralBackend.backendError(.securityFailed(.insufficientAuthentication, handle: 3, .timedOut))
        #expect((timedOut.cbError as? CBError)?.code == .encryptionTimedOut)
        // Also through the form that knows the link's earlier failure.
        let both = EngineCentralBackend.backendError(.securityFailed(.insufficientEncryption, handle: 3, .timedOut),
                                                   securityFailure: .peerRemovedPairingInformation)
        #expect((both.cbError as? CBError)?.code == .encryptionTimedOut)
    }

    @Test func hostSecurityErrorsChooseTheDisconnectionCode() {
        #expect(EngineCentralBackend.securityFailureCode(.security(.bondLost(identity: BluetoothAddress(1, type: .public))))
            == .peerRemovedPairingInformation)
        #expect(EngineCentralBackend.securityFailureCode(.security(.smpTimeout)) == .encryptionTimedOut)
        #expect(EngineCentralBackend.securityFailureCode(.security(.pairingFailed(.confirmValueFailed, remote: true))) == nil)
        #expect(EngineCentralBackend.securityFailureCode(.security(.encryptionFailed(.connectionTerminatedMICFailure))) == nil)
        #expect(EngineCentralBackend.securityFailureCode(HostError(.disconnected, "gone")) == nil)
    }
}
