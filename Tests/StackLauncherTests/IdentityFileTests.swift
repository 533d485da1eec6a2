import BluetoothCore
import Foundation
import Host
import StackLauncher
import Testing
import BluetoothEngine

/// The persistent local identity (random static address, IRK, CSRK) kept next to the bonds, and the launcher
/// option that uses it.
@Suite struct IdentityFileTests {
    static func folder() -> String {
        (temporaryPath("x") as NSString).deletingLastPathComponent + "/bonds"
    }

    @Test func createdOnFirstUseWithMode0600ThenReadBack() throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = LocalIdentityFile(directory: directory)
        #expect(try file.load() == nil)
        let first = try file.loadOrCreate()
        #expect(first.address.kind == .randomStatic)
        #expect(first.identityResolvingKey != first.signatureKey)
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(file.path == directory + "/local-identity")
        #expect(try file.loadOrCreate() == first)
        #expect(try LocalIdentityFile(directory: directory).load() == first)
        // The bond store in the same directory does not take it for a bond.
        let bonds = FileBondStore(directory: directory).loadBonds()
        #expect(bonds.bonds.isEmpty && bonds.problems.isEmpty)
        // Nothing else was left behind (no temporary file).
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["local-identity"])
    }

    @Test func corruptFileIsReportedAndNotOverwritten() async throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = LocalIdentityFile(directory: directory)
        let garbage = Data("{\"version\": 1, \"address\": \"00:11:22:33:44:55\", \"irk\": \"00\", \"csrk\": \"00\"}".utf8)
        try garbage.write(to: URL(fileURLWithPath: file.path))
        #expect(throws: BondStoreError.self) { try file.loadOrCreate() }
        do {
            _ = try file.loadOrCreate()
        } catch {
            #expect(error.code == .corrupt)
            #expect(error.path == file.path)
        }
        #expect(FileManager.default.contents(atPath: file.path) == garbage)
        var options = isolatedOptions()
        options.identity = .persistent(directory: directory)
        let failure = await launchError("in-process", options: options)
        #expect(failure?.code == .identityFailed)
        #expect(FileManager.default.contents(atPath: file.path) == garbage)
    }

    @Test func persistentIdentityIsTheSameOnTwoLaunches() async throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = isolatedOptions()
        options.identity = .persistent(directory: directory)
        var seen: [(BluetoothAddress, BluetoothAddress?, String)] = []
        for _ in 0..<2 {
            let stack = try await StackLauncher.open("in-process", options: options)
            let (identity, irk) = stack.eventLoop.sync { (stack.host.localIdentityAddress, stack.host.localIdentityResolvingKey) }
            seen.append((stack.controllerInfo.ownAddress, identity, irk.map { "\($0)" } ?? "none"))
            stack.shutdown()
        }
        let stored = try #require(try LocalIdentityFile(directory: directory).load())
        #expect(seen.count == 2)
        for (address, identity, irk) in seen {
            #expect(address == stored.address)
            #expect(identity == stored.address)
            #expect(irk == "\(stored.identityResolvingKey)")
        }
        // Without the option each launch is a new identity, and no file is written.
        let plainDirectory = Self.folder()
        let a = try await StackLauncher.open("in-process", options: isolatedOptions())
        let b = try await StackLauncher.open("in-process", options: isolatedOptions())
        #expect(a.controllerInfo.ownAddress != b.controllerInfo.ownAddress)
        #expect(a.controllerInfo.ownAddress != stored.address)
        a.shutdown()
        b.shutdown()
        #expect(!FileManager.default.fileExists(atPath: plainDirectory))
    }
}
