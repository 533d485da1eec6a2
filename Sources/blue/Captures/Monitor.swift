import ArgumentParser
import BluetoothCore
import BluetoothDissector
import BluetoothRuntime
import Dispatch
import FoundationEssentials
import HCI
import HCITransport
import SharedAir
import StackLauncher
import SystemInterface
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue monitor`: the live, decoded HCI traffic of every controller on the shared air (btmon for the virtual air;
/// Core 5.4 Vol 4 Part E HCI packets, decoded down to L2CAP, ATT and SMP), read from the hub's monitor socket
/// (`SOCKET.monitor`, ``AirHubMonitor``'s record stream), or of the kernel's controllers from its HCI monitor
/// channel (`--hci hciN` or `kernel`, ``HCIMonitorChannel``, as btmon reads it).
struct Monitor: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        abstract: "Watch the decoded HCI traffic of every controller on the shared air, live.",
        discussion: """
            Each packet: the time, the device (dev1 and the program that joined it), < host to controller or > \
            controller to host, and the decoded packet (its fields with --verbose). --device and --layer keep some; \
            --json prints one object per packet; --write FILE also records the packets shown as a btsnoop capture. \
            Runs until --timeout, Ctrl-C or the hub stops. The hub is --hci virtual (the default) or air:PATH; \
            --hci hciN shows a kernel controller's traffic (whoever drives it: bluetoothd, a user channel) and \
            --hci kernel every kernel controller's, from the kernel's monitor channel (root or CAP_NET_RAW). \
            Programs of ours on other transports record with --snoop FILE (blue snoop show reads it).
            """)

    @Option(help: "The air hub: virtual (the default hub) or air:PATH; or hciN / kernel: the kernel's controllers.")
    var hci = "virtual"

    @Option(help: "Only this device (its number, as blue air shows it).")
    var device: Int?

    @Option(help: ArgumentHelp("Only packets carrying this layer: hci (commands and events), acl, l2cap, att or smp.", valueName: "layer"))
    var layer: String?

    @Flag(help: "Print the decoded fields of each packet, not only its summary.")
    var verbose = false

    @Flag(help: "One JSON object per packet.")
    var json = false

    @Option(help: ArgumentHelp("Also write the packets shown to this btsnoop file.", valueName: "file"))
    var write: String?

    @Option(help: "Stop after this many seconds.")
    var timeout: Double?

    func run() throws {
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.monitor() }
    }

    /// `--hci hciN` → N, `--hci kernel` → every kernel controller (nil inside); not the kernel → nil.
    static func kernelSelection(_ hci: String) -> UInt16?? {
        if hci == "kernel" { return .some(nil) }
        guard hci.hasPrefix("hci"), let index = UInt16(hci.dropFirst(3)) else { return nil }
        return .some(index)
    }

    func monitor() async throws(CLIFailure) {
        if let layer, !PacketSummary.layerNames.contains(layer) {
            throw CLIFailure(.usage, "--layer \(layer): expected \(PacketSummary.layerNames.joined(separator: ", "))")
        }
        if let selection = Self.kernelSelection(hci) {
            if device != nil { throw CLIFailure(.usage, "--device numbers the hub's devices; with --hci \(hci) choose the controller with --hci hciN") }
            return try await monitorKernel(selection)
        }
        guard let socketPath = (try? StackSpecification(parsing: hci))?.airHubSocket() else {
            throw CLIFailure(.usage, "--hci \(hci): blue monitor reads the shared air's hub (virtual or air:PATH) or the kernel's "
                             + "controllers (hciN, kernel); a program of ours on another transport records with --snoop FILE")
        }
        let path = socketPath + ".monitor"
        let fd = try Self.connect(path)
        let output = try openOutput()
        let printer = MonitorPrinter(device: device, layer: layer, verbose: verbose, json: json, output: output)
        try await follow(what: socketPath, output: output, read: { ended in Self.read(fd, printer, ended: ended) },
                         stop: { shutdown(fd, Int32(SHUT_RDWR)) })
    }

    /// The kernel's controllers, from its monitor channel: `index` only, or all of them.
    private func monitorKernel(_ index: UInt16?) async throws(CLIFailure) {
        let channel: HCIMonitorChannel
        do { channel = try HCIMonitorChannel() } catch { throw CLIFailure(.unavailable, error.reason) }
        let output = try openOutput()
        let printer = MonitorPrinter(device: nil, layer: layer, verbose: verbose, json: json, output: output, kernel: true)
        try await follow(what: index.map { "hci\($0)" } ?? "the kernel's controllers", output: output, read: { ended in
            while let (packet, error) = channel.next() {
                if let error { return ended("the monitor channel failed: \(error)") }
                guard let packet, index == nil || packet.index == index else { continue }
                printer.show(kernelPacket: packet)
            }
            ended(nil)
        }, stop: { channel.close() })
    }

    /// The btsnoop file of --write, its header written; nil without the option.
    private func openOutput() throws(CLIFailure) -> Int32? {
        guard let write else { return nil }
        let file: Int32
        switch POSIX.createOutputFile(write) {
        case .success(let opened): file = opened
        case .failure(let error): throw CLIFailure(.failed, error.reason)
        }
        _ = POSIX.writeAll(file, BTSnoopWriter(datalink: .hciUART).bytes, style: .file)
        return file
    }

    /// Runs `read` on a thread of its own until it ends (its reason, nil for a clean end), a signal or --timeout;
    /// then `stop` wakes it.
    private func follow(what: String, output: Int32?, read: @escaping @Sendable (@escaping @Sendable (String?) -> Void) -> Void,
                        stop: @escaping @Sendable () -> Void) async throws(CLIFailure) {
        let ended = OneShot<String?>()
        DetachedThread.spawn(named: "blue.monitor") { read { ended.fire($0) } }
        if Console.isTerminal && !json { Console.error("Monitoring \(what)... (Ctrl-C to stop)") }
        let watcher = SignalWatcher { _ in ended.fire(nil) }
        let timer = timeout.map { seconds in
            let item = DispatchWorkItem { ended.fire(nil) }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: item)
            return item
        }
        let reason = await ended.wait()
        watcher.cancel()
        timer?.cancel()
        stop()
        if let output { POSIX.closeDescriptor(output) }
        if let reason { throw CLIFailure(.unavailable, reason) }
    }

    /// Connects to the hub's monitor socket.
    private static func connect(_ path: String) throws(CLIFailure) -> Int32 {
        do throws(AirHubError) {
            try AirHub.checkTrust(ofSocket: path)
        } catch {
            throw CLIFailure(.unavailable, error.reason)
        }
        switch SocketOwnership.connect(toServerAt: path) {
        case .success(let fd): return fd
        case .failure(.badPath(let reason)): throw CLIFailure(.usage, reason)
        case .failure(.untrusted(let error)): throw CLIFailure(.unavailable, error.reason)
        case .failure(.cannotConnect(let code)):
            throw CLIFailure(.unavailable, "no air hub monitor at \(path) (\(POSIX.errorText(code))): is `blue air` running there?")
        }
    }

    /// Reads records until the hub closes the socket (or it is shut down here): 2 octets of device number, then a
    /// btsnoop record (24-octet header, big-endian lengths).
    private static func read(_ fd: Int32, _ printer: MonitorPrinter, ended: @escaping @Sendable (String?) -> Void) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return ended(count == 0 ? "the hub stopped" : nil) }
            buffer.append(contentsOf: chunk[..<count])
            var offset = 0
            while buffer.count - offset >= 26 {
                let included = buffer[offset + 6..<offset + 10].reduce(0) { $0 << 8 | Int($1) }
                guard included <= 65_540 else { return ended("the hub sent a malformed record") }
                guard buffer.count - offset >= 26 + included else { break }
                let device = Int(buffer[offset]) | Int(buffer[offset + 1]) << 8
                var reader = ByteReader(buffer[offset + 2..<offset + 26])
                guard let original = try? reader.readBigEndian(UInt32.self, "original length"),
                      (try? reader.readBigEndian(UInt32.self, "included length")) != nil,
                      let flags = try? reader.readBigEndian(UInt32.self, "flags"),
                      let drops = try? reader.readBigEndian(UInt32.self, "drops"),
                      let time = try? reader.readBigEndian(UInt64.self, "timestamp") else { return ended("the hub sent a malformed record") }
                let record = BTSnoopRecord(originalLength: original, flags: BTSnoopFlags(rawValue: flags), cumulativeDrops: drops,
                                           timestamp: Int64(bitPattern: time), data: Array(buffer[offset + 26..<offset + 26 + included]))
                printer.show(device: device, record)
                offset += 26 + included
            }
            buffer.removeFirst(offset)
        }
    }
}

/// What `blue monitor` prints of each record, and the device names the hub's notes give.
final class MonitorPrinter: Sendable {
    private struct State {
        var names: [Int: String] = [:]
        var number = 0
        /// One decoder per device: handles and channels mean something only on their own host.
        var decoders: [Int: CaptureDecoder] = [:]
    }

    private let state = LockedValue(State())
    let device: Int?
    let layer: String?
    let verbose: Bool
    let json: Bool
    let output: Int32?

    /// Devices are the kernel's controllers (number = index + 1, shown "hciN"), not the hub's.
    let kernel: Bool

    init(device: Int?, layer: String?, verbose: Bool, json: Bool, output: Int32?, kernel: Bool = false) {
        self.device = device
        self.layer = layer
        self.verbose = verbose
        self.json = json
        self.output = output
        self.kernel = kernel
    }

    /// A packet of the kernel's monitor channel: HCI packets as records of controller index + 1, the rest as notes.
    func show(kernelPacket packet: HCIMonitorChannel.Packet) {
        let name = "hci\(packet.index)"
        switch packet.kind {
        case .frame(let frame, let fromController):
            let now = Int64(Date().timeIntervalSince1970 * 1e6)
            show(device: Int(packet.index) + 1, BTSnoopRecord(
                flags: BTSnoopFlags(type: frame.type, direction: fromController ? .received : .sent),
                timestamp: BTSnoop.timestamp(unixMicroseconds: now), data: [frame.type.rawValue] + frame.packet))
        case .newIndex(_, _, let address, let controllerName):
            note("\(name): controller \(address)\(controllerName.isEmpty ? "" : " (\(controllerName))")")
        case .deleteIndex:
            note("\(name): controller removed")
        case .note(let text):
            note(text)
        case .other:
            break
        }
    }

    func show(device number: Int, _ record: BTSnoopRecord) {
        guard number != 0 else { return note(String(decoding: record.data, as: UTF8.self)) }
        if let device, device != number { return }
        let node = state.withLock { state in
            state.decoders[number, default: CaptureDecoder()].dissection(of: record, datalink: .hciUART)
        }
        let summary = PacketSummary(node, indicator: record.data.first)
        if let layer, !summary.carries(layer) { return }
        let (sequence, name) = state.withLock { state -> (Int, String?) in
            state.number += 1
            return (state.number, state.names[number])
        }
        if let output {
            var writer = BTSnoopWriter(datalink: .hciUART)
            _ = writer.takeBytes()
            writer.write(record)
            _ = POSIX.writeAll(output, writer.takeBytes(), style: .file)
        }
        if json {
            var text = SnoopFormatter.json(record, number: sequence, node: node)
            text.removeLast()
            if kernel {
                Console.line(text + ",\"controller\":\"hci\(number - 1)\"}")
            } else {
                Console.line(text + ",\"device\":\(number)" + (name.map { ",\"program\":" + Dissection.jsonString($0) } ?? "") + "}")
            }
            return
        }
        let time = Timestamp.clock(Date(timeIntervalSince1970: Double(record.unixMicroseconds) / 1e6))
        let arrow = record.direction == .received ? TerminalStyle.green(">") : TerminalStyle.yellow("<")
        let who = kernel ? "hci\(number - 1)" : "dev\(number)" + (name.map { " \($0)" } ?? "")
        Console.line("\(time) \(TerminalStyle.dim(who)) \(arrow) \(summary.text)")
        if verbose { for child in node.children { Console.line(child.renderText(indent: 4)) } }
    }

    /// "joined: dev1 0A:1B:00:00:00:01 via blue serve (pid 42) ..." names dev1 "blue serve"; notes are printed as they are.
    func note(_ text: String) {
        let words = text.split(separator: " ")
        if words.count > 1, words[1].hasPrefix("dev"), let number = Int(words[1].dropFirst(3)),
           let via = text.firstRange(of: " via "), let pid = text[via.upperBound...].firstRange(of: " (pid ") {
            let name = String(text[via.upperBound..<pid.lowerBound])
            state.withLock { $0.names[number] = name }
        }
        if json {
            Console.json(["note": text])
        } else if device == nil || text.contains("dev\(device ?? 0) ") {
            Console.line(Timestamp.clock() + " " + TerminalStyle.bold(text))
        }
    }
}
