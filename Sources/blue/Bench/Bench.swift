import ArgumentParser
import StackLauncher

/// `blue bench`: throughput of our stack measured in-process (issue 3 and issue 4 benchmarks). Speed is printed,
/// never asserted; `Scripts/bench.sh` runs these next to the same scenario on Bumble and prints the ratio.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure the stack: GATT throughput, the virtual radio, scale (advertisers, connections) and latency.",
        discussion: """
            Everything runs in this process on the virtual air, on one thread: a ManualEventLoop whose virtual \
            clock jumps to the next timer whenever no work is left, so radio time (connection intervals, \
            advertising intervals) costs nothing and the wall-clock time measured is the stack's own cost. \
            Setup (start, connect, MTU exchange, data length, subscribe) is not timed. Progress goes to stderr \
            about once a second; figures to stdout (one JSON object with --json).
            """,
        subcommands: [BenchNotify.self, BenchWrite.self, BenchAir.self, BenchACL.self, BenchAdvertisers.self, BenchConnections.self, BenchLatency.self]
    )
}

/// Options shared by `notify` and `write`.
struct BenchGATTOptions: ParsableArguments {
    @Option(help: "Value size in octets (4...ATT_MTU-3; the first 4 octets carry a sequence number).")
    var size = 244

    @Option(help: "How many values to send.")
    var count = 10_000

    @Option(help: "ATT_MTU both stacks offer in the exchange (23...517).")
    var mtu = 247

    @OptionGroup var radio: BenchRadioOptions

    @OptionGroup var across: BenchAcrossOptions

    @OptionGroup var output: BenchOutputOptions
}

/// Between two processes (`--hci` with `--role`): each runs its own host on its own controller.
struct BenchAcrossOptions: ParsableArguments {
    @Option(name: .customLong("hci"), help: ArgumentHelp(
        "Measure between two processes: this one's controller (virtual, air:PATH, tcp:HOST:PORT, unix:PATH, serial:..., "
            + "hciN); run the other side with the other --role.", valueName: "transport"))
    var hci: String?

    @Option(help: ArgumentHelp("With --hci: central (scans, connects, subscribes or writes) or peripheral (serves, advertises).",
                               valueName: "role"))
    var role: String?

    @Option(help: "With --hci: the name the peripheral advertises and the central looks for.")
    var name = "blue-bench"

    @Option(help: "With --hci: seconds each step may wait (the peer to appear, nothing moving).")
    var timeout: Double = 60

    @Option(name: .customLong("snoop"), help: ArgumentHelp("With --hci: record the HCI traffic in this btsnoop file.", valueName: "file"))
    var snoop: String?
}
/// The link a GATT benchmark runs on: PHY, data length, interval, and whether the air charges radio time.
struct BenchRadioOptions: ParsableArguments {
    @Flag(help: ArgumentHelp(
        "Real radio timing: every packet takes its air time on its PHY and an event holds as many exchanges as "
            + "fit in the interval; the air-time figures are then a real link's (see AirConfiguration)."))
    var realtime = false

    @Option(help: "The PHY both sides ask for after connecting: 1M, 2M or coded.")
    var phy: BenchPHY = .le1M

    @Option(name: .customLong("data-length"), help: "LE data length both sides ask for (27...251 octets).")
    var dataLength = 251

    @Option(help: ArgumentHelp("Connection interval in milliseconds (7.5...4000; default 7.5, or 50 with --realtime).",
                               valueName: "ms"))
    var interval: Double?

    /// The interval in 1.25 ms units: longer by default on the timed air, where the gap at the end of each event
    /// costs a share of the throughput that shrinks with the interval (§4.2 of the spec vectors).
    var intervalUnits: UInt16 {
        UInt16(clamping: Int(((interval ?? (realtime ? 50 : 7.5)) / 1.25).rounded()))
    }
}

/// A PHY on the command line.
enum BenchPHY: String, ExpressibleByArgument, CaseIterable {
    case le1M = "1M"
    case le2M = "2M"
    case leCoded = "coded"

    init?(argument: String) {
        guard let phy = Self.allCases.first(where: { $0.rawValue.lowercased() == argument.lowercased() }) else { return nil }
        self = phy
    }

    static var allValueStrings: [String] { allCases.map(\.rawValue) }
}

/// Options every `blue bench` subcommand has: how the figures and the progress are printed.
struct BenchOutputOptions: ParsableArguments {
    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @Flag(help: "No progress lines on stderr.")
    var quiet = false

