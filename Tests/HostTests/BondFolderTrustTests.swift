import BluetoothCore
import BluetoothEngine
import Foundation
@testable import Host
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 30 for the folders of secrets and state (``PrivateFile/prepareDirectory(_:private:)``, ``FileBondStore``):
/// created 0700, refused when others control them, and a symbolic link planted where a bond file goes is never
/// written through.
@Suite struct BondFolderTrustTests {
    func root() throws -> String {
        let path = NSTemporaryDirectory() + "ocb-bond-trust-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func bond(_ value: UInt64) -> Bond {
        Bond(identityAddress: BluetoothAddress(value | 0xC000_0000_0000, type: .random), keySize: 16, authenticated: true,
             secureConnections: true)
    }

    func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    @Test func aMissingBondFolderIsCreatedPrivateWithItsParents() throws {
        let root = try root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let store = FileBondStore(directory: root + "/a/b/bonds")
        try store.saveBond(bond(1))
        #expect(mode(root + "/a/b/bonds") == 0o700)
        #expect(mode(store.path(for: bond(1).identityAddress)) == 0o600)
    }

    @Test func aBondFolderWritableByAllIsRefused() throws {
        let root = try root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let folder = root + "/bonds"
        #expect(mkdir(folder, 0o700) == 0 && chmod(folder, 0o777) == 0)
        let error = try #require(throws: BondStoreError.self) { try FileBondStore(directory: folder).saveBond(bond(1)) }
        #expect(error.code == .ioFailed && error.path == folder)
        #expect(error.reason.contains("writable by other users"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
    }

    /// The private rule (the bond folder at its default place) refuses what the chosen rule lets through.
    @Test func theDefaultPlaceGetsThePrivateRule() throws {
        let root = try root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let folder = root + "/bonds"
        #expect(mkdir(folder, 0o700) == 0 && chmod(folder, 0o755) == 0)
        try PrivateFile.prepareDirectory(folder, private: false)
        let error = try #require(throws: BondStoreError.self) { try PrivateFile.prepareDirectory(folder, private: true) }
        #expect(error.reason.contains("open to other users (mode 0755)"))
        let link = root + "/link"
        #expect(symlink(folder, link) == 0 && chmod(folder, 0o700) == 0)
        try PrivateFile.prepareDirectory(folder, private: true)
        let linked = try #require(throws: BondStoreError.self) { try PrivateFile.prepareDirectory(link, private: true) }
        #expect(linked.reason.contains("symbolic link"))
    }

    /// A symbolic link planted at a bond file's path: to an existing file, that file is left as it was (the store
    /// refuses to replace what is not a bond); dangling, the link is replaced by the bond file and its target never
    /// created.
    @Test func aSymbolicLinkAtABondFileIsNeverWrittenThrough() throws {
        let root = try root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let store = FileBondStore(directory: root + "/bonds")
        try store.saveBond(bond(1))
        let victim = root + "/victim"
        #expect(FileManager.default.createFile(atPath: victim, contents: Data("keep".utf8)))
        let second = store.path(for: bond(2).identityAddress)
        #expect(symlink(victim, second) == 0)
        #expect(throws: BondStoreError.self) { try store.saveBond(bond(2)) }
        #expect(FileManager.default.contents(atPath: victim) == Data("keep".utf8))

        let third = store.path(for: bond(3).identityAddress)
        let nowhere = root + "/nowhere"
        #expect(symlink(nowhere, third) == 0)
        try store.saveBond(bond(3))
        #expect(!FileManager.default.fileExists(atPath: nowhere))
        var info = stat()
        #expect(lstat(third, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && info.st_mode & 0o777 == 0o600)
        #expect(store.loadBonds().bonds.contains(bond(3)))
    }
}
