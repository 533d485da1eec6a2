import BluetoothRuntime
import Foundation
import TestSupport
import Testing
import VirtualController
@testable import SharedAir

@Suite("AirHubLauncher")
struct AirHubLauncherTests {
    @Test("a running hub is used as it is; nothing is spawned")
    func usesRunningHub() async throws {
        let directory = testTemporaryPath("airhub-launch-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/air.sock"
        let hub = AirHub(configuration: AirHubConfiguration(socketPath: socket, statisticsInterval: nil),
                         eventLoop: DispatchEventLoop(label: "launcher-test"))
        try hub.start()
        defer { hub.stop() }
        // /bin/false would fail if it were started.
        #expect(try await blockingWork { () throws(AirHubError) in
            try AirHubLauncher.ensureRunning(executable: "/bin/false", socketPath: socket)
        } == nil)
        #expect(hub.devices.isEmpty)
    }

    @Test("a hub executable that exits without listening is an error naming the log, not a hang")
    func failingExecutable() async throws {
        let directory = testTemporaryPath("airhub-launch-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/air.sock"
        // ensureRunning polls with usleep: on a thread of its own, not the cooperative pool. Timed on that thread,
        // so the time the test waits to resume (a busy pool) does not count.
        let (outcome, elapsed) = await blockingWork { () -> (Result<Int32?, AirHubError>, Duration) in
            let started = ContinuousClock.now
            let outcome = Result { () throws(AirHubError) in
                try AirHubLauncher.ensureRunning(executable: "/bin/false", socketPath: socket, timeout: .seconds(120))
            }
            return (outcome, ContinuousClock.now - started)
        }
        #expect(throws: AirHubError.self) { try outcome.get() }
        // It gives up when the child exits, not at its 120 s timeout (a margin no busy machine eats).
        #expect(elapsed < .seconds(60))
        #expect(AirHubLauncher.logPath(forSocket: socket) == directory + "/air.log")
        #expect(FileManager.default.fileExists(atPath: directory + "/air.log"))
    }

    @Test("starts the real blue air in the background (BLUE = path of the blue binary)",
          .enabled(if: ProcessInfo.processInfo.environment["BLUE"] != nil))
    func startsBlueAir() async throws {
        let blue = try #require(ProcessInfo.processInfo.environment["BLUE"])
        let directory = testTemporaryPath("airhub-launch-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/air.sock"
        let pid = try #require(try await blockingWork { () throws(AirHubError) in
            try AirHubLauncher.ensureRunning(executable: blue, socketPath: socket)
        })
        defer { kill(pid, SIGKILL) }
        #expect(AirHub.isRunning(at: socket))
        #expect(try await blockingWork { () throws(AirHubError) in
            try AirHubLauncher.ensureRunning(executable: blue, socketPath: socket)
        } == nil, "started once only")
        #expect(kill(pid, SIGINT) == 0)
        var status: Int32 = 0
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while waitpid(pid, &status, WNOHANG) == 0, clock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(status == 0, "exit code 0 after SIGINT")
        #expect(!FileManager.default.fileExists(atPath: socket))
        let log = try String(contentsOfFile: directory + "/air.log", encoding: .utf8)
        #expect(log.contains("listening on unix:\(socket)"))
        #expect(log.contains("stopped: "))
    }
}