    @OptionGroup var log: LogOptions

    /// Said on stderr before every measurement of a debug build (its figures are several times lower than a
    /// release build's), even with --quiet: a figure from a debug build must not pass for the stack's speed.
    static var buildWarning: String? {
        #if DEBUG
        return "blue bench: this is a debug build; measure a release build: swift run -c release blue bench ..."
        #else
        return nil
        #endif
    }

    /// Runs one measurement of `benchmark`: its progress lines on stderr unless --quiet, the figures on stdout
    /// (JSON with --json); a failure is one line on stderr and exit 64 (bad options) or 1.
    func report<Benchmark: ReportsProgress>(
        _ name: String, _ benchmark: Benchmark, _ measure: (Benchmark) throws(BenchError) -> BenchResult
    ) throws {
        try report(name, benchmark) { benchmark throws(BenchError) -> (json: String, text: String) in
            let result = try measure(benchmark)
            return (result.json, result.text)
        }
    }

    /// ``report(_:_:_:)`` for the scale benchmarks' figures.
    func report<Benchmark: ReportsProgress>(
        _ name: String, _ benchmark: Benchmark, _ measure: (Benchmark) throws(BenchError) -> BenchFigures
    ) throws {
        try report(name, benchmark) { benchmark throws(BenchError) -> (json: String, text: String) in
            let figures = try measure(benchmark)
            return (figures.json, figures.text)
        }
    }

    private func report<Benchmark: ReportsProgress>(
        _ name: String, _ benchmark: Benchmark, _ measure: (Benchmark) throws(BenchError) -> (json: String, text: String)
    ) throws {
        if !quiet { benchmark.onProgress = benchLog }
        if let warning = Self.buildWarning { benchLog(warning) }
        do throws(BenchError) {
            let output = try measure(benchmark)
            print(json ? output.json : output.text)
        } catch {
            benchLog("blue bench \(name): \(error)")
            throw ExitCode(error.code == .badOptions ? 64 : 1)
        }
    }
}

/// A benchmark that prints progress lines through `onProgress` while it runs.
protocol ReportsProgress: AnyObject {
    var onProgress: ((String) -> Void)? { get set }
}

extension GATTBenchmark: ReportsProgress {}
extension RadioBenchmark: ReportsProgress {}

func runGATTBench(_ mode: GATTBenchmark.Mode, _ options: BenchGATTOptions) throws {
    if let hci = options.across.hci { return try runAcrossProcesses(mode, options, hci: hci) }
    if options.across.role != nil { throw ValidationError("--role goes with --hci (the benchmark between two processes)") }
    let radio = options.radio
    let benchmark = GATTBenchmark(GATTBenchmark.Parameters(
        mode: mode, size: options.size, count: options.count, mtu: options.mtu, dataLength: radio.dataLength,
        interval: radio.intervalUnits, phy: radio.phy, realtime: radio.realtime))
    try options.output.report(mode.rawValue, benchmark) { benchmark throws(BenchError) in try benchmark.run() }
}

/// `blue bench notify|write --hci T --role R`: this side of the benchmark between two processes.
func runAcrossProcesses(_ mode: GATTBenchmark.Mode, _ options: BenchGATTOptions, hci: String) throws {
    let across = options.across
    guard let roleText = across.role, let role = AcrossProcessesBenchmark.Role(rawValue: roleText) else {
        throw ValidationError("--hci needs --role central or --role peripheral (run the other side in another process)")
    }
    guard !options.radio.realtime else {
        throw ValidationError("--realtime is the virtual air's timing; with --hci the controller has its own")
    }
    guard across.timeout > 0, across.timeout <= 86_400 else { throw ValidationError("--timeout must be between 0 and 86400 seconds") }
    guard !across.name.isEmpty, across.name.utf8.count <= 26 else { throw ValidationError("--name must be 1...26 octets of UTF-8") }
    let parameters = AcrossProcessesBenchmark.Parameters(
        mode: mode, role: role, size: options.size, count: options.count, mtu: options.mtu,
        dataLength: options.radio.dataLength, phy: options.radio.phy, name: across.name,
        timeout: .milliseconds(Int(across.timeout * 1000)))
    let output = options.output
    try runCommand { () async throws(CLIFailure) in
        var launch = StackLaunchOptions(label: "blue.bench.\(role.rawValue)")
        launch.host.preferredATTMTU = options.mtu
        let stack = try await StackOptions.open(hci: hci, snoop: across.snoop, launch)
        defer { stack.shutdown() }
        let benchmark = AcrossProcessesBenchmark(parameters, stack: stack)
        if !output.quiet { benchmark.onProgress = benchLog }
        if let warning = BenchOutputOptions.buildWarning { benchLog(warning) }
        do throws(BenchError) {
            let result = try await benchmark.run()
            print(output.json ? result.json : result.text)
        } catch {
            throw CLIFailure(error.code == .badOptions ? .usage : .failed, "blue bench \(mode.rawValue): \(error)")
        }
    }
}

