import Foundation
@testable import HCITransport
import SystemInterface
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The folder and socket checks of issue 30 (``PrivateDirectory``, ``SocketOwnership``), on folders made in the run's
/// temporary directory. A change of owner needs root: those tests are skipped otherwise, saying so.
@Suite struct PrivateDirectoryTests {
    /// uid 65534 ("nobody"), the other user of these tests.
    static let otherUser: uid_t = 65534
    static let isRoot = geteuid() == 0

    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    static func refusal(_ check: () throws(PrivatePathError) -> Void) -> PrivatePathError? {
        do throws(PrivatePathError) {
            try check()
            return nil
        } catch {
            return error
        }
    }

    @Test func missingFolderIsCreatedPrivate() throws {
        let root = try makeTestDirectory("private")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let folder = root + "/air"
        try PrivateDirectory.ensure(folder)
        #expect(Self.mode(folder) == 0o700)
        // Ensuring again keeps it (and checks it again).
        try PrivateDirectory.ensure(folder)
        try PrivateDirectory.checkChosen(folder)
    }

    @Test func folderOpenToOthersIsRefused() throws {
        let root = try makeTestDirectory("private")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let folder = root + "/open"
        #expect(mkdir(folder, 0o700) == 0)
        #expect(chmod(folder, 0o777) == 0)
        let strict = try #require(Self.refusal { () throws(PrivatePathError) in try PrivateDirectory.ensure(folder) })
        #expect(strict.code == .openToOthers)
        #expect(strict.reason.contains(folder) && strict.reason.contains("0777"))
        #expect(!strict.reason.contains("\n"))
        let chosen = try #require(Self.refusal { () throws(PrivatePathError) in try PrivateDirectory.checkChosen(folder) })
        #expect(chosen.code == .openToOthers)
        // Readable by others only: refused as private, accepted as a folder the user chose (nobody can write into it).
        #expect(chmod(folder, 0o755) == 0)
        #expect(Self.refusal { () throws(PrivatePathError) in try PrivateDirectory.checkPrivate(folder) }?.code == .openToOthers)
        try PrivateDirectory.checkChosen(folder)
        // Sticky and writable by all, as /tmp: a chosen folder may be one, a private one may not.
        #expect(chmod(folder, 0o1777) == 0)
        try PrivateDirectory.checkChosen(folder)
        #expect(Self.refusal { () throws(PrivatePathError) in try PrivateDirectory.checkPrivate(folder) }?.code == .openToOthers)
    }

    /// OpenSSH's `safe_path`: whoever may write to a folder above could move ours away and put theirs in its place.
    @Test func aFolderBelowOneOpenToOthersIsRefused() throws {
        let root = try makeTestDirectory("private")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let open = root + "/open"
        #expect(mkdir(open, 0o700) == 0)
        #expect(chmod(open, 0o777) == 0)
        let folder = open + "/air"
        let strict = try #require(Self.refusal { () throws(PrivatePathError) in try PrivateDirectory.ensure(folder) })
        #expect(strict.code == .openToOthers)
        #expect(strict.reason.contains("above \(folder)") && strict.reason.contains("0777"), "\(strict.reason)")
        #expect(Self.refusal { () throws(PrivatePathError) in try PrivateDirectory.checkChosen(folder) }?.code == .openToOthers)
        // Sticky, as /tmp: nobody can move another's folder out of it.
        #expect(chmod(open, 0o1777) == 0)
        try PrivateDirectory.ensure(folder)
        try PrivateDirectory.checkChosen(folder)
    }

    @Test(.enabled(if: isRoot, "changing a folder's owner to uid 65534 needs root"))
    func aFolderBelowAnotherUsersIsRefused() throws {
        let root = try makeTestDirectory("private")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let theirs = root + "/theirs"
        #expect(mkdir(theirs, 0o755) == 0)
        let folder = theirs + "/air"
        try PrivateDirectory.ensure(folder)
        #expect(chown(theirs, Self.otherUser, Self.otherUser) == 0)
        let refused = try #require(Self.refusal { () throws(PrivatePathError) in try PrivateDirectory.checkPrivate(folder) })
        #expect(refused.code == .ownedByAnotherUser)
        #expect(refused.reason.contains("uid 65534") && refused.reason.contains("above \(folder)"), "\(refused.reason)")
    }

    @Test(.enabled(if: isRoot, "changing a folder's owner to uid 65534 needs root"))
    func folderOfAnotherUserIsRefused() throws {
        let root = try makeTestDirectory("private")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let folder = root + "/theirs"
        #expect(mkdir(folder, 0o700) == 0)
        #expect(chown(folder, Self.otherUser, Self.otherUser) == 0)
        let strict = try #require(Self.refusal { () throws(PrivatePathError) in try PrivateDirectory.ensure(folder) })
        #expect(strict.code == .ownedByAnotherUser)
        #expect(strict.reason.contains("uid 65534"))
        #expect(Self.refusal { () throws(PrivatePathError) in try PrivateDirectory.checkChosen(folder) }?.code == .ownedByAnotherUser)
    }

