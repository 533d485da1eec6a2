import ArgumentParser
import StackLauncher
import VirtualController
import SharedAir

/// `blue fault`: faults on demand for a running `blue air` hub (issue 13 item 6), through its control socket.
struct Fault: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Change the shared air while it runs: packet loss, a dropped link, a radio off, a device out of range.",
        discussion: """
            Sends one command to the `blue air` hub (its socket: --socket, else $OCB_AIR_SOCKET, else the default) \
            and prints what the hub did; the hub prints it too ("fault: ..."). Devices are named by their join \
            number as the hub prints them (dev2 or 2).

              loss PERCENT          every packet heard is then lost with this probability (0...100)
              drop DEVICE | all     the device's links (or every link) fade: both ends see a supervision timeout
              power DEVICE off|on   the device's radio goes silent and deaf, then back (its host stays up)
              range DEVICE out|in   the device moves 100 km away, then back to its place
              move DEVICE X Y [Z]   the device moves to (X, Y, Z) metres
              devices               the devices, their places, radios and links, and the loss rate

            Exit status: 0 done, 1 refused (no such device, no link), 64 not understood, 69 no hub.
            """)

    @Option(name: .customLong("socket"), help: "The hub's UNIX socket (default: $OCB_AIR_SOCKET, see blue air --help).")
    var socketPath: String?

    @Flag(help: "Print one JSON object: {\"ok\": true|false, \"answer\": ...}.")
    var json = false

    @Argument(parsing: .captureForPassthrough, help: "The command and its arguments (see above).")
    var words: [String] = []

    func validate() throws {
        guard !words.isEmpty else { throw ValidationError("give a command: loss, drop, power, range, move or devices") }
    }

    func run() throws {
        let line = words.joined(separator: " ")
        do throws(AirHubError) {
            _ = try AirHubFault(parsing: line)
        } catch {
            printError(error.reason)
            throw ExitCode(64)
        }
        let socket = socketPath ?? StackLaunchOptions.defaultHubSocketPath
        let answer: String
        do throws(AirHubError) {
            answer = try AirHub.control(line, socketPath: socket)
        } catch {
            printError(error.reason)
            throw ExitCode(69)
        }
        let ok = answer.hasPrefix("ok: ")
        let text = String(answer.dropFirst(ok ? 4 : answer.hasPrefix("error: ") ? 7 : 0))
        if json {
            Console.json(["ok": ok, "answer": text])
        } else if ok {
            Console.line(text)
        }
        if !ok {
            if !json { printError(text) }
            throw ExitCode(1)
        }
    }
}
