import BluetoothCore
import Foundation
import HCI
import HCITransport
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Interop with code we did not write: Bumble's software controller (`bumble.apps.controllers`) serving H4 over
/// TCP, driven through ``SocketH4Transport``.
///
/// The Python comes from `OCB_PYTHON`, else /work/main/.venv/bin/python, else .venv/bin/python in the package
/// directory. Without one the test is disabled, unless `OCB_REQUIRE_INTEROP=1` (CI): then it fails.
@Suite struct BumbleInteropTests {
    static let interopRequired = ProcessInfo.processInfo.environment["OCB_REQUIRE_INTEROP"] == "1"

    static let python: String? = {
        var candidates: [String] = []
        if let configured = ProcessInfo.processInfo.environment["OCB_PYTHON"], !configured.isEmpty {
            candidates.append(configured)
        }
        candidates.append("/work/main/.venv/bin/python")
        candidates.append(FileManager.default.currentDirectoryPath + "/.venv/bin/python")
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// A TCP port Bumble can be told to listen on (``TestPorts``: outside the kernel's ephemeral range, so no
    /// port-0 listener of the parallel run can take it first).
    static func freePort() throws -> UInt16 {
        try TestPorts.reserve()
    }

    /// Sends `command` and waits for the event answering it.
    static func exchange(
        _ command: HCICommand, on transport: SocketH4Transport, events: Collector, already: Int
    ) async throws -> HCIEvent {
        try transport.send(H4Frame(type: .command, packet: command.encode()))
        let frames = await events.waitForFrames(already + 1, seconds: 10)
        let frame = try #require(frames.count > already ? frames[already] : nil, "no answer to \(command)")
        #expect(frame.type == .event)
        return try HCIEvent(decoding: frame.packet)
    }

    @Test(.enabled(if: python != nil || interopRequired, "no Python with Bumble (set OCB_PYTHON)"))
    func resetAndReadBDADDROnBumblesController() async throws {
        let python = try #require(Self.python, "OCB_REQUIRE_INTEROP=1 but no Python with Bumble was found")
        let ports = (try Self.freePort(), try Self.freePort())
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [
            "-m", "bumble.apps.controllers", "tcp-server:127.0.0.1:\(ports.0)", "tcp-server:127.0.0.1:\(ports.1)",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            // SIGKILL, not terminate(): Foundation's Process hands the child the spawning thread's signal mask,
            // in which SIGTERM is blocked on Swift Testing's worker threads, so SIGTERM would never arrive.
            // No wait for the exit: Foundation reaps the child, and a wait would block a cooperative-pool thread.
            kill(process.processIdentifier, SIGKILL)
        }

        // Bounded wait for the controller to listen: up to 15 s, retrying every 100 ms.
        var transport: SocketH4Transport?
        var lastError: HCITransportError?
        for _ in 0..<150 where transport == nil && process.isRunning {
            do {
                transport = try SocketH4Transport.connect(host: "127.0.0.1", port: ports.0)
            } catch {
                lastError = error
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let controller = try #require(transport, "Bumble did not listen on \(ports.0): \(String(describing: lastError))")
        let events = Collector()
        try events.start(controller)
        defer { controller.close() }

        let reset = try await Self.exchange(.reset, on: controller, events: events, already: 0)
        guard case .commandComplete(let credits, let opcode, let returned) = reset else {
            Issue.record("expected Command Complete for Reset, got \(reset)")
            return
        }
        #expect(opcode == .reset)
        #expect(credits >= 1)
        #expect(returned == .status(.success))

        let readAddress = try await Self.exchange(.readBDADDR, on: controller, events: events, already: 1)
        guard case .commandComplete(_, let addressOpcode, let addressReturn) = readAddress else {
            Issue.record("expected Command Complete for Read BD_ADDR, got \(readAddress)")
            return
        }
        #expect(addressOpcode == .readBDADDR)
        // Bumble gives every controller of `bumble.apps.controllers` the public address 00:00:00:00:00:00.
        #expect(addressReturn == .readBDADDR(status: .success, address: BluetoothAddress.zero))
        #expect(events.seen.withLock { $0.close } == nil, "the controller stays connected")
    }
}
