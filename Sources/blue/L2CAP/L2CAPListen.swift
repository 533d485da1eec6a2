import ArgumentParser
import BluetoothCore
import BluetoothEngine
import BluetoothRuntime
import L2CAP
import StackLauncher

/// `blue l2cap listen PSM`: advertises (connectable) and accepts one LE credit-based channel on PSM (Core 5.4 Vol 3
/// Part A §4.22: the LE Credit Based Connection Response), then pipes it to standard input and output.
struct L2CAPListen: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Advertise and accept one channel on PSM; pipe it to standard input and output.")

    @OptionGroup var stack: StackOptions
    @OptionGroup var pipe: L2CAPPipeOptions

    @Argument(help: "The LE_PSM to accept channels on: 0x0080-0x00FF (dynamic) or 0x0001-0x007F.")
    var psm: String

    @Option(help: "The local name to advertise.")
    var name: String = "blue-l2cap"

    @Option(help: "Seconds to wait for a channel before giving up (exit 1); default: until one opens or Ctrl-C.")
    var timeout: Double?

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout <= 86_400) {
            throw ValidationError("--timeout must be between 0 and 86400 seconds")
        }
        guard !name.isEmpty, name.utf8.count <= 26 else {
            throw ValidationError("--name must be 1 to 26 octets of UTF-8 (it shares 31 octets of advertising data)")
        }
    }

    func run() throws {
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.listen() }
    }

    func listen() async throws(CLIFailure) {
        let psm = try L2CAPPSMArgument.parse(self.psm)
        let label = "blue l2cap listen"
        let launched = try await stack.openEngine(label: "l2cap")
        defer { launched.shutdown() }
        let engine = launched.engine
        let mtu = UInt16(pipe.mtu)
        let server = L2CAPChannelServer(psm: psm, mtu: mtu, mps: min(mtu, 247), initialCredits: 16)
        let registered = await launched.awaitCompletion { (done: @escaping @Sendable (Result<Void, L2CAPLinkError>) -> Void) in
            engine.registerL2CAPServer(server, requiresEncryption: false, completion: done)
        }
        if case .failure(let error) = registered {
            throw CLIFailure(.failed, "cannot listen on PSM \(Dissection.hex16(psm)): \(error.reason)")
        }
        let pipe = L2CAPPipe(stack: launched, listeningPSM: psm)
        defer { pipe.stop() }
        try await advertise(on: launched)
        if self.pipe.verbose {
            Console.error("\(label): listening on PSM \(Dissection.hex16(psm)) as \(name) (\(launched.controllerInfo.ownAddress))")
        }
        let timer = timeout.map { seconds in
            launched.eventLoop.schedule(after: duration(seconds: seconds)) { pipe.fail("no channel opened on PSM \(Dissection.hex16(psm)) within \(seconds) s") }
        }
        var peer = ""
        var events = pipe.events.makeAsyncIterator()
        waiting: while let event = await events.next() {
            switch event {
            case .opened(_, _, let address):
                timer?.cancel()
                peer = address?.string ?? "the central"
                break waiting
            case .peerLeftWithoutChannel:
                try await advertise(on: launched)
            case .failed(let reason):
                throw CLIFailure(.failed, reason)
            case .interrupted:
                return
            case .inputEnded, .closed, .linkLost:
                continue
            }
        }
        engine.unregisterL2CAPServer(psm: psm)
        try await pipe.pump(&events, peer: peer, options: self.pipe, command: label)
    }

    private func advertise(on launched: any OpenedStack) async throws(CLIFailure) {
        let engine = launched.engine, content = AdvertisingContent(localName: name)
        let started = await launched.awaitCompletion { (done: @escaping @Sendable (Result<Void, HostError>) -> Void) in
            engine.startAdvertising(content, options: AdvertisingOptions(kind: .connectable), completion: done)
        }
        if case .failure(let error) = started { throw CLIFailure(.failed, "cannot advertise: \(error.reason)") }
    }
}

