import Foundation
import HCITransport
import SystemInterface
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Capture and recording files (btsnoop of `--snoop` and `blue monitor --write`, the air's recordings): they carry
/// keys, so a new one is the user's alone (0600), and a symbolic link planted where one will be written is not
/// followed (issue 30).
@Suite struct CaptureFileTests {
    @Test func aNewCaptureIsTheUsersAlone() throws {
        let root = try makeTestDirectory("capture")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let sink = try BTSnoopFileSink(path: root + "/hci.btsnoop")
        sink.close()
        var info = stat()
        #expect(lstat(root + "/hci.btsnoop", &info) == 0)
        #expect(info.st_mode & 0o7777 == 0o600)
        #expect(info.st_size == 16, "the btsnoop header")
    }

    @Test func aPlantedLinkIsNotFollowed() throws {
        let root = try makeTestDirectory("capture")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let target = root + "/victim"
        try Data("keep".utf8).write(to: URL(fileURLWithPath: target))
        #expect(symlink(target, root + "/hci.btsnoop") == 0)
        var refusal: HCITransportError?
        do {
            _ = try BTSnoopFileSink(path: root + "/hci.btsnoop")
        } catch {
            refusal = error
        }
        #expect(refusal?.reason.contains("cannot create the snoop file \(root)/hci.btsnoop: it is a symbolic link: not followed") == true,
                "\(String(describing: refusal))")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "keep", "the link's target is untouched")
        if case .failure(let error) = POSIX.createOutputFile(root + "/hci.btsnoop") {
            #expect(error.reason.contains("symbolic link"))
        } else {
            Issue.record("createOutputFile followed a symbolic link")
        }
    }
}
