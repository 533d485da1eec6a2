import BluetoothCore
import BluetoothCrypto
import BluetoothRuntime
import HCI
import Testing
@testable import VirtualController

/// Link-layer privacy in our controller (issue 15 item 4; Core 5.4 Vol 6 Part B §6, Vol 4 Part E §7.8.38–§7.8.45):
/// the resolving list's rules, an advertiser that uses and rotates an RPA from its local IRK, a scanner that
/// resolves it to the identity before its host sees it, and a connection to the identity with LE Enhanced
/// Connection Complete carrying both RPAs.
@Suite struct PrivacyTests {
    /// The advertiser's IRK (as HCI carries it: least significant octet first) and the scanner's.
    static let advertiserIRK: [UInt8] = Array(0x10...0x1F)
    static let scannerIRK: [UInt8] = Array(0x30...0x3F)
    static let zeros = [UInt8](repeating: 0, count: 16)

    private func entry(_ host: ScriptedHost, peerIRK: [UInt8], localIRK: [UInt8]) -> LEResolvingListEntry {
        LEResolvingListEntry(peerIdentityAddressType: .public, peerIdentityAddress: host.controller.publicAddress,
                             peerIRK: peerIRK, localIRK: localIRK)
    }

    @Test func theResolvingListsRules() {
        let world = World(devices: 2)
        let host = world.hosts[0]
        let peer = world.hosts[1]
        func run(_ command: HCICommand) -> HCIStatus? {
            host.drain()
            host.send(command)
            world.loop.run()
            return host.status(command.opcode)
        }
        #expect(run(.leAddDeviceToResolvingList(entry(peer, peerIRK: Self.advertiserIRK, localIRK: Self.scannerIRK))) == .success)
        #expect(run(.leAddDeviceToResolvingList(entry(peer, peerIRK: Self.advertiserIRK, localIRK: Self.zeros))) == .invalidCommandParameters)
        #expect(run(.leAddDeviceToResolvingList(LEResolvingListEntry(
            peerIdentityAddressType: .publicIdentity, peerIdentityAddress: BluetoothAddress(1), peerIRK: Self.zeros, localIRK: Self.zeros)))
            == .invalidCommandParameters)
        for index in 1..<16 {
            #expect(run(.leAddDeviceToResolvingList(LEResolvingListEntry(
                peerIdentityAddressType: .random, peerIdentityAddress: BluetoothAddress(0xC0_00_00_00_00_00 + UInt64(index), type: .random),
                peerIRK: Self.zeros, localIRK: Self.zeros))) == .success)
        }
        #expect(run(.leAddDeviceToResolvingList(LEResolvingListEntry(
            peerIdentityAddressType: .random, peerIdentityAddress: BluetoothAddress(0xC1_00_00_00_00_00, type: .random),
            peerIRK: Self.zeros, localIRK: Self.zeros))) == .memoryCapacityExceeded)
        #expect(run(.leRemoveDeviceFromResolvingList(addressType: .random, address: BluetoothAddress(0xC1_00_00_00_00_00, type: .random)))
                == .unknownConnectionIdentifier)
        #expect(run(.leRemoveDeviceFromResolvingList(addressType: .public, address: peer.controller.publicAddress)) == .success)
        #expect(run(.leSetResolvablePrivateAddressTimeout(0)) == .invalidCommandParameters)
        #expect(run(.leSetResolvablePrivateAddressTimeout(0x0E11)) == .invalidCommandParameters)
        #expect(run(.leSetResolvablePrivateAddressTimeout(60)) == .success)
        // While advertising with resolution on, neither the list nor resolution may change.
        #expect(run(.leSetAddressResolutionEnable(true)) == .success)
        #expect(run(.leSetAdvertisingEnable(true)) == .success)
        #expect(run(.leClearResolvingList) == .commandDisallowed)
        #expect(run(.leSetAddressResolutionEnable(false)) == .commandDisallowed)
        #expect(run(.leSetAdvertisingEnable(false)) == .success)
        #expect(run(.leClearResolvingList) == .success)
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing" && settled.links == 0)
    }

    /// LE Read Resolving List Size, LE Read Peer/Local Resolvable Address and LE Set Privacy Mode (§7.8.41–§7.8.43,
    /// §7.8.77): the RPAs in use once a peer was heard and a local one generated; network privacy mode ignores a
    /// listed peer that advertises with its identity address, device privacy mode hears it.
    @Test func theResolvableAddressesAndThePrivacyMode() throws {
        let world = World(devices: 2)
        let scanner = world.hosts[0], peer = world.hosts[1]
        func run(_ command: HCICommand) -> HCIEvent? {
            scanner.drain()
            scanner.send(command)
            world.loop.run()
            return scanner.response(command.opcode)
        }
        let identity = peer.controller.publicAddress
        guard case .commandComplete(_, _, .leReadResolvingListSize(.success, 16)) = run(.leReadResolvingListSize) else {
            Issue.record("resolving list size")
            return
        }
        #expect(run(.leReadPeerResolvableAddress(addressType: .public, address: identity))?.commandResponse?.status
                == .unknownConnectionIdentifier, "not in the list")
        #expect(run(.leSetPrivacyMode(addressType: .public, address: identity, mode: 2))?.commandResponse?.status == .invalidCommandParameters)
        #expect(run(.leAddDeviceToResolvingList(entry(peer, peerIRK: Self.advertiserIRK, localIRK: Self.scannerIRK)))?.commandResponse?.status == .success)
        #expect(run(.leReadPeerResolvableAddress(addressType: .public, address: identity))?.commandResponse?.status
                == .unknownConnectionIdentifier, "no RPA seen yet")
        #expect(run(.leSetAddressResolutionEnable(true))?.commandResponse?.status == .success)
        // The peer advertises with its identity (public) address: ignored in network privacy mode.
        peer.send(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 32, intervalMax: 32, advertisingType: .nonConnectableUndirected)))
        peer.send(.leSetAdvertisingData([0x02, 0x01, 0x04]))
        peer.send(.leSetAdvertisingEnable(true))
        scanner.send(.leSetScanParameters(LEScanParameters(scanType: 0, ownAddressType: .publicIdentity)))
        scanner.send(.leSetScanEnable(enable: true, filterDuplicates: false))
        world.advance(.seconds(1))
        #expect(scanner.advertisingReports.isEmpty, "network privacy mode: the identity address is not heard")
        guard case .commandComplete(_, _, .leReadLocalResolvableAddress(.success, let local)) =
                run(.leReadLocalResolvableAddress(addressType: .public, address: identity)) else {
            Issue.record("no local RPA after scanning with Own_Address_Type 0x02")
            return
        }
        #expect(try ResolvablePrivateAddress.resolves(local, irk: Block128(littleEndian: Self.scannerIRK)))
        #expect(run(.leSetPrivacyMode(addressType: .public, address: identity, mode: 1))?.commandResponse?.status == .commandDisallowed,
                "not while scanning with resolution on")
        scanner.send(.leSetScanEnable(enable: false, filterDuplicates: false))
        #expect(run(.leSetPrivacyMode(addressType: .public, address: identity, mode: 1))?.commandResponse?.status == .success)
        scanner.send(.leSetScanEnable(enable: true, filterDuplicates: false))
        world.advance(.seconds(1))
        #expect(!scanner.advertisingReports.isEmpty && scanner.advertisingReports.allSatisfy { $0.address == identity },
                "device privacy mode: the identity is heard")
        // The peer now advertises with an RPA from its IRK: resolved, and readable as the peer's RPA.
        peer.send(.leSetAdvertisingEnable(false))
        peer.send(.leAddDeviceToResolvingList(entry(scanner, peerIRK: Self.zeros, localIRK: Self.advertiserIRK)))
        peer.send(.leSetAddressResolutionEnable(true))
        peer.send(.leSetAdvertisingParameters(LEAdvertisingParameters(
            intervalMin: 32, intervalMax: 32, advertisingType: .nonConnectableUndirected, ownAddressType: .publicIdentity,
            peerAddressType: .public, peerAddress: scanner.controller.publicAddress)))
        peer.send(.leSetAdvertisingEnable(true))
        world.advance(.seconds(1))
        guard case .commandComplete(_, _, .leReadPeerResolvableAddress(.success, let peerRPA)) =
                run(.leReadPeerResolvableAddress(addressType: .public, address: identity)) else {
            Issue.record("no peer RPA after hearing one")
            return
        }
        #expect(try ResolvablePrivateAddress.resolves(peerRPA, irk: Block128(littleEndian: Self.advertiserIRK)))
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing" && settled.links == 0)
    }

    /// Host 0 advertises with Own_Address_Type 0x02 and its local IRK for host 1; host 1 (resolving list: host 0's
    /// IRK, resolution on) sees host 0's identity with type 0x02; host 2 (no list) sees an RPA that resolves with
    /// the IRK, and a new one after the RPA timeout.
    @Test func anAdvertiserRotatesItsRPAAndABondedScannerSeesItsIdentity() throws {
        let world = World(devices: 3)
        let advertiser = world.hosts[0], bonded = world.hosts[1], stranger = world.hosts[2]
        advertiser.send(.leAddDeviceToResolvingList(entry(bonded, peerIRK: Self.scannerIRK, localIRK: Self.advertiserIRK)))
        advertiser.send(.leSetResolvablePrivateAddressTimeout(2))
        advertiser.send(.leSetAddressResolutionEnable(true))
        advertiser.send(.leSetAdvertisingParameters(LEAdvertisingParameters(
            intervalMin: 160, intervalMax: 160, ownAddressType: .publicIdentity, peerAddressType: .public,
            peerAddress: bonded.controller.publicAddress)))
        advertiser.send(.leSetAdvertisingData([0x02, 0x01, 0x06]))
        advertiser.send(.leSetAdvertisingEnable(true))
        bonded.send(.leAddDeviceToResolvingList(entry(advertiser, peerIRK: Self.advertiserIRK, localIRK: Self.scannerIRK)))
        bonded.send(.leSetAddressResolutionEnable(true))
        for scanner in [bonded, stranger] {
            scanner.send(.leSetScanParameters(LEScanParameters(scanType: 0)))
            scanner.send(.leSetScanEnable(enable: true, filterDuplicates: false))
        }
        world.advance(.seconds(5))
        let seen = stranger.advertisingReports
        try #require(seen.count > 10)
        let irk = try Block128(littleEndian: Self.advertiserIRK)
        #expect(seen.allSatisfy { $0.address.kind == .resolvablePrivate && $0.addressType == .random })
        #expect(seen.allSatisfy { (try? ResolvablePrivateAddress.resolves($0.address, irk: irk)) == true })
        #expect(Set(seen.map(\.address)).count >= 2, "the RPA rotates every 2 s")
        let identified = bonded.advertisingReports
        try #require(!identified.isEmpty)
        #expect(identified.allSatisfy { $0.addressType == .publicIdentity && $0.address == advertiser.controller.publicAddress })
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing" && settled.links == 0)
    }

    /// Host 1 connects to host 0's identity (Peer_Address_Type 0x02) while host 0 advertises with an RPA, and uses
    /// an RPA itself (Own_Address_Type 0x02): LE Enhanced Connection Complete on both ends names the peer's identity
    /// (type 0x02) and carries the local and the peer's RPA.
    @Test func aConnectionToAnIdentityCarriesBothRPAs() throws {
        let world = World(devices: 2)
        let peripheral = world.hosts[0], central = world.hosts[1]
        for (host, peer, local, peerIRK) in [(peripheral, central, Self.advertiserIRK, Self.scannerIRK),
                                             (central, peripheral, Self.scannerIRK, Self.advertiserIRK)] {
            host.send(.leSetEventMask(0x0000_0000_000F_FFFF))  // LE Enhanced Connection Complete (bit 9) too
            host.send(.leAddDeviceToResolvingList(entry(peer, peerIRK: peerIRK, localIRK: local)))
            host.send(.leSetAddressResolutionEnable(true))
        }
        peripheral.send(.leSetAdvertisingParameters(LEAdvertisingParameters(
            intervalMin: 32, intervalMax: 32, ownAddressType: .publicIdentity, peerAddressType: .public,
            peerAddress: central.controller.publicAddress)))
        peripheral.send(.leSetAdvertisingEnable(true))
        central.send(.leCreateConnection(LECreateConnectionParameters(
            peerAddressType: .publicIdentity, peerAddress: peripheral.controller.publicAddress, ownAddressType: .publicIdentity,
            connection: LEConnectionParameters(intervalMin: 24, intervalMax: 24, supervisionTimeout: 100))))
        world.advance(.seconds(2))
        func enhanced(_ host: ScriptedHost) -> LEEnhancedConnectionComplete? {
            host.events.compactMap { event -> LEEnhancedConnectionComplete? in
                if case .leMeta(.enhancedConnectionComplete(let complete)) = event { return complete }
                return nil
            }.first
        }
        let atCentral = try #require(enhanced(central))
        let atPeripheral = try #require(enhanced(peripheral))
        #expect(atCentral.connection.status == .success && atPeripheral.connection.status == .success)
        #expect(atCentral.connection.peerAddressType == .publicIdentity && atCentral.connection.peerAddress == peripheral.controller.publicAddress)
        #expect(atPeripheral.connection.peerAddressType == .publicIdentity && atPeripheral.connection.peerAddress == central.controller.publicAddress)
        let centralIRK = try Block128(littleEndian: Self.scannerIRK), peripheralIRK = try Block128(littleEndian: Self.advertiserIRK)
        #expect(try ResolvablePrivateAddress.resolves(atCentral.localResolvablePrivateAddress, irk: centralIRK))
        #expect(try ResolvablePrivateAddress.resolves(atCentral.peerResolvablePrivateAddress, irk: peripheralIRK))
        #expect(atPeripheral.localResolvablePrivateAddress == atCentral.peerResolvablePrivateAddress)
        #expect(atPeripheral.peerResolvablePrivateAddress == atCentral.localResolvablePrivateAddress)
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing" && settled.links == 0)
    }
}
