import Foundation
import TestSupport
import Testing

/// `blue shell` reading a script from standard input (issue 14 items 1 and 3): every command on one connection (the
/// server sees one), link changes answered by our controller, and a script that stops at its first failing line
/// with that command's exit code and the line number.
@Suite(.serialized) struct ShellCommandTests {
    @Test func aScriptRunsOnOneConnection() async throws {
        let scene = try await HeartRateScene()
        let script = """
            # one connection for all of this
            scan 1
            connect "\(scene.name)"
            read 2A38
            write 2A39 01
            subscribe 2A37 2
            mtu
            params 50 0 5000
            phy 2M
            datalength 251
            pair
            link
            explore
            disconnect
            """
        let shell = try await BlueProcess.run(["shell"] + scene.hci, input: script + "\n", limit: .seconds(120))
        #expect(shell.status == 0, "\(shell.standardError)")
        let out = shell.standardOutput
        #expect(out.contains("connected to \(scene.name) ("), "\(out)")
        #expect(out.contains("2A38 Body Sensor Location  = 01  (Chest)"))
        #expect(out.contains("wrote 1 byte to 2A39 Heart Rate Control Point"))
        #expect(out.split(separator: "\n").filter { $0.contains("2A37 Heart Rate Measurement  = 16 ") }.count == 2, "\(out)")
        #expect(out.contains("interval 50.0 ms, latency 0, timeout 5000 ms"))
        #expect(out.contains("PHY 2M/2M"))
        #expect(out.contains("data 251/"))
        #expect(out.contains("paired: Just Works, LE Secure Connections, bonded"))
        #expect(out.contains("interval 50 ms, latency 0, timeout 5000 ms, PHY 2M/2M, data 251/"), "\(out)")
        #expect(out.contains("encrypted\n"))
        #expect(out.contains("Service 180D Heart Rate"))
        // One connection served all of it.
        #expect(await scene.server.waitFor("disconnected"))
        let connections = scene.server.output.split(separator: "\n").filter { $0.hasPrefix("connected: ") }
        #expect(connections.count == 1, "\(scene.server.output)")
        _ = await scene.stop()
    }

    /// On a terminal (a pty from util-linux's script): Tab completes a command, Backspace edits, Up walks the history.
    @Test func theLineEditorCompletesEditsAndRemembers() async throws {
        // Octal escapes: the shell's printf (dash) has no \x.
        let keys = #"he\tXX\177\177\rlin\tx\177\r\033[A\033[A\r\004"#
        let command = "printf '\(keys)' | script -qec \"'\(BlueProcess.executable.path)' shell --hci air:/nonexistent-dir/air.sock\" /dev/null"
        // Without a hub the shell never starts: use one of the test's own.
        let scene = try await HeartRateScene()
        let session = command.replacingOccurrences(of: "air:/nonexistent-dir/air.sock", with: scene.hci[1])
        let result = try await runToCompletion(URL(fileURLWithPath: "/bin/sh"), ["-c", session], limit: .seconds(60))
        let screen = result.output.replacingOccurrences(of: "\r", with: "\n")
        // "he" + Tab became "help "; the two X were erased; "lin" + Tab became "link " (not connected); Up, Up went
        // back to "help".
        #expect(screen.contains("blue> help \n"), "\(screen)")
        #expect(screen.contains("blue> link \n"), "\(screen)")
        #expect(screen.components(separatedBy: "connect TARGET [SECONDS]").count == 3, "help ran twice: \(screen)")
        #expect(screen.contains("not connected (connect TARGET)"))
        _ = await scene.stop()
    }

    @Test func aScriptStopsAtItsFirstFailure() async throws {
        let unknown = try await BlueProcess.run(["shell", "--hci", "air:/nonexistent/air.sock"], input: "help\nbogus 1\nhelp\n")
        #expect(unknown.status == 69, "\(unknown.standardError)")
        let scene = try await HeartRateScene()
        let bogus = try await BlueProcess.run(["shell"] + scene.hci, input: "help\nbogus 1\nlink\n")
        #expect(bogus.status == 64)
        #expect(bogus.standardError == "error: line 2 (bogus 1): unknown command \"bogus\" (help lists them)\n", "\(bogus.standardError)")
        let notConnected = try await BlueProcess.run(["shell"] + scene.hci, input: "link\n")
        #expect(notConnected.status == 1)
        #expect(notConnected.standardError == "error: line 1 (link): not connected (connect TARGET)\n", "\(notConnected.standardError)")
        let missing = try await BlueProcess.run(["shell"] + scene.hci, input: "connect \"\(scene.name)\"\nread FFFF\n")
        #expect(missing.status == 2)
        #expect(missing.standardError.hasPrefix("error: line 2 (read FFFF): no characteristic FFFF"), "\(missing.standardError)")
        _ = await scene.stop()
    }
}
