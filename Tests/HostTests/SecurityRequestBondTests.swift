import BluetoothCore
import BluetoothRuntime
import HCI
@testable import Host
import SMP
import Testing
import BluetoothEngine

/// A peripheral that asks for MITM protection (Security Request with MITM, Core 5.4 Vol 3 Part H §2.4.6, §3.6.7)
/// from a bonded central that has neither input nor output: the central encrypts with its unauthenticated bond, as
/// Linux's SMP does, instead of starting a Just Works pairing the peripheral would refuse (bluetoothd does:
/// Scripts/vm/scenarios/bluez-pairing.sh); an authenticated bond meets the request anyway.
@Suite("Security Request with MITM on a bonded link")
struct SecurityRequestBondTests {
    @Test("a central without input or output encrypts with its Just Works bond, no pairing")
    func noInputNoOutputUsesTheBond() throws {
        let s = SecureStacks(central: security(store: InMemoryBondStore()), peripheral: security(store: InMemoryBondStore()))
        #expect(s.stacks.connect())
        let first = try #require(s.pair()).get()
        #expect(first.bonded && first.authenticated == false)
        #expect(s.stacks.reconnect(advertisingAs: "again"))
        let before = s.completed(s.stacks.centralEvents).count
        let requested = Recorder<Result<PairingOutcome, HostError>>()
        s.stacks.peripheral.requestSecurity(connectionHandle: s.stacks.peripheralHandle, mitm: true) { requested.append($0) }
        #expect(s.stacks.run(until: {
            s.stacks.central.openConnections.first { $0.handle == s.stacks.centralHandle }?.isEncrypted == true
        }))
        s.stacks.loop.advance(by: .milliseconds(200))
        // Encrypted with the stored key: no new pairing on either side, no failure.
        #expect(s.completed(s.stacks.centralEvents).count == before)
        #expect(s.failures(s.stacks.centralEvents).isEmpty)
        #expect(!s.stacks.centralEvents.values.contains { if case .securityManagerPDU(_, let bytes) = $0 { bytes.first == 0x05 } else { false } })
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("an authenticated bond (passkey entry) meets the MITM request: encrypted with it, no pairing")
    func keyboardCentralPairsAgain() throws {
        let s = SecureStacks(central: security(io: .keyboardDisplay, mitm: true, store: InMemoryBondStore()),
                             peripheral: security(io: .displayOnly, store: InMemoryBondStore()))
        #expect(s.stacks.connect())
        let first = try #require(s.pair()).get()
        #expect(first.bonded && first.authenticated == true)
        #expect(s.stacks.reconnect(advertisingAs: "again"))
        let before = s.completed(s.stacks.centralEvents).count
        s.stacks.peripheral.requestSecurity(connectionHandle: s.stacks.peripheralHandle, mitm: true)
        #expect(s.stacks.run(until: {
            s.stacks.central.openConnections.first { $0.handle == s.stacks.centralHandle }?.isEncrypted == true
        }))
        s.stacks.loop.advance(by: .milliseconds(500))
        #expect(s.completed(s.stacks.centralEvents).count == before)
        #expect(s.failures(s.stacks.centralEvents).isEmpty)
        s.stacks.disconnectAndCheckLeaks()
    }
}
