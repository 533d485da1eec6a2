import BluetoothCore
import BluetoothRuntime
import HCI
@testable import Host
import SMP
import Testing
import BluetoothEngine

/// `pair` completes only once our own SMP PDUs (the central's key distribution, sent last) were acknowledged by
/// the controller (Number Of Completed Packets), so a caller that disconnects at once does not lose them.
@Suite("pairing completion waits for our key distribution to leave")
struct HostFixesPairingTests {
    @Test("the central disconnects in pair's completion: the peripheral still got the central's keys and bonded")
    func disconnectRightAfterPairing() throws {
        let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
        let s = SecureStacks(central: security(store: centralStore), peripheral: security(store: peripheralStore))
        #expect(s.stacks.connect())
        let central = s.stacks.central, handle = s.stacks.centralHandle
        let result = Recorder<Result<PairingOutcome, HostError>>()
        let disconnected = Recorder<Bool>()
        let inFlightAtCompletion = Recorder<Int>()
        central.pair(connectionHandle: handle) { outcome in
            result.append(outcome)
            inFlightAtCompletion.append(central.resources.queuedACLPackets + central.resources.inFlightACLPackets)
            central.disconnect(connectionHandle: handle) { disconnected.append((try? $0.get()) != nil) }
        }
        #expect(s.stacks.run(until: { disconnected.count == 1 && s.stacks.peripheral.openConnections.isEmpty }))
        let outcome = try #require(result.last).get()
        #expect(outcome.bonded)
        // Nothing of ours was still queued or unacknowledged when the completion came.
        #expect(inFlightAtCompletion.values == [0])
        // The peripheral got the central's identity keys: it completed pairing and stored the bond.
        let peripheralOutcome = try #require(s.completed(s.stacks.peripheralEvents).first)
        #expect(peripheralOutcome.peerKeys?.identityResolvingKey == central.localIdentityResolvingKey)
        #expect(s.failures(s.stacks.peripheralEvents).isEmpty)
        let peripheralBond = try #require(peripheralStore.loadBonds().bonds.first)
        #expect(peripheralBond.identityAddress == central.localIdentityAddress)
        #expect(peripheralBond.peerIdentityResolvingKey == central.localIdentityResolvingKey)
        #expect(centralStore.loadBonds().bonds.count == 1)
        s.stacks.expectQuiescent()
    }

    @Test("the pairingCompleted event also comes only after the keys were acknowledged")
    func eventOrderAndLinkLoss() throws {
        let s = SecureStacks(central: security(), peripheral: security())
        #expect(s.stacks.connect())
        let central = s.stacks.central, handle = s.stacks.centralHandle
        let backlog = Recorder<Int>()
        central.setEventHandler { [unowned s] event in
            s.stacks.centralEvents.append(event)
            if case .pairingCompleted = event {
                backlog.append(central.resources.queuedACLPackets + central.resources.inFlightACLPackets)
            }
        }
        let result = Recorder<Result<PairingOutcome, HostError>>()
        central.pair(connectionHandle: handle) { result.append($0) }
        #expect(s.stacks.run(until: { result.count == 1 }, limit: .seconds(60)))
        #expect(backlog.values == [0])
        #expect((try? result.last?.get())?.bonded == true)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("no polling: while completion waits for the acknowledgement, the host's timer is not re-armed every 2 ms")
    func completionWaitsForTheAckWithoutPolling() throws {
        let s = SecureStacks(central: security(), peripheral: security())
        #expect(s.stacks.connect())
        let central = s.stacks.central, handle = s.stacks.centralHandle, loop = s.stacks.loop
        let result = Recorder<Result<PairingOutcome, HostError>>()
        let backlogAtCompletion = Recorder<Int>()
        central.pair(connectionHandle: handle) { outcome in
            result.append(outcome)
            backlogAtCompletion.append(central.resources.queuedACLPackets + central.resources.inFlightACLPackets)
        }
        // Step virtual time finely; while the completion is deferred, look at the host's timer.
        var deferredSteps = 0
        var deadlines: Set<StackInstant> = []
        let end = loop.now + .seconds(60)
        loop.run()
        while result.count == 0, loop.now < end {
            loop.advance(by: .microseconds(500))
            guard let deferred = central.connections[handle]?.session?.securityLink?.deferredCompletion else { continue }
            deferredSteps += 1
            #expect(central.outbound.queuedPacketCount(for: handle) + central.outbound.inFlightPacketCount(for: handle) > 0)
            // The only security deadline is the give-up limit, one second after completion; nothing at 2 ms.
            #expect(central.securityNextDeadline == deferred.giveUpAt)
            #expect(deferred.giveUpAt - loop.now > .milliseconds(900))
            if let deadline = central.timerDeadline { deadlines.insert(deadline) }
        }
        #expect(result.count == 1)
        #expect((try? result.last?.get())?.bonded == true)
        // The wait did happen (the key distribution was in flight) and ended with the acknowledgement, not the limit.
        #expect(deferredSteps > 0)
        #expect(backlogAtCompletion.values == [0])
        // Polling would have armed a new deadline every 2 ms of the wait; here the timer keeps one or two.
        #expect(deadlines.count <= 2, "\(deadlines.sorted())")
        #expect(central.securityState.deferredPairings.isEmpty)
        #expect(central.securityNextDeadline == nil)
        s.stacks.disconnectAndCheckLeaks()
    }
}
