import Foundation
import Host
import Testing

#if canImport(Glibc)
import Glibc
#endif
import BluetoothEngine

private func mode(_ path: String) -> mode_t? {
    var info = stat()
    return stat(path, &info) == 0 ? info.st_mode & 0o777 : nil
}

/// Host's `PrivateFile`, the one writer of the bonds, the local identity, the known peers and the restoration
/// snapshots.
@Suite struct PrivateFileTests {
    /// `replace` creates the missing directory (0700), writes the file (0600) whole, replaces it whole, and leaves
    /// no temporary file behind; `json` is pretty-printed with sorted keys.
    @Test func replaceWritesAPrivateFileWhole() throws {
        let root = NSTemporaryDirectory() + "ocb-private-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/nested/state.json"
        try PrivateFile.replace(path, with: PrivateFile.json(["b": 2, "a": 1], path: path))
        #expect(mode(root + "/nested") == 0o700)
        #expect(mode(path) == 0o600)
        #expect(String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self) == "{\n  \"a\" : 1,\n  \"b\" : 2\n}")
        try PrivateFile.replace(path, with: Data("second".utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("second".utf8))
        #expect(mode(path) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/nested") == ["state.json"])
    }

    /// Two temporary files for one target never share a name (two writers of one process at once), and a failure
    /// is `ioFailed` with the reason and the path.
    @Test func temporaryFilesAreUniqueAndFailuresSayWhere() throws {
        let root = NSTemporaryDirectory() + "ocb-private-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let first = try PrivateFile.writeTemporary(Data([1]), beside: root + "/x")
        let second = try PrivateFile.writeTemporary(Data([2]), beside: root + "/x")
        #expect(first != second)
        #expect(mode(first) == 0o600 && mode(second) == 0o600)

        // A file where the directory should be: refused by the folder check (issue 30), naming the folder.
        let blocked = root + "/file/inside.json"
        try Data().write(to: URL(fileURLWithPath: root + "/file"))
        #expect {
            try PrivateFile.replace(blocked, with: Data([0]))
        } throws: { error in
            guard let error = error as? BondStoreError else { return false }
            return error.code == .ioFailed && error.reason.hasSuffix("is not a folder") && error.path == root + "/file"
        }
        // A failing open of the temporary file says so, with the temporary's path.
        #expect {
            try PrivateFile.writeTemporary(Data([0]), beside: blocked)
        } throws: { error in
            guard let error = error as? BondStoreError else { return false }
            return error.code == .ioFailed && error.reason.hasPrefix("open:") && error.path?.hasPrefix(blocked + ".tmp.") == true
        }
    }
}
