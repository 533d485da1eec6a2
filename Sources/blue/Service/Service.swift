import ArgumentParser
import BluetoothService
import BluetoothRuntime
import Dispatch
import StackLauncher
#if canImport(Glibc)
import Glibc
#endif

/// `blue service`: the per-user Bluetooth service, which keeps the stacks of programs that ask it to
/// (`OCB_HCI=service`, `--hci service`), also after they die.
struct Service: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the per-user Bluetooth service: it runs the stacks of programs that ask it to, and keeps a program's "
            + "stack while the program is gone.",
        discussion: """
            Programs reach it with --hci service (the shared air) or service:TRANSPORT, or OCB_HCI=service for a whole \
            program; the first one starts it in the background when none runs (`blue service --socket PATH`, its log \
            beside the socket). Its socket is --socket, else $OCB_SERVICE_SOCKET, else service.sock in the shared \
            air's private folder ($XDG_RUNTIME_DIR/opencorebluetooth/ or /tmp/opencorebluetooth-<uid>/, mode 0700); \
            the socket is mode 0600 and a client of another user is refused. \
            A program with a restore identifier (a CoreBluetooth manager's restore identifier key) keeps its stack \
            when it dies without ending cleanly (SIGKILL, a crash): links, subscriptions, advertising and its GATT \
            database stay, reads are answered from the last values it sent, and what arrives is queued (at most 4096 \
            messages, the oldest dropped) for the next program with the same identifier, which takes the stack back. \
            A clean exit (or no identifier) ends the stack with the program. SIGINT or SIGTERM stop the service and \
            every stack it keeps; a second service on the same socket fails at once with exit code 1.
            """
    )

    @Option(name: .customLong("socket"), help: "The UNIX socket programs connect to (default: $OCB_SERVICE_SOCKET, see below).")
    var socketPath: String?

    func run() throws {
        let path = socketPath ?? StackLaunchOptions.defaultServiceSocketPath
        let service: BluetoothService
        do {
            service = try BluetoothService(socketPath: path)
        } catch {
            printError(error.reason)
            throw ExitCode(1)
        }
        signal(SIGPIPE, SIG_IGN)
        ProcessSignals.handle { _ in
            service.stop()
            Console.flush()
            CommandRun.exitNow(0)
        }
        service.start()
        Console.line("Bluetooth service listening on \(path)")
        dispatchMain()
    }
}
