import ATT
import BluetoothCore
import GATT
import Testing

/// A request refused for security, whose owner then failed to secure the link (Core 5.4 Vol 3 Part C §10.3.2):
/// the procedure fails with ``GATTClientError/securityFailed(_:handle:_:)``, which still gives the ATT error.
@Suite("GATT client: security failures")
struct GATTClientSecurityFailureTests {
    /// A client with a read outstanding; returns it and the read's identifier.
    func clientReading(_ handle: UInt16) -> (GATTClient, GATTOperationID) {
        var client = GATTClient()
        let (id, actions) = client.enqueue(.readCharacteristicValue(handle: handle))
        #expect(actions == [.sendRequest(.readRequest(handle: handle))])
        return (client, id)
    }

    @Test("the held Error Response with a failure: securityFailed with the ATT error, handle and reason")
    func heldErrorResponse() {
        var (client, id) = clientReading(0x0010)
        let failure = GATTSecurityFailure.pairingFailed(.confirmValueFailed, remote: true)
        let answer: Result<ATTPDU, ATTBearerError> = .success(.errorResponse(requestOpcode: .readRequest, handle: 0x0010, error: .insufficientAuthentication))
        let actions = client.receive(bearerResult: answer, securityFailure: failure)
        #expect(actions == [.complete(id, .failure(.securityFailed(.insufficientAuthentication, handle: 0x0010, failure)))])
        let error = GATTClientError.securityFailed(.insufficientAuthentication, handle: 0x0010, failure)
        #expect(error.attErrorCode == .insufficientAuthentication)
        #expect(error.securityFailure == failure)
        #expect(error.description == "Insufficient Authentication (0x05) (handle 0x0010); securing the link failed: pairing failed: Confirm Value Failed (0x04), remote")
        #expect(client.isIdle)
    }

    @Test("the bearer's errorResponse failure form is mapped too, and the next procedure starts")
    func bearerErrorForm() {
        var (client, id) = clientReading(0x0020)
        let (next, queued) = client.enqueue(.readCharacteristicValue(handle: 0x0030))
        #expect(queued.isEmpty)
        let answer: Result<ATTPDU, ATTBearerError> = .failure(ATTBearerError(.errorResponse, "refused", attError: .insufficientEncryption, handle: 0x0020))
        let actions = client.receive(bearerResult: answer, securityFailure: .timedOut)
        #expect(actions == [
            .complete(id, .failure(.securityFailed(.insufficientEncryption, handle: 0x0020, .timedOut))),
            .sendRequest(.readRequest(handle: 0x0030)),
        ])
        #expect(client.pendingProcedureCount == 1)
        _ = next
    }

    @Test("other outcomes pass through unchanged: a response, a timeout")
    func otherOutcomesUnchanged() {
        var (client, id) = clientReading(0x0010)
        #expect(client.receive(bearerResult: .success(.readResponse(value: [1])), securityFailure: .bondLost)
            == [.complete(id, .success(.value([1])))])
        var (timedOut, id2) = clientReading(0x0010)
        #expect(timedOut.receive(bearerResult: .failure(ATTBearerError(.transactionTimeout, "30 s")), securityFailure: .bondLost)
            == [.complete(id2, .failure(.bearerFailed(.transactionTimeout)))])
    }

    @Test("descriptions of each failure")
    func descriptions() {
        #expect(GATTSecurityFailure.timedOut.description == "SMP timeout")
        #expect(GATTSecurityFailure.encryptionFailed(.connectionTerminatedMICFailure).description
            == "encryption failed: Connection Terminated due to MIC Failure (0x3D)")
        #expect(GATTSecurityFailure.bondLost.description.contains("PIN or Key Missing"))
        #expect(GATTSecurityFailure.pairingFailed(.passkeyEntryFailed, remote: false).description
            == "pairing failed: Passkey Entry Failed (0x01), local")
        #expect(GATTClientError.attError(.readNotPermitted, handle: 1).securityFailure == nil)
    }
}
