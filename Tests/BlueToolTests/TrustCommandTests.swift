import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 30 at the command line: `blue` refuses a shared air folder that another user controls, with one line on
/// standard error and a non-zero exit, and says in `blue air --help` who can join a TCP air.
@Suite struct TrustCommandTests {
    /// The default folder of uid 65534 when XDG_RUNTIME_DIR is unset, which the squatting test makes as root.
    static let squattedDefault = "/tmp/opencorebluetooth-65534"
    static let canSquat = geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
        && !FileManager.default.fileExists(atPath: squattedDefault)

    /// The reproduction: root made uid 65534's default folder first, mode 0777; `blue scan` as 65534, with
    /// no XDG_RUNTIME_DIR, refuses it and creates nothing in it.
    @Test(.enabled(if: canSquat, "needs root, /usr/bin/setpriv, and no /tmp/opencorebluetooth-65534 yet"), .timeLimit(.minutes(2)))
    func scanRefusesASquattedDefaultFolder() async throws {
        #expect(mkdir(Self.squattedDefault, 0o777) == 0 && chmod(Self.squattedDefault, 0o777) == 0)
        defer { try? FileManager.default.removeItem(atPath: Self.squattedDefault) }
        let environment = ["PATH": "/usr/bin:/bin", "HOME": "/tmp", "OCB_KNOWN_PEERS": "off"]
        let result = try await runToCompletion(
            URL(fileURLWithPath: "/usr/bin/setpriv"),
            ["--reuid=65534", "--regid=65534", "--clear-groups", "--", BlueProcess.executable.path, "scan", "--timeout", "1"],
            environment: environment, limit: .seconds(60))
        #expect(result.status != 0, "\(result)")
        let lines = result.errors.split(separator: "\n")
        #expect(lines.count == 1, "\(result)")
        #expect(result.errors.contains("\(Self.squattedDefault) belongs to uid 0, not to this user (uid 65534)"), "\(result)")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: Self.squattedDefault)) ?? []
        #expect(left.isEmpty, "\(left)")
    }

    /// A folder writable by all (not sticky) named with --hci air:PATH or --socket: refused by the client and by the
    /// hub, one line each, non-zero exit. Needs no other user.
    @Test(.timeLimit(.minutes(2)))
    func clientAndHubRefuseAFolderWritableByAll() async throws {
        let root = try makeTestDirectory("trust")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let folder = root + "/open"
        #expect(mkdir(folder, 0o700) == 0 && chmod(folder, 0o777) == 0)
        let scan = try await BlueProcess.run(["scan", "--hci", "air:\(folder)/air.sock", "--timeout", "1"], limit: .seconds(60))
        #expect(scan.status != 0, "\(scan.standardError)")
        #expect(scan.standardError.split(separator: "\n").count == 1, "\(scan.standardError)")
        #expect(scan.standardError.contains("\(folder) is writable by other users and not sticky (mode 0777)"), "\(scan.standardError)")
        let air = try await BlueProcess.run(["air", "--socket", "\(folder)/air.sock"], limit: .seconds(60))
        #expect(air.status == 1, "\(air.standardError)")
        #expect(air.standardError.split(separator: "\n").count == 1, "\(air.standardError)")
        #expect(air.standardError.contains("is writable by other users"), "\(air.standardError)")
        #expect(!FileManager.default.fileExists(atPath: "\(folder)/air.sock"))
    }

    @Test func airHelpSaysWhoCanJoinATCPAir() async throws {
        let help = try await BlueProcess.run(["air", "--help"], limit: .seconds(60))
        #expect(help.status == 0)
        let text = help.standardOutput.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text.contains("any local user can join a TCP air"), "\(help.standardOutput)")
        #expect(text.contains("127.0.0.1"))
    }
}
