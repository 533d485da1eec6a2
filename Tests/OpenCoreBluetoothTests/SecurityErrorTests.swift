import BluetoothCore
import GATT
import Host
import Testing
@testable import OpenCoreBluetooth

/// How security outcomes reach a CoreBluetooth app: ATT security errors as `CBATTError`, a peer that removed its
/// pairing information as `CBError.peerRemovedPairingInformation`, an SMP timeout as `.encryptionTimedOut`
/// (Core 5.4 Vol 3 Part F §3.4.1.1; Vol 3 Part H §3.4), and where bonds are kept (`OCB_BONDS`).
@Suite struct SecurityErrorTests {
    @Test func securityATTErrorsStayATTErrorsWhileSecuringDidNotFail() throws {
        for code: UInt8 in [0x05, 0x08, 0x0C, 0x0F] {
            let error = HostCentralBackend.backendError(.attError(ATTErrorCode(code), handle: 0x0003), securityFailure: nil)
            #expect(error == .att(code))
            let delivered = try #require(error.cbError as? CBATTError)
            #expect(delivered.attErrorCode == code)
        }
        let insufficient = HostCentralBackend.backendError(.attError(.insufficientEncryption, handle: 3), securityFailure: nil)
        #expect((insufficient.cbError as? CBATTError)?.code == .insufficientEncryption)
    }

    @Test func aLostBondBecomesPeerRemovedPairingInformation() throws {
        let error = HostCentralBackend.backendError(.attError(.insufficientAuthentication, handle: 3),
                                                    securityFailure: .peerRemovedPairingInformation)
        let delivered = try #require(error.cbError as? CBError)
        #expect(delivered.code == .peerRemovedPairingInformation)
        #expect(delivered.errorCode == 14)
    }

    @Test func anSMPTimeoutBecomesEncryptionTimedOut() throws {
        let error = HostCentralBackend.backendError(.attError(.insufficientEncryption, handle: 3), securityFailure: .encryptionTimedOut)
        #expect((error.cbError as? CBError)?.code == .encryptionTimedOut)
        #expect((error.cbError as? CBError)?.errorCode == 15)
        // Other ATT errors are not security outcomes, whatever happened to the link's security.
        let other = HostCentralBackend.backendError(.attError(.readNotPermitted, handle: 3), securityFailure: .encryptionTimedOut)
        #expect(other == .att(0x02))
    }

    @Test func pairingPromptsAreAnsweredLikeAcceptedSystemDialogs() {
        #expect(HostBackend.automaticAnswer(.confirmNumericValue(123_456)) == .confirm(true))
        #expect(HostBackend.automaticAnswer(.confirmJustWorks) == .confirm(true))
        #expect(HostBackend.automaticAnswer(.enterPasskey) == .passkey(nil))
        #expect(HostBackend.automaticAnswer(.displayPasskey(1)) == nil)
    }

    @Test func bondsPersistOnlyWithOCBBonds() {
        #expect(HostBackend.bondsDirectory([:]) == nil)
        #expect(HostBackend.bondsDirectory(["OCB_BONDS": ""]) == nil)
        #expect(HostBackend.bondsDirectory(["OCB_BONDS": "1"]) == FileBondStore.defaultDirectory())
        #expect(HostBackend.bondsDirectory(["OCB_BONDS": "/tmp/ocb-bonds-x"]) == "/tmp/ocb-bonds-x")
    }
}