    @Test func symbolicLinkIsNotAFolder() throws {
        let root = try makeTestDirectory("private")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let target = root + "/target"
        #expect(mkdir(target, 0o700) == 0)
        let link = root + "/link"
        #expect(symlink(target, link) == 0)
        let refused = try #require(Self.refusal { () throws(PrivatePathError) in try PrivateDirectory.ensure(link) })
        #expect(refused.code == .notADirectory)
        #expect(refused.reason.contains("symbolic link"))
        // A dangling link is not followed either: mkdir does not create its target.
        let dangling = root + "/dangling"
        #expect(symlink(root + "/nowhere", dangling) == 0)
        #expect(Self.refusal { () throws(PrivatePathError) in try PrivateDirectory.ensure(dangling) }?.code == .notADirectory)
        #expect(!FileManager.default.fileExists(atPath: root + "/nowhere"))
        // A file is not a folder.
        let file = root + "/file"
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        #expect(Self.refusal { () throws(PrivatePathError) in try PrivateDirectory.ensure(file) }?.code == .notADirectory)
        // A link of this user to a folder of this user is a folder the user may choose.
        try PrivateDirectory.checkChosen(link)
    }

    @Test(.enabled(if: isRoot, "changing a link's owner to uid 65534 needs root"))
    func symbolicLinkOfAnotherUserIsNotFollowedEvenWhenChosen() throws {
        let root = try makeTestDirectory("private")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let target = root + "/target"
        #expect(mkdir(target, 0o700) == 0)
        let link = root + "/link"
        #expect(symlink(target, link) == 0)
        #expect(lchown(link, Self.otherUser, Self.otherUser) == 0)
        #expect(Self.refusal { () throws(PrivatePathError) in try PrivateDirectory.checkChosen(link) }?.code == .ownedByAnotherUser)
    }

    @Test func socketFileChecks() throws {
        let root = try makeTestDirectory("private")
        defer { try? FileManager.default.removeItem(atPath: root) }
        // Nothing there: passes (connecting then says there is no socket).
        try SocketOwnership.checkFile(root + "/missing.sock")
        let file = root + "/file.sock"
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        #expect(Self.refusal { () throws(PrivatePathError) in try SocketOwnership.checkFile(file) }?.code == .notASocket)
        let listener = try H4Listener.listen(unixPath: root + "/real.sock") { $0.close() }
        defer { listener.close() }
        try SocketOwnership.checkFile(root + "/real.sock")
        let link = root + "/link.sock"
        #expect(symlink(root + "/real.sock", link) == 0)
        let refused = try #require(Self.refusal { () throws(PrivatePathError) in try SocketOwnership.checkFile(link) })
        #expect(refused.code == .notASocket)
        #expect(refused.reason.contains("symbolic link"))
        // Connecting through a link is refused before any connection is made.
        #expect(throws: HCITransportError.self) { try SocketH4Transport.connect(path: link, serverOfThisUserOnly: true) }
        // The real socket is ours, and so is its server.
        let transport = try SocketH4Transport.connect(path: root + "/real.sock", serverOfThisUserOnly: true)
        transport.close()
    }

    @Test(.enabled(if: isRoot, "changing a socket's owner to uid 65534 needs root"))
    func socketOfAnotherUserIsRefused() throws {
        let root = try makeTestDirectory("private")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/theirs.sock"
        let listener = try H4Listener.listen(unixPath: path) { $0.close() }
        defer { listener.close() }
        #expect(lchown(path, Self.otherUser, Self.otherUser) == 0)
        let refused = try #require(Self.refusal { () throws(PrivatePathError) in try SocketOwnership.checkFile(path) })
        #expect(refused.code == .ownedByAnotherUser)
        #expect(refused.reason.contains("uid 65534"))
        let error = try #require(throws: HCITransportError.self) { try SocketH4Transport.connect(path: path, serverOfThisUserOnly: true) }
        #expect(error.reason.contains("uid 65534"))
        // `--hci unix:PATH` checks the same: a controller socket another user planted gets none of our traffic.
        let named = try #require(throws: HCITransportError.self) { _ = try HCITransportSpec.unix(path: path).open() }
        #expect(named.reason.contains("uid 65534"), "\(named.reason)")
    }

    @Test func unixListenerSocketIsPrivate() throws {
        let root = try makeTestDirectory("private")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/h4.sock"
        let listener = try H4Listener.listen(unixPath: path) { $0.close() }
        defer { listener.close() }
        #expect(Self.mode(path) == 0o600)
    }

    @Test func peerOfASocketPairIsThisUser() throws {
        var fds: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, SocketAddress.streamType, 0, &fds) == 0)
        defer { for fd in fds { POSIX.closeDescriptor(fd) } }
        let peer = try #require(PeerCredentials.of(socket: fds[0]))
        #expect(peer.uid == geteuid())
        #expect(peer.pid == getpid())
        try SocketOwnership.checkPeer(ofConnected: fds[0], path: "socketpair")
    }
}
