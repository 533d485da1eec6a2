import BluetoothCore
import BluetoothRuntime
import HCI
@testable import Host
import SMP
import Testing

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
        #expect(peripheralOutcome.peerKeys.identityResolvingKey == central.localIdentityResolvingKey)
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
}
