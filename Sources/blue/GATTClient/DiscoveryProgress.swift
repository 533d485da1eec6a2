import BluetoothRuntime
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// "discovering: service 3 of 12, 148 attributes" on standard error while a database is discovered (Core 5.4 Vol 3
/// Part G §4.4–§4.8), redrawn in place at most ten times a second and erased at the end; only when standard error
/// is a terminal, so that pipes and logs stay quiet.
final class DiscoveryProgress: Sendable {
    private let enabled: Bool
    private let state = LockedValue<(lastDrawn: ContinuousClock.Instant?, drawn: Bool)>((nil, false))

    init(enabled: Bool = isatty(2) == 1) {
        self.enabled = enabled
    }

    func update(service: Int, of services: Int, attributes: Int) {
        guard enabled else { return }
        let now = ContinuousClock.now
        let draw = state.withLock { state -> Bool in
            if let last = state.lastDrawn, now - last < .milliseconds(100) { return false }
            state = (now, true)
            return true
        }
        guard draw else { return }
        Console.errorText("\r\u{1B}[2Kdiscovering: service \(service) of \(services), \(attributes) attribute\(attributes == 1 ? "" : "s")")
    }

    /// Erases the line, if one was drawn.
    func finish() {
        guard enabled, state.load().drawn else { return }
        Console.errorText("\r\u{1B}[2K")
    }
}
