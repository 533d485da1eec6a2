import BluetoothCore
@testable import Host
import L2CAP
import Testing
import BluetoothEngine

/// A channel server that requires encryption (CoreBluetooth's `publishL2CAPChannel(withEncryption: true)`): an
/// LE Credit Based Connection Request on a link that is not encrypted is refused with Insufficient Authentication
/// (no bond: pair first) or Insufficient Encryption (bonded: encrypt), Core 5.4 Vol 3 Part A §4.23; once the link
/// is encrypted the same request opens the channel.
@Suite struct EncryptedChannelServerTests {
    @Test func anUnencryptedLinkIsRefusedUntilItIsSecured() throws {
        let secure = SecureStacks()
        let stacks = secure.stacks
        #expect(stacks.connect())
        let registered = Recorder<Bool>()
        stacks.peripheral.registerL2CAPServer(L2CAPChannelServer(psm: 0x0085, mtu: 100, mps: 100, initialCredits: 2),
                                              requiresEncryption: true) { registered.append((try? $0.get()) != nil) }
        stacks.loop.run()
        #expect(registered.values == [true])

        func open() -> Result<L2CAPChannelInfo, HostError>? {
            let result = Recorder<Result<L2CAPChannelInfo, HostError>>()
            stacks.central.openL2CAPChannel(connectionHandle: stacks.centralHandle, psm: 0x0085) { result.append($0) }
            stacks.run(until: { result.count == 1 })
            return result.last
        }
        guard case .failure(let refused)? = open() else {
            Issue.record("an unencrypted, unbonded central opened the channel")
            return
        }
        #expect(refused.l2capRefusal == .allConnectionsRefusedInsufficientAuthentication)

        guard case .success? = secure.pair() else {
            Issue.record("pairing failed")
            return
        }
        guard case .success(let info)? = open() else {
            Issue.record("the channel did not open on the encrypted link")
            return
        }
        #expect(info.psm == 0x0085)

        // Bonded, reconnected, not yet encrypted: Insufficient Encryption (the central has the key to encrypt).
        #expect(secure.reconnect())
        guard case .failure(let unencrypted)? = open() else {
            Issue.record("a bonded central opened the channel on an unencrypted link")
            return
        }
        #expect(unencrypted.l2capRefusal == .allConnectionsRefusedInsufficientEncryption)
        stacks.disconnectAndCheckLeaks()
    }
}
