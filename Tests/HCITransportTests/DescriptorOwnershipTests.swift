import Foundation
@testable import HCITransport
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Descriptor ownership (HCITransport's design note): every descriptor is close-on-exec from birth, and nothing in
/// the project hands a descriptor to Dispatch.
@Suite struct DescriptorOwnershipTests {
    static func isCloseOnExec(_ fd: Int32) -> Bool {
        let flags = fcntl(fd, F_GETFD)
        return flags >= 0 && flags & FD_CLOEXEC != 0
    }

    @Test func listenerAcceptedAndConnectedDescriptorsAreCloseOnExec() async throws {
        let accepted = Mailbox<SocketH4Transport>()
        let listener = try H4Listener.listen(tcpHost: "127.0.0.1", port: 0) { accepted.put($0) }
        defer { listener.close() }
        let client = try SocketH4Transport.connect(host: "127.0.0.1", port: try #require(listener.port))
        defer { client.close() }
        let server = try #require(await accepted.take())
        defer { server.close() }
        for (owner, descriptors) in [
            ("listener", listener.ownedDescriptors), ("connected", client.core.ownedDescriptors),
            ("accepted", server.core.ownedDescriptors),
        ] {
            for fd in descriptors {
                #expect(Self.isCloseOnExec(fd), "\(owner): descriptor \(fd) is inherited by children")
            }
        }
    }

    /// The crash of issue 10 ("Bad pointer dereference" in libdispatch's `_dispatch_event_loop_drain`) came from
    /// descriptor-based Dispatch sources (`FileHandle.readabilityHandler`) set up and torn down by parallel tests:
    /// corelibs-libdispatch on Linux is not safe under that churn (swift-corelibs-libdispatch#949; a stand-alone
    /// program doing it from 8 threads traps within seconds on this toolchain, and loses most EOF events). None may
    /// come back, in the library or its tests: readers are threads blocked in `poll`, child output goes to files.
    @Test func noDescriptorIsHandedToDispatch() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        // Signal sources too: a signal arriving before libdispatch has registered one is discarded (SIG_IGN), which
        // left `blue air` running after a SIGTERM under load; blue's ProcessSignals replaced them.
        let forbidden = ["readabilityHandler", "writeabilityHandler", "makeReadSource", "makeWriteSource", "DispatchIO",
                         "makeSignalSource"]
        var offenders: [String] = []
        for folder in ["Sources", "Tests", "Examples", "Fuzz", "Benchmarks"] {
            let base = root.appendingPathComponent(folder)
            guard let walker = FileManager.default.enumerator(atPath: base.path) else { continue }
            while let relative = walker.nextObject() as? String {
                guard relative.hasSuffix(".swift"), !relative.hasSuffix("DescriptorOwnershipTests.swift") else { continue }
                let text = try String(contentsOf: base.appendingPathComponent(relative), encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.trimmingCharacters(in: .whitespaces)
                    guard !code.hasPrefix("//") else { continue }
                    for word in forbidden where code.contains(word) {
                        offenders.append("\(folder)/\(relative):\(number + 1): \(word)")
                    }
                }
            }
        }
        #expect(offenders.isEmpty, "descriptor-based Dispatch sources: \(offenders.joined(separator: "; "))")
    }
}
