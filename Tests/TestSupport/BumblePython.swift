import Foundation

/// The Python with Bumble that the interop tests run peers with (Interop/peers): `OCB_PYTHON`, else the package's
/// `.venv` (Scripts/setup-interop.sh makes it). Tests that need it are disabled without it, unless
/// `OCB_REQUIRE_INTEROP=1` (CI), where they fail instead.
public enum BumblePython {
    /// The package's root (this file is Tests/TestSupport/BumblePython.swift).
    public static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The interpreter, when there is one.
    public static let path: String? = {
        var candidates: [String] = []
        if let configured = ProcessInfo.processInfo.environment["OCB_PYTHON"], !configured.isEmpty { candidates.append(configured) }
        candidates += ["/work/main/.venv/bin/python", packageRoot + "/.venv/bin/python"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// Whether Bumble tests run: a Python was found, or CI requires them (and they then fail without it).
    public static var enabled: Bool { path != nil || ProcessInfo.processInfo.environment["OCB_REQUIRE_INTEROP"] == "1" }

    /// A peer script of Interop/peers.
    public static func peer(_ script: String) -> String { packageRoot + "/Interop/peers/" + script }
}
