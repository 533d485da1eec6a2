import Foundation
import TestSupport
import HCITransport
import Testing

/// Where the interop tests find the peers we did not write: the Python with Bumble (and the `rootcanal` wheel), the
/// peer scripts in `Interop/peers`, and free TCP ports.
///
/// Python comes from `OCB_PYTHON`, else /work/main/.venv/bin/python, else `.venv/bin/python` in the package root
/// (found from this file's path). Without one the tests are disabled, unless `OCB_REQUIRE_INTEROP=1`: then they run
/// and fail, so CI cannot pass by skipping them.
enum InteropEnvironment {
    static let required = ProcessInfo.processInfo.environment["OCB_REQUIRE_INTEROP"] == "1"

    /// The package root: this file is Tests/HostTests/InteropSupport/InteropEnvironment.swift.
    static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.path
    }()

    static let peersDirectory = packageRoot + "/Interop/peers"

    static let python: String? = {
        var candidates: [String] = []
        if let configured = ProcessInfo.processInfo.environment["OCB_PYTHON"], !configured.isEmpty {
            candidates.append(configured)
        }
        candidates.append("/work/main/.venv/bin/python")
        candidates.append(packageRoot + "/.venv/bin/python")
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// Whether the Bumble tests run (a Python was found, or they are required and will fail without one).
    static var bumbleEnabled: Bool { python != nil || required }

    /// The RootCanal binary inside the `rootcanal` wheel of that Python (asked once, bounded to 20 s).
    static let rootCanal: String? = {
        guard let python else { return nil }
        let script = "import rootcanal, os; print(os.path.join(os.path.dirname(rootcanal.__file__), 'bin', 'linux-x86_64', 'rootcanal'))"
        guard let output = try? InteropProcess.runToCompletion(python, ["-c", script], seconds: 20) else { return nil }
        let path = output.trimmingCharacters(in: .whitespacesAndNewlines)
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }()

    static var rootCanalEnabled: Bool { rootCanal != nil || required }

    /// A TCP port for a peer that is told its port before it starts (see ``TestPorts``: never an ephemeral port
    /// that another listener of the run may be given meanwhile).
    static func freePort() throws -> UInt16 {
        try TestPorts.reserve()
    }
}

/// Why an interop step failed (a timeout, a peer that said something else, a process that died), with what the
/// peers printed.
struct InteropFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
