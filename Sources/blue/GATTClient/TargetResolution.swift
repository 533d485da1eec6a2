import AdvertisingData
import BluetoothCore
import BluetoothRuntime
import FoundationEssentials
import Host
import StackLauncher
import BluetoothEngine

/// What a TARGET argument names (issue 5 item 4): a device address ("C0:11:22:33:44:55", optionally "/random"),
/// a CoreBluetooth peer identifier (the UUID `CBPeer.identifier` gives the device, see
/// ``PeerIdentifierFormat``), or an advertised local name (compared without regard to case).
struct TargetMatcher: Sendable, CustomStringConvertible {
    enum Kind: Sendable {
        case address(BluetoothAddress, typed: Bool)
        case identifier(String)
        case name(String)
    }

    let kind: Kind
    let text: String

    init(_ text: String) {
        self.text = text
        if let address = try? BluetoothAddress(string: text) {
            kind = .address(address, typed: text.contains("/"))
        } else if text.count == 36, UUID(uuidString: text) != nil {
            kind = .identifier(text.uppercased())
        } else {
            kind = .name(text)
        }
    }

    var description: String {
        switch kind {
        case .address: "address \(text)"
        case .identifier: "identifier \(text)"
        case .name: "\"\(text)\""
        }
    }

    func matches(_ report: ScanReport) -> Bool {
        switch kind {
        case .address(let address, let typed):
            return report.address.value == address.value && (!typed || report.address.type == address.type)
        case .identifier(let identifier):
            return PeerIdentifierFormat.identifier(for: report.address) == identifier
        case .name(let name):
            guard let local = report.localName else { return false }
            return local.lowercased() == name.lowercased()
        }
    }
}

extension OpenedStack {
    /// Scans (actively) until a device matching `target` is heard, for at most `timeout`. The scan is stopped
    /// before returning. Fails with "no device matching ... found within N s" (exit code 2).
    func findTarget(_ target: TargetMatcher, timeout: Duration) async throws(CLIFailure) -> ScanReport {
        let done = OneShot<ScanReport?>()
        let subscription = addEventHandler { event in
            if case .advertisingReport(let report) = event, report.isConnectable, target.matches(report) {
                done.fire(report)
            }
        }
        let timer = eventLoop.schedule(after: timeout) { done.fire(nil) }
        engine.startScanning(ScanOptions(active: true, filterDuplicates: false)) { result in
            if case .failure = result { done.fire(nil) }
        }
        let found = await done.wait()
        subscription.cancel()
        timer.cancel()
        await stopScan()
        guard let found else {
            throw CLIFailure(.notFound, "no device matching \(target) found within \(timeout.secondsText)")
        }
        return found
    }
}

/// The peer identifier blue prints and accepts: the same name-based UUID OpenCoreBluetooth gives
/// `CBPeer.identifier` (RFC 9562 §5.5 version 5 of "AA:BB:CC:DD:EE:FF/public|random" in the OpenCoreBluetooth
/// peer namespace), so `blue scan` and an app agree on a device.
enum PeerIdentifierFormat {
    static func identifier(for address: BluetoothAddress) -> String {
        PeerIdentifier.text(for: address)
    }
}

extension Duration {
    /// "3 s", "2.5 s".
    var secondsText: String {
        let (seconds, attoseconds) = components
        let milliseconds = attoseconds / 1_000_000_000_000_000
        if milliseconds == 0 { return "\(seconds) s" }
        var fraction = String(milliseconds)
        while fraction.count < 3 { fraction = "0" + fraction }
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(seconds).\(fraction) s"
    }
}
