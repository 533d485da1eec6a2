import ATT
import BluetoothCore
import Testing
import TestSupport

/// Enhanced ATT bearers (Core 5.4 Vol 3 Part F §3.2.11): ATT_MTU from L2CAP, no Exchange MTU in either
/// direction, raised by reconfiguration; otherwise the same sequential machine as the unenhanced bearer.
@Suite struct ATTEnhancedBearerTests {
    @Test func mtuComesFromL2CAPAndNeverFromAnExchange() throws {
        var bearer = ATTBearer(enhancedMTU: 100)
        #expect(bearer.isEnhanced && bearer.mtu == 100 && bearer.mtuExchanged)
        // Our client does not send Exchange MTU on it.
        let (id, actions) = bearer.exchangeMTU(now: .zero)
        guard case .response(id, .failure(let error))? = actions.first else {
            Issue.record("expected a refusal, got \(actions)")
            return
        }
        #expect(error.code == .invalidOperation && actions.count == 1)
        #expect(bearer.pendingRequestCount == 0)
        // A peer's Exchange MTU Request is answered Request Not Supported (0x06); ATT_MTU stays.
        #expect(bearer.receive(hex("02 0002"), now: .zero) == [.send(hex("01 02 0000 06"))])
        #expect(bearer.mtu == 100)
        // A request larger than 23 but within 100 octets goes out; a notification of 97 octets of value fits.
        let (_, write) = bearer.enqueue(request: .writeRequest(handle: 3, value: Array(repeating: 1, count: 97)), now: .zero)
        #expect(write.count == 1)
        #expect(throws: ATTBearerError.self) {
            try bearer.send(.handleValueNotification(handle: 3, value: Array(repeating: 1, count: 98)))
        }
        #expect(try bearer.send(.handleValueNotification(handle: 3, value: Array(repeating: 1, count: 97))).count == 1)
    }

    @Test func reconfigurationRaisesTheMTUOnly() {
        var bearer = ATTBearer(enhancedMTU: 64)
        #expect(bearer.raiseEnhancedMTU(64) == [])
        #expect(bearer.raiseEnhancedMTU(60) == [])
        #expect(bearer.raiseEnhancedMTU(517) == [.mtuChanged(517)])
        #expect(bearer.mtu == 517)
        // Never for the unenhanced bearer, whose MTU comes from Exchange MTU.
        var fixed = ATTBearer(preferredMTU: 517)
        #expect(fixed.raiseEnhancedMTU(200) == [] && fixed.mtu == 23)
        // Values below 23 are taken as 23.
        #expect(ATTBearer(enhancedMTU: 5).mtu == 23)
    }

    @Test func oneRequestAtATimeAndTimeoutPerBearer() throws {
        var bearer = ATTBearer(enhancedMTU: 64)
        let (first, sent) = bearer.enqueue(request: .readRequest(handle: 1), now: .zero)
        let (second, queued) = bearer.enqueue(request: .readRequest(handle: 2), now: .zero)
        #expect(sent == [.send(hex("0A 0100"))] && queued == [])
        #expect(bearer.receive(hex("0B AA"), now: .zero) == [
            .response(first, .success(.readResponse(value: [0xAA]))), .send(hex("0A 0200")),
        ])
        let actions = bearer.handleTimeout(now: .zero + .seconds(30))
        #expect(actions.first == .response(second, .failure(ATTBearerError(.transactionTimeout, "no response within 30 s"))))
        #expect(actions.last == .disconnectLink(.transactionTimeout))
        #expect(!bearer.isOpen)
    }
}
