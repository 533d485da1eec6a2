import BluetoothCore
import BluetoothRuntime
import GATT
import FoundationEssentials

/// Why a benchmark could not run (setup failed, the stack stalled): a code and a reason.
struct BenchError: Error, CustomStringConvertible {
    enum Code: String {
        /// A stack did not start, advertise, connect, exchange MTU or subscribe.
        case setupFailed
        /// Nothing moved for the allowed stretch of virtual time.
        case stalled
        /// The options make no sense (a size that does not fit the ATT_MTU...).
        case badOptions
    }

    var code: Code
    var reason: String

    init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    var description: String { "\(code.rawValue): \(reason)" }
}

/// What one benchmark run measured. The same fields (names and meaning) are printed by
/// `Scripts/bench_bumble.py`, so `Scripts/bench.sh` can put the two side by side.
struct BenchResult {
    /// `notify`, `write`, `write-with-response`, `air`, `acl`.
    var benchmark: String
    /// Which stack ran: `OpenCoreBluetooth` here, `bumble` in the Python script.
    var stack = "OpenCoreBluetooth"
    /// Where the packets went: the in-process virtual air here.
    var transport = "in-process virtual air"
    /// How the loop was driven.
    var loop = BenchDriver.description
    /// Payload octets per packet (value size for GATT, ACL payload, advertising data length).
    var size: Int
    /// Packets asked for.
    var count: Int
    /// ATT_MTU after the exchange (GATT benchmarks), 0 otherwise.
    var mtu = 0
    /// LE data length (max TX octets) in use, 0 when not applicable.
    var dataLength = 0
    var sent: Int
    var received: Int
    /// Packets received out of sequence (values carry a sequence number).
    var outOfOrder = 0
    /// Wall-clock seconds of the measured phase (setup excluded).
    var seconds: Double
    /// Virtual (air) seconds the measured phase spanned.
    var airSeconds: Double
    /// PHY, interval, timing model and the air's ceiling (GATT benchmarks).
    var link: BenchLink?
    /// This process's CPU and memory over the measured span (benchmarks across processes).
    var cpu: BenchCPU?

    var lost: Int { max(0, sent - received) }
    var packetsPerSecond: Double { seconds > 0 ? Double(received) / seconds : 0 }
    var bytesPerSecond: Double { seconds > 0 ? Double(received * size) / seconds : 0 }
    var airPacketsPerSecond: Double { airSeconds > 0 ? Double(received) / airSeconds : 0 }
    var airBitsPerSecond: Double { airSeconds > 0 ? Double(received * size * 8) / airSeconds : 0 }

    /// One JSON object on one line (``BenchJSON``: keys sorted; seconds to the microsecond, rates to 1/1000).
    var json: String {
        func number(_ value: Double) -> BenchFigures.Value { .number(value, decimals: 3) }
        var fields: [(String, BenchFigures.Value)] = [
            ("benchmark", .text(benchmark)), ("stack", .text(stack)), ("transport", .text(transport)),
            ("loop", .text(loop)), ("size", .integer(size)), ("count", .integer(count)), ("mtu", .integer(mtu)),
            ("dataLength", .integer(dataLength)), ("sent", .integer(sent)), ("received", .integer(received)),
            ("lost", .integer(lost)), ("outOfOrder", .integer(outOfOrder)), ("seconds", .number(seconds, decimals: 6)),
            ("airSeconds", .number(airSeconds, decimals: 6)), ("packetsPerSecond", number(packetsPerSecond)),
            ("bytesPerSecond", number(bytesPerSecond)), ("kilobytesPerSecond", number(bytesPerSecond / 1000)),
            ("airPacketsPerSecond", number(airPacketsPerSecond)),
        ]
        if let link {
            fields += [
                ("phy", .text(link.phy)), ("intervalMilliseconds", number(link.intervalMilliseconds)),
                ("realtime", .bool(link.realtime)), ("airKilobitsPerSecond", number(airBitsPerSecond / 1000)),
                ("ceilingKilobitsPerSecond", link.ceilingBitsPerSecond.map { number($0 / 1000) } ?? .null),
            ]
        }
        if let cpu { fields += cpu.fields }
        return BenchJSON.line(BenchFigures.Value.object(fields))
    }