/// `blue bench notify`.
struct BenchNotify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify",
        abstract: "The server notifies --count values of --size octets, paced by readiness; the client counts them.")

    @OptionGroup var options: BenchGATTOptions

    func run() throws { try runGATTBench(.notify, options) }
}

/// `blue bench write`.
struct BenchWrite: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write",
        abstract: "The client writes --count values of --size octets (without response, paced by readiness, unless --with-response).")

    @OptionGroup var options: BenchGATTOptions

    @Flag(help: "Write Requests, each waiting for its Write Response, instead of Write Commands.")
    var withResponse = false

    func run() throws { try runGATTBench(withResponse ? .writeWithResponse : .write, options) }
}

/// `blue bench air`.
struct BenchAir: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "air",
        abstract: "Advertising reports per second through two virtual controllers (HCI level, no host).")

    @Option(help: "How many advertising reports to receive.")
    var reports = 100_000

    @OptionGroup var output: BenchOutputOptions

    func run() throws {
        try output.report("air", RadioBenchmark()) { benchmark throws(BenchError) in
            try benchmark.runAdvertising(count: reports)
        }
    }
}

/// `blue bench advertisers`.
struct BenchAdvertisers: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "advertisers",
        abstract: "How long one scanner takes to hear --count advertising devices on one air (wall clock and air time).")

    @Option(help: "How many advertising devices.")
    var count = 1000

    @Option(help: "Their advertising interval in milliseconds (20...10240).")
    var interval = 100.0

    @OptionGroup var output: BenchOutputOptions

    func run() throws {
        let units = UInt16(clamping: Int((interval / 0.625).rounded()))
        try output.report("advertisers", AdvertisersBenchmark(count: count, interval: units)) { benchmark throws(BenchError) in
            try benchmark.run()
        }
    }
}

/// `blue bench connections`.
struct BenchConnections: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connections",
        abstract: "Centrals connected to --count peripherals at once, each notifying: links lost, notifications/s, memory per link.")

    @Option(help: "How many peripherals (links), at most 10000.")
    var count = 100

    @Option(help: "Links per central (1...1000): 10000 links take 10 centrals.")
    var perCentral = 1000

    @Option(help: "Notifications each peripheral sends.")
    var perLink = 1000

    @Option(help: "Notification size in octets (4...244).")
    var size = 20

    @Option(help: "Connection interval in milliseconds (7.5...4000).")
    var interval = 30.0

    @OptionGroup var output: BenchOutputOptions

    func run() throws {
        let units = UInt16(clamping: Int((interval / 1.25).rounded()))
        let benchmark = ConnectionsBenchmark(ConnectionsBenchmark.Parameters(
            count: count, perLink: perLink, size: size, interval: units, perCentral: perCentral))
        try output.report("connections", benchmark) { benchmark throws(BenchError) in try benchmark.run() }
    }
}

/// `blue bench latency`.
struct BenchLatency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latency",
        abstract: "Scan, connect, discover, subscribe and first notification between two stacks: each step's time.")

    @Flag(help: "Real radio timing: every packet takes its air time (the air-time figures are a real link's).")
    var realtime = false

    @OptionGroup var output: BenchOutputOptions

    func run() throws {
        try output.report("latency", LatencyBenchmark(realtime: realtime)) { benchmark throws(BenchError) in try benchmark.run() }
    }
}

/// `blue bench acl`.
struct BenchACL: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "acl",
        abstract: "ACL packets per second between two virtual controllers (HCI level, 8 buffers in flight, no host).")

    @Option(help: "How many ACL packets to deliver.")
    var count = 100_000

    @Option(help: "ACL payload octets per packet (1...251).")
    var size = 251

    @OptionGroup var output: BenchOutputOptions

    func run() throws {
        try output.report("acl", RadioBenchmark()) { benchmark throws(BenchError) in
            try benchmark.runACL(count: count, size: size)
        }
    }
}
