import BluetoothCore
import BluetoothRuntime
import GATT
@testable import Host
import Logging
import SMP
import Testing

/// What a logger was given, kept for a test: the handler of ``LogCapture``.
struct CapturedLine: Sendable {
    var level: Logger.Level
    var label: String
    var message: String
    var metadata: Logger.Metadata
}

/// A swift-log handler that records every message at its level and up, per process-wide nothing: each stack of a
/// test gets loggers from ``makeLogger(stack:)``, so tests running in parallel do not see each other's lines.
final class LogCapture: Sendable {
    let lines = LockedValue<[CapturedLine]>([])
    let level: Logger.Level

    init(level: Logger.Level) { self.level = level }

    func makeLogger(stack: String) -> @Sendable (String) -> Logger {
        { [self] label in
            var logger = Logger(label: label) { label in Handler(label: label, capture: self, logLevel: self.level) }
            logger[metadataKey: "stack"] = "\(stack)"
            return logger
        }
    }

    func lines(_ label: String) -> [CapturedLine] { lines.withLock { $0 }.filter { $0.label == label } }
    func messages(_ label: String) -> [String] { lines(label).map(\.message) }

    struct Handler: LogHandler {
        let label: String
        let capture: LogCapture
        var logLevel: Logger.Level
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
            capture.lines.withLock { $0.append(CapturedLine(level: event.level, label: label, message: "\(event.message)", metadata: merged)) }
        }
    }
}

@Suite("Host logging: every exchange at debug under its layer's label, keys never logged")
struct HostLoggingTests {
    @Test("legacy pairing and an encrypted read, logged at trace: HCI, ATT, SMP and GAP lines with the link's metadata; no key in any line")
    func everyExchangeLoggedWithoutKeys() throws {
        let capture = LogCapture(level: .trace)
        let centralStore = InMemoryBondStore()
        let s = SecureStacks(central: security(sc: .legacyOnly, store: centralStore), peripheral: security(sc: .legacyOnly)) { configuration, role in
            configuration.makeLogger = capture.makeLogger(stack: role)
        }
        #expect(s.stacks.connect())
        _ = try #require(s.pair()).get()
        let read = s.stacks.gatt(.readCharacteristicValue(handle: SecureStacks.database.1))
        guard case .success(.value(let value))? = read else {
            Issue.record("read: \(String(describing: read))")
            return
        }
        #expect(value == [0x5E, 0xC2])

        let hci = capture.messages(LogLabel.hci)
        #expect(hci.contains("sent Reset"))
        #expect(hci.contains { $0.hasPrefix("received Command Complete") && $0.contains("Reset (0x0C03)") })
        #expect(hci.contains { $0.hasPrefix("sent LE Extended Create Connection") }, "our controller has the extended commands")
        #expect(hci.contains { $0.hasPrefix("received LE Enhanced Connection Complete Status=Success") })
        #expect(capture.lines(LogLabel.hci).contains { $0.level == .trace && $0.message.hasPrefix("sent ACL data") })
        #expect(capture.lines(LogLabel.hci).contains { $0.level == .debug && $0.message.hasPrefix("controller ready") })
        // Commands that carry keys are named, nothing more.
        #expect(hci.contains("sent LE Enable Encryption"))
        #expect(hci.contains("sent LE Long Term Key Request Reply"))

        let att = capture.lines(LogLabel.att)
        let readRequest = try #require(att.first { $0.message.hasPrefix("sent Read Request") && $0.metadata["stack"] == "central" })
        #expect(readRequest.level == .debug)
        #expect(readRequest.message.contains("Handle=\(Dissection.hex16(SecureStacks.database.1))"))
        #expect(readRequest.metadata["connection"] == "\(Dissection.hex16(s.stacks.centralHandle))")
        #expect(readRequest.metadata["peer"] != nil)
        #expect(att.contains { $0.message.hasPrefix("received Read Request") && $0.metadata["stack"] == "peripheral" })
        #expect(att.contains { $0.message.hasPrefix("received Read Response") && $0.message.contains("5e c2") })

        let smp = capture.messages(LogLabel.smp)
        #expect(smp.contains { $0.hasPrefix("sent SMP Pairing Request") && $0.contains("IO_Capability") })
        #expect(smp.contains { $0.hasPrefix("received SMP Pairing Response") })
        #expect(smp.contains("sent SMP Encryption Information"))
        #expect(smp.contains("received SMP Encryption Information"))
        #expect(smp.contains("sent SMP Identity Information"))
        #expect(smp.contains("paired: Just Works, legacy, unauthenticated, key size 16, bonded"))

        let gap = capture.lines(LogLabel.gap)
        #expect(gap.contains { $0.level == .debug && $0.message.hasPrefix("connected as central") })
        #expect(gap.contains { $0.level == .debug && $0.message == "encryption on" })

        // No key, in either spelling the dissections use, in any line or metadata.
        let bond = try #require(centralStore.loadBonds().bonds.first)
        var secrets: [[UInt8]] = []
        if let key = bond.peerLongTermKey?.key { secrets.append(key) }
        if let key = bond.localLongTermKey?.key { secrets.append(key) }
        if let key = bond.peerIdentityResolvingKey { secrets.append(key.msbFirst) }
        #expect(secrets.count == 3)
        let everything = capture.lines.withLock { $0 }.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n").lowercased()
        for secret in secrets + secrets.map({ Array($0.reversed()) }) {
            let head = Array(secret.prefix(6))
            #expect(!everything.contains(head.map { Hex.encode([$0]) }.joined(separator: " ")), "a key's bytes in the log")
            #expect(!everything.contains(Hex.encode(head)), "a key's bytes in the log")
        }
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("at info and above, a connection, a pairing and an encrypted read log nothing: a library keeps info for its app")
    func nothingAtInfo() throws {
        let capture = LogCapture(level: .info)
        let s = SecureStacks { configuration, role in configuration.makeLogger = capture.makeLogger(stack: role) }
        #expect(s.stacks.connect())
        _ = try #require(s.pair()).get()
        #expect(s.stacks.gatt(.readCharacteristicValue(handle: SecureStacks.database.1)) != nil)
        s.stacks.disconnectAndCheckLeaks()
        let lines = capture.lines.withLock { $0 }
        #expect(lines.isEmpty, "\(lines.map(\.message))")
    }

    @Test("the standard error handler's line: level, label, message, sorted metadata; the time only when asked")
    func standardErrorLine() {
        #expect(StandardErrorLogHandler.line(level: .warning, label: "opencorebluetooth.att", message: "hello",
                                             metadata: ["peer": "A", "connection": "0x0040"], time: nil)
            == "warning opencorebluetooth.att: hello connection=0x0040 peer=A")
        #expect(StandardErrorLogHandler.line(level: .debug, label: "x", message: "m", metadata: [:], time: "12:00:00.000001")
            == "12:00:00.000001 debug x: m")
        #expect(Logger.Level(named: "DEBUG") == .debug)
        #expect(Logger.Level(named: "verbose") == nil)
        #expect(Logger.Level.names == "trace, debug, info, notice, warning, error, critical")
    }
}