    /// A few human lines.
    var text: String {
        let rate = Int(packetsPerSecond.rounded()), kilobytes = Int((bytesPerSecond / 1000).rounded())
        var lines = [
            "\(benchmark): \(received) of \(sent) packets of \(size) octets in \(TextFormat.printf("%.3f", seconds)) s (wall clock)",
            "  \(rate) packets/s, \(kilobytes) kB/s; lost \(lost)\(outOfOrder > 0 ? ", \(outOfOrder) out of order" : "")",
        ]
        if mtu > 0 {
            lines.append("  ATT_MTU \(mtu), LE data length \(dataLength)")
        } else if dataLength > 0 {
            lines.append("  LE data length \(dataLength)")
        }
        if airSeconds > 0 {
            lines.append("  \(TextFormat.printf("%.3f", airSeconds)) s of air time (\(Int(airPacketsPerSecond.rounded())) packets/s of air time)")
        }
        if let link {
            let interval = TextFormat.printf("%g", link.intervalMilliseconds)
            var line = "  \(link.phy) PHY, \(interval) ms interval, \(link.realtime ? "real radio timing" : "radio time free (no --realtime)"): "
                + "\(TextFormat.printf("%.1f", airBitsPerSecond / 1000)) kbit/s of air time"
            if link.realtime, let ceiling = link.ceilingBitsPerSecond, ceiling > 0 {
                line += TextFormat.printf(" (the air's ceiling %.1f kbit/s: %.1f%%)", ceiling / 1000, 100 * airBitsPerSecond / ceiling)
            }
            lines.append(line)
        }
        if let cpu { lines.append(cpu.text) }
        lines.append("  \(stack) on the \(transport); loop: \(loop)")
        return lines.joined(separator: "\n")
    }
}

/// Drives a ``ManualEventLoop`` as fast as the CPU allows: run every job; when none is left, jump the clock to
/// the next timer. Radio time (connection events every 7.5 ms, advertising every 20 ms) costs no wall-clock
/// time, so what is measured is the stack's own cost per packet, on one thread.
struct BenchDriver {
    static let description = "ManualEventLoop, one thread, virtual time jumped to the next timer (wall clock measured)"

    let loop: ManualEventLoop
    /// Called about once a second of wall-clock time while driving (progress on stderr).
    var onTick: (() -> Void)?

    /// Runs until `done` holds (true), or until `progress` has not changed for `idleLimit` of virtual time or no
    /// work is left (false).
    @discardableResult
    func drive(until done: () -> Bool, progress: () -> Int = { 0 }, idleLimit: Duration = .seconds(10)) -> Bool {
        var lastProgress = progress()
        var lastProgressTime = loop.now
        var nextTick = ContinuousClock.now + .seconds(1)
        while true {
            loop.run()
            if done() { return true }
            let current = progress()
            if current != lastProgress {
                lastProgress = current
                lastProgressTime = loop.now
            } else if loop.now - lastProgressTime > idleLimit {
                return false
            }
            if let onTick, ContinuousClock.now >= nextTick {
                onTick()
                nextTick = ContinuousClock.now + .seconds(1)
            }
            guard let next = loop.nextDeadline else { return done() }
            loop.advance(to: max(next, loop.now))
        }
    }
}

/// Seconds in a Duration, as a Double.
func benchSeconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) + Double(attoseconds) / 1e18
}

/// Writes a line to stderr (progress, warnings).
func benchLog(_ line: String) {
    Console.error(line)
}

/// The database every GATT benchmark serves: GAP, GATT and service 0xBE00 with one characteristic 0xBE01 of
/// `properties` (Core 5.4 Vol 3 Part G §3), its value handle and its CCCD.
func benchDatabase(name: String, properties: GATTCharacteristicProperties) throws(BenchError)
    -> (database: GATTDatabase, value: UInt16, cccd: UInt16) {
    var database = GATTDatabase()
    let service: GATTServiceHandles
    do {
        try database.addGAPService(deviceName: name)
        try database.addGATTService()
        service = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xBE00), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xBE01), properties: properties, value: .stored([0])),
        ]))
    } catch {
        throw BenchError(.setupFailed, "database: \(error)")
    }
    guard let characteristic = service.characteristics.first, let cccd = characteristic.clientConfiguration else {
        throw BenchError(.setupFailed, "database: no characteristic or CCCD")
    }
    return (database, characteristic.value, cccd)
}
