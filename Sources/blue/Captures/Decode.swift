public import ArgumentParser
import BluetoothCore
public import BluetoothDissector
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue decode HEX | -`: recognises one packet of any layer and prints it field by field.
struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode a packet: H4, HCI command/event, ACL/L2CAP, ATT, SMP or advertising data.",
        discussion: """
            The kind of packet is recognised from its bytes; --as forces one. Give the packet as hex (spaces and \
            colons allowed), or '-' to read one packet per line from standard input.

            Examples:
              blue decode 04 0e 04 01 03 0c 00          (H4: HCI Command Complete for Reset)
              blue decode 1106010004000118              (ATT Read By Group Type Response)
              blue decode --as ad 0201060303aafe        (advertising data)
              echo 0a0300 | blue decode - --json

            Exit codes: 0 every packet decoded, 1 a packet did not decode (the reason and offset on standard error), \
            64 the input is not hex (or has no bytes); with '-', 64 when any line was not hex, else 1 when any packet \
            did not decode.
            """
    )

    @Argument(help: "The packet as hex, or '-' for standard input (one packet per line).")
    var hex: [String]

    @Option(name: .customLong("as"), help: "Decode as this kind instead of guessing: \(PacketKind.allCases.map(\.rawValue).joined(separator: ", ")).")
    var kind: PacketKind?

    @Flag(help: "Print JSON (one object per packet and line).")
    var json = false

    mutating func run() throws {
        if hex == ["-"] {
            var worst = Outcome.decoded
            var lineNumber = 0
            while let line = readLine(strippingNewline: true) {
                lineNumber += 1
                let text = line.trimmingWhitespace()
                if text.isEmpty || text.hasPrefix("#") { continue }
                worst = max(worst, decodeOne(text, label: "line \(lineNumber)"))
            }
            if worst != .decoded { throw ExitCode(worst.rawValue) }
        } else {
            let outcome = decodeOne(hex.joined(separator: " "), label: nil)
            if outcome != .decoded { throw ExitCode(outcome.rawValue) }
        }
    }

    /// How one packet went, as its exit code (README: 64 bad input, 1 the operation failed).
    enum Outcome: Int32, Comparable {
        case decoded = 0
        case undecodable = 1
        case notHex = 64

        static func < (lhs: Outcome, rhs: Outcome) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// Decodes and prints one packet; on failure prints the reason to standard error.
    private func decodeOne(_ text: String, label: String?) -> Outcome {
        let prefix = label.map { "\($0): " } ?? ""
        let bytes: [UInt8]
        do {
            bytes = try Hex.decode(text)
        } catch {
            printError("\(prefix)not hex: \(error.reason) (character \(error.offset))")
            return .notHex
        }
        guard !bytes.isEmpty else {
            printError("\(prefix)no bytes to decode")
            return .notHex
        }
        do {
            let packet = try PacketDissector.dissect(bytes, as: kind)
            if json {
                print(packet.renderJSON())
            } else {
                print(packet.dissection.renderText())
            }
            return .decoded
        } catch {
            printError("\(prefix)\(error.description)")
            return .undecodable
        }
    }
}

extension PacketKind: ExpressibleByArgument {}

/// Writes a line to standard error.
func printError(_ message: String) {
    Console.error(TerminalStyle.red("error:", .error) + " \(message)")
}
