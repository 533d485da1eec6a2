import ArgumentParser
import BluetoothCore
import BluetoothEngine
import BluetoothRuntime
import L2CAP
import StackLauncher

/// `blue l2cap connect DEVICE PSM`: connects to DEVICE and opens an LE credit-based channel to PSM (Core 5.4 Vol 3
/// Part A §4.22: the LE Credit Based Connection Request), then pipes it to standard input and output.
struct L2CAPConnect: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "connect",
        abstract: "Connect to DEVICE, open a channel to PSM; pipe it to standard input and output.")

    @OptionGroup var stack: StackOptions
    @OptionGroup var pipe: L2CAPPipeOptions

    @Argument(help: "The device: name, address or identifier.")
    var target: String

    @Argument(help: "The LE_PSM to open a channel to: 0x0080-0x00FF (dynamic) or 0x0001-0x007F.")
    var psm: String

    @Option(help: "Seconds to find the device (and again to connect).")
    var timeout: Double = 10

    func validate() throws {
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be between 0 and 86400 seconds") }
    }

    func run() throws {
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.connect() }
    }

    func connect() async throws(CLIFailure) {
        let psm = try L2CAPPSMArgument.parse(self.psm)
        let session = try await TargetSession.open(stack, target: target, timeout: duration(seconds: timeout), label: "l2cap")
        let pipe = L2CAPPipe(stack: session.stack, listeningPSM: nil)
        do throws(CLIFailure) {
            let engine = session.stack.engine, handle = session.connection.handle, mtu = UInt16(self.pipe.mtu)
            let opened = await session.stack.awaitCompletion { (done: @escaping @Sendable (Result<L2CAPChannelInfo, HostError>) -> Void) in
                engine.openChannel(connectionHandle: handle, psm: psm, mtu: mtu) { result in
                    // Adopted on the loop, before any SDU of the channel can arrive.
                    if case .success(let info) = result { pipe.adopt(handle: handle, info) }
                    done(result)
                }
            }
            if case .failure(let error) = opened {
                let why = error.l2capRefusal.map { "\($0)" } ?? error.reason
                throw CLIFailure(.failed, "\(session.displayName) refused a channel on PSM \(Dissection.hex16(psm)): \(why)")
            }
            var events = pipe.events.makeAsyncIterator()
            try await pipe.pump(&events, peer: session.displayName, options: self.pipe, command: "blue l2cap connect")
        } catch {
            pipe.stop()
            await session.close()
            throw error
        }
        pipe.stop()
        await session.close()
    }
}
