import BluetoothCore
import BluetoothCrypto
import Foundation
@testable import Host
import SMP
import Testing
import BluetoothEngine

@Suite("Bond store: JSON files 0600 in a 0700 directory, atomic replace, corrupt files reported and untouched")
struct BondStoreTests {
    func sampleBond(_ value: UInt64 = 0xC0FFEE_000001) -> Bond {
        var bond = Bond(identityAddress: BluetoothAddress(value | 0xC000_0000_0000, type: .random), keySize: 16,
                        authenticated: true, secureConnections: false)
        bond.peerIdentityResolvingKey = Block128(high: 1, low: 2)
        bond.peerLongTermKey = SMPLongTermKey(key: Array(1...16), ediv: 0x1234, rand: 0x0102_0304_0506_0708)
        bond.localLongTermKey = SMPLongTermKey(key: Array(17...32), ediv: 7, rand: 9)
        bond.peerSignatureKey = Block128(high: 3, low: 4)
        bond.peerSignCounter = 5
        bond.clientConfigurations = [0x000C: 0x0001, 0x0010: 0x0002]
        return bond
    }

    func temporaryDirectory() -> String {
        NSTemporaryDirectory() + "ocb-bonds-\(UInt64.random(in: 0...UInt64.max))/bonds"
    }

    func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? nil
    }

    @Test("round trip through JSON, modes 0600 / 0700, no temporary file left, replace in place")
    func roundTrip() throws {
        let directory = temporaryDirectory()
        let store = FileBondStore(directory: directory)
        let bond = sampleBond()
        try store.saveBond(bond)
        let path = store.path(for: bond.identityAddress)
        #expect(mode(path) == 0o600)
        #expect(mode(directory) == 0o700)
        #expect(store.loadBonds().bonds == [bond])
        #expect(store.loadBonds().problems.isEmpty)
        var changed = bond
        changed.clientConfigurations = [:]
        try store.saveBond(changed)
        #expect(store.loadBonds().bonds == [changed])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == [(path as NSString).lastPathComponent])
        try store.removeBond(identityAddress: bond.identityAddress)
        #expect(store.loadBonds().bonds.isEmpty)
        #expect(throws: BondStoreError.self) { try store.removeBond(identityAddress: bond.identityAddress) }
        try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent)
    }

    @Test("a corrupt file is reported with its path and left untouched; other bonds still load and save")
    func corruptFile() throws {
        let directory = temporaryDirectory()
        let store = FileBondStore(directory: directory)
        let good = sampleBond(1), broken = sampleBond(2)
        try store.saveBond(good)
        let brokenPath = store.path(for: broken.identityAddress)
        let garbage = Data("{\"version\": 1, \"identityAddress\": ".utf8)
        try garbage.write(to: URL(fileURLWithPath: brokenPath))
        let contents = store.loadBonds()
        #expect(contents.bonds == [good])
        #expect(contents.problems.count == 1 && contents.problems.first?.path == brokenPath && contents.problems.first?.code == .corrupt)
        #expect(throws: BondStoreError.self) { try store.saveBond(broken) }
        #expect(FileManager.default.contents(atPath: brokenPath) == garbage)
        try store.saveBond(sampleBond(3))
        #expect(store.loadBonds().bonds.count == 2)

        // A host on this store reports it as an event when it starts, and still works.
        var configuration = HostConfiguration(address: .randomStatic(seed: 1))
        configuration.security.bondStore = store
        let stacks = TwoStacks(peripheral: configuration)
        #expect(stacks.connect())
        #expect(stacks.peripheralEvents.values.contains { event in
            if case .bondStoreError(let error) = event { error.path == brokenPath } else { false }
        })
        #expect(FileManager.default.contents(atPath: brokenPath) == garbage)
        stacks.disconnectAndCheckLeaks()
        try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent)
    }

    @Test("the default directory follows XDG_DATA_HOME")
    func defaultDirectory() {
        let directory = FileBondStore.defaultDirectory()
        #expect(directory.hasSuffix("/opencorebluetooth/bonds"))
    }
}
