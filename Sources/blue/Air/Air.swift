import ArgumentParser
import BluetoothRuntime
import Dispatch
import FoundationEssentials
import HCITransport
import StackLauncher
import VirtualController
import SharedAir
import AirConsole
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue air`: the shared virtual air (issue 3 item 4). Every process that connects to the hub's UNIX socket, and
/// every host that connects to one of its `--h4-tcp` ports, gets a new virtual controller on one air, and speaks
/// HCI over H4 on that connection.
struct Air: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the shared virtual air: a hub where every joining host gets its own virtual controller.",
        discussion: """
            Hosts join through a UNIX socket: --socket, else $OCB_AIR_SOCKET (as every other command), else \
            $XDG_RUNTIME_DIR/opencorebluetooth/air.sock when XDG_RUNTIME_DIR is set, else \
            /tmp/opencorebluetooth-<uid>/air.sock (--hci air:PATH on other commands joins it). Each connection is a new controller speaking HCI over H4. \
            The socket is private: the hub creates the default folder with mode 0700 and refuses it (one line, exit 1) \
            when it is not a folder of this user with mode 0700, or a folder of --socket that another user owns or \
            can write into (unless sticky, as /tmp); the sockets are mode 0600, and SOCKET.control and SOCKET.monitor \
            refuse other users. \
            --h4-tcp PORT or HOST:PORT (repeatable; HOST defaults to 127.0.0.1, loopback) also accepts hosts over TCP, \
            one controller per connection (Bumble: tcp-client:127.0.0.1:PORT); any local user can join a TCP air, \
            and any host that reaches HOST when it is not loopback. Device n gets the public address 0A:1B:00:00:00:nn and a place on a grid \
            2 m apart. The hub prints joins, leaves, connections and a traffic summary (every --stats-interval \
            seconds and at exit); SIGINT or SIGTERM stop it and remove the socket (exit 0), and so does a closed \
            standard output (`blue air --json | head -1`). A second hub on the same socket fails at once with exit \
            code 1. --vhci (Linux, root or access to /dev/vhci, module hci_vhci) puts a controller of this air under \
            the kernel: it prints the hciN it got, and the adapter disappears when the hub stops. While it runs, \
            `blue fault` changes the air (loss, a dropped link, a radio off, a device out of range) through \
            SOCKET.control, and the hub prints each change ("fault: ...").
            """
    )

    @Option(name: .customLong("socket"), help: "The UNIX socket path hosts join through (default: $OCB_AIR_SOCKET, see below).")
    var socketPath: String?

    @Option(name: .customLong("h4-tcp"), help: ArgumentHelp(
        "Also accept hosts over TCP on HOST:PORT, or PORT on 127.0.0.1 (repeatable): any local user can join a TCP air.",
        valueName: "host:port"))
    var tcpEndpoints: [String] = []

    @Flag(name: .customLong("vhci"), help: ArgumentHelp(
        "Also give the Linux kernel a controller on this air through /dev/vhci (repeat for more): an hciN for "
            + "bluetoothd, bluetoothctl and any Bluetooth program."))
    var vhciControllers: Int

    @Option(name: .customLong("vhci-device"), help: ArgumentHelp("The virtual HCI device --vhci opens.", valueName: "path"))
    var vhciDevice = "/dev/vhci"

    @Option(name: .customLong("snoop"), help: "Write one btsnoop capture per controller into this directory.")
    var snoopDirectory: String?

    @Option(help: "Seed of the air's random source (same seed and scenario, same packets; default: the scenario's, else 1).")
    var seed: UInt64?

    @Option(help: ArgumentHelp("Play a timeline of faults and moves on this air (JSON: {\"seed\": N, \"steps\": [{\"at\": "
                                   + "SECONDS, \"fault\": \"move dev2 500 0\"}, ...]}, each fault a `blue fault` line, times "
                                   + "from the hub's start); with --record the run can be replayed.", valueName: "file"))
    var scenario: String?

    @Option(help: ArgumentHelp("Record every step of the air (joins, host frames, timer firings, faults) in this file, "
                                   + "for --replay.", valueName: "file"))
    var record: String?

    @Option(help: ArgumentHelp("Write every PDU on the air (advertising, connection requests, data with its LL control, "
                                   + "L2CAP, ATT and SMP, encrypted ones as their sender had them) to this pcap file as a "
                                   + "link-layer sniffer would capture it, for Wireshark (also with --replay).",
                               valueName: "file"))
    var sniff: String?

    @Option(help: ArgumentHelp("Replay a recording made with --record on virtual time, with no hosts: check that every "
                                   + "controller sends its host what it sent then, and (with --snoop DIR) write each "
                                   + "device's capture. Nothing listens.", valueName: "file"))
    var replay: String?

    @Option(help: ArgumentHelp("Percentage (0...100, `%` optional) of heard packets lost anyway (the link layer "
                                   + "retransmits); `blue fault loss` changes it while the hub runs.", valueName: "percent"))
    var loss: String = "0"

    @Flag(help: ArgumentHelp("Real radio timing: every packet takes its air time on its PHY, a connection event holds "
                                + "what fits in its interval (throughput and latency of a real link)."))
    var realtime = false

    @Option(name: .customLong("stats-interval"), help: "Seconds between traffic summaries (0: only at exit).")
    var statisticsInterval: Double = 5

    @Option(name: .customLong("console"), help: ArgumentHelp(
        "Serve the air console, a web page of this air and its control API, on HOST:PORT (`--console` alone: "
            + "127.0.0.1:\(Air.defaultConsolePort)); its address with the token the API needs is printed.",
        valueName: "host:port"))
    var console: String?

    @Flag(help: "Print one JSON object per line for each event.")
    var json = false

    /// The console's port when `--console` comes without an address.
    static let defaultConsolePort = 7480

    /// The command line with a bare `blue air … --console` (last, or followed by another option) given the default
    /// address, since an option's value cannot be optional in ArgumentParser.
    static func withConsoleDefault(_ arguments: [String]) -> [String] {
        guard arguments.first == "air" else { return arguments }
        var result: [String] = []
        for (index, argument) in arguments.enumerated() {
            result.append(argument)
            guard argument == "--console" else { continue }
            let next = index + 1 < arguments.count ? arguments[index + 1] : nil
            if next == nil || next?.hasPrefix("-") == true { result.append("127.0.0.1:\(defaultConsolePort)") }
        }
        return result
    }

    func validate() throws {
        guard lossPercent != nil else { throw ValidationError("--loss \(loss): expected a percentage from 0 to 100") }
        guard statisticsInterval >= 0, statisticsInterval <= 86_400 else {
            throw ValidationError("--stats-interval must be between 0 and 86400 seconds")
        }
        if let console {
            do {
                _ = try AirHubTCPEndpoint(parsing: console)
            } catch {
                throw ValidationError("--console \(error.reason)")
            }
            guard replay == nil else { throw ValidationError("--console shows a live air: not with --replay") }
        }
        if scenario != nil, replay != nil { throw ValidationError("--scenario plays on a live air: not with --replay") }
    }

    /// --loss as a percentage, nil when it is not one.
    var lossPercent: Double? { AirHubFault.percent(loss) }

    func run() throws {
        if let replay { return try runReplay(replay) }
        var endpoints: [AirHubTCPEndpoint] = []
        for text in tcpEndpoints {
            do {
                endpoints.append(try AirHubTCPEndpoint(parsing: text))
            } catch {
                throw ValidationError("--h4-tcp \(error.reason)")
            }
        }
        var timeline: AirScenario?
        if let scenario {
            do {
                timeline = try AirScenario.load(path: scenario)
            } catch {
                printError(error.reason)
                throw ExitCode(64)
            }
        }
        var air = AirConfiguration()
        air.packetLoss = (lossPercent ?? 0) / 100
        air.realRadioTiming = realtime
        let interval: Duration? = statisticsInterval > 0 ? .milliseconds(Int(statisticsInterval * 1000)) : nil
        var configuration = AirHubConfiguration(
            socketPath: socketPath ?? StackLaunchOptions.defaultHubSocketPath, tcpEndpoints: endpoints, snoopDirectory: snoopDirectory,
            seed: seed ?? timeline?.seed ?? 1, air: air, statisticsInterval: interval)
        configuration.recordPath = record
        configuration.sniffPath = sniff
        let hub = AirHub(configuration: configuration, eventLoop: DispatchEventLoop(label: "blue.air"))
        let json = json
        let airConsole = LockedValue<AirConsole?>(nil)
        hub.onEvent = { event in
            // Unbuffered: a pipe reader sees each line at once.
            Console.line(json ? event.json : event.text)
            airConsole.load()?.publish(event)
        }
        // The reader went away (`| head -1`): stop as on SIGTERM, quietly, the socket removed.
        Console.whenOutputCloses {
            airConsole.load()?.stop()
            _ = hub.stop()
            CommandRun.exitNow(0)
        }
        Console.watchForReaderGone()
        signal(SIGPIPE, SIG_IGN)
        // Before start, whose "listening" line tells a supervisor it may signal us now. Stopping removes the socket
        // and prints the final statistics; then the process ends at once (no exit handlers while threads run).
        ProcessSignals.handle { _ in
            airConsole.load()?.stop()
            _ = hub.stop()
            Console.flush()
            CommandRun.exitNow(0)
        }
        do {
            try hub.start()
            if let timeline {
                hub.play(timeline)
                let last = timeline.steps.last.map { " over \($0.at.components.seconds) s" } ?? ""
                if json {
                    Console.json(["event": "scenario", "steps": timeline.steps.count, "seed": Int(truncatingIfNeeded: seed ?? timeline.seed ?? 1)])
                } else {
                    Console.line("scenario: \(timeline.steps.count) step\(timeline.steps.count == 1 ? "" : "s")\(last), seed \(seed ?? timeline.seed ?? 1)")
                }
            }
            if let console {
                let endpoint = try AirHubTCPEndpoint(parsing: console)
                let started = try AirConsole.start(hub: hub, host: endpoint.host, port: Int(endpoint.port))
                airConsole.store(started)
                if json {
                    Console.json(["event": "console", "url": started.address, "host": started.host, "port": started.port])
                } else {
                    Console.line("console: \(started.address)"
                                 + (Self.isLoopback(started.host) ? "" : " (not loopback: anyone who reaches \(started.host) and has the token drives this air)"))
                }
            }
        } catch {
            printError(error.reason)
            _ = hub.stop()
            throw ExitCode(1)
        }
        for _ in 0..<vhciControllers {
            do {
                let transport = try VHCIControllerTransport(path: vhciDevice)
                let adapter = "hci\(transport.deviceIndex)"
                if json {
                    Console.json(["event": "vhci", "adapter": adapter, "index": Int(transport.deviceIndex)])
                } else {
                    Console.line("vhci: the kernel's \(adapter) is a controller on this air")
                }
                hub.adopt(transport, origin: "vhci:\(adapter)")
            } catch {
                printError(error.reason)
                _ = hub.stop()
                Console.flush()
                CommandRun.exitNow(69)
            }
        }
        dispatchMain()
    }

    private static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// `--replay FILE`: the recording's steps again on virtual time; one line per device, exit 1 when one diverged.
    private func runReplay(_ path: String) throws {
        guard record == nil, tcpEndpoints.isEmpty, vhciControllers == 0 else {
            throw ValidationError("--replay runs alone: no --record, --h4-tcp or --vhci with it")
        }
        let outcome: AirReplay.Outcome
        var sniffer: LinkLayerSniffer?
        do {
            sniffer = try sniff.map { path throws(AirHubError) in try LinkLayerSniffer(path: path) }
            outcome = try AirReplay.run(path: path, snoopDirectory: snoopDirectory, sniffer: sniffer)
        } catch {
            sniffer?.finish()
            printError(error.reason)
            throw ExitCode(error.code == .invalidRecording ? 64 : 1)
        }
        if let failure = sniffer?.finish() {
            printError(failure)
            throw ExitCode(1)
        }
        for device in outcome.devices {
            let verdict: String
            switch device.matches {
            case true?: verdict = "as recorded"
            case false?: verdict = "DIVERGED (recorded: \(device.recorded?.count ?? 0) frames, hash \(String(device.recorded?.hash ?? 0, radix: 16)))"
            case nil: verdict = "no digest in the recording"
            }
            if json {
                var object: [String: Any] = ["event": "replayed", "device": device.identifier, "address": device.address.string,
                                             "framesToHost": device.framesToHost, "hash": String(device.hash, radix: 16)]
                if let matches = device.matches { object["matches"] = matches }
                Console.json(object)
            } else {
                Console.line("device \(device.identifier) \(device.address.string): \(device.framesToHost) frames to its host, \(verdict)"
                             + (snoopDirectory.map { ", capture \($0)/device\(device.identifier).btsnoop" } ?? ""))
            }
        }
        let seconds = Double(outcome.duration.components.seconds) + Double(outcome.duration.components.attoseconds) / 1e18
        let summary = "replayed \(outcome.steps) steps, \(TextFormat.printf("%.3f", seconds)) s of air time, seed \(outcome.seed): "
            + (outcome.matches == true ? "every controller sent its host what it sent in the recording"
               : outcome.matches == false ? "the replay diverged from the recording" : "no digests to compare (the recording was cut)")
        if json {
            Console.json(["event": "replay", "steps": outcome.steps, "airSeconds": seconds, "seed": Int(truncatingIfNeeded: outcome.seed),
                          "matches": outcome.matches as Any])
        } else {
            Console.line(summary)
        }
        if outcome.matches == false { throw ExitCode(1) }
    }
}
