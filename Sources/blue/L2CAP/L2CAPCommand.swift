import ArgumentParser

/// `blue l2cap listen|connect`: an LE credit-based channel (Core 5.4 Vol 3 Part A §4.22–§4.24) as a pipe between
/// standard input and output, as `nc` is for TCP (BlueZ's l2test and Bumble's l2cap_bridge are the anchors).
struct L2CAPCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "l2cap",
        abstract: "An LE credit-based L2CAP channel as a pipe between standard input and output (as nc is for TCP).",
        discussion: """
            `blue l2cap listen PSM` advertises (connectable, under --name) and accepts one channel on PSM; \
            `blue l2cap connect DEVICE PSM` connects to DEVICE and opens a channel to PSM. Then standard input goes \
            to the peer (each read, up to the peer's MTU, is one SDU) and what the peer sends comes out on standard \
            output as it arrives. At the end of standard input the channel is closed once everything read was sent, \
            unless standard input gave nothing at all (/dev/null: that side only receives) or --stay is given: then \
            it keeps receiving until the peer closes the channel. When the peer closes it, the command exits 0. PSMs: \
            0x0080-0x00FF are dynamic, 0x0001-0x007F assigned by the SIG; give them in decimal or 0x hex.
            Exit codes: 1 refused, link lost or timed out, 2 DEVICE not found, 64 bad arguments, 69 no controller.
            """,
        subcommands: [L2CAPListen.self, L2CAPConnect.self])
}

/// The options both ends share.
struct L2CAPPipeOptions: ParsableArguments, Sendable {
    @Option(help: ArgumentHelp("The largest SDU this side accepts (23 to 65535 octets).", valueName: "octets"))
    var mtu: Int = 2048

    @Flag(help: "After the end of standard input, keep receiving until the peer closes the channel.")
    var stay = false

    @Flag(name: [.short, .long], help: "Say on standard error what happens (channel opened, its MTUs, the totals at the end).")
    var verbose = false

    func validate() throws {
        guard (23...65_535).contains(mtu) else { throw ValidationError("--mtu \(mtu): from 23 to 65535 octets") }
    }
}

/// A PSM argument: decimal or 0x hex, an LE_PSM (0x0001-0x00FF, Vol 3 Part A §4.22). Printed with Dissection.hex16.
enum L2CAPPSMArgument {
    static func parse(_ text: String) throws(CLIFailure) -> UInt16 {
        let lowered = text.lowercased()
        let value = lowered.hasPrefix("0x") ? UInt16(lowered.dropFirst(2), radix: 16) : UInt16(lowered)
        guard let value, (0x0001...0x00FF).contains(value) else {
            throw CLIFailure(.usage, "bad PSM \"\(text)\": an LE_PSM from 1 to 255 (0x0001-0x00FF; 0x0080-0x00FF are dynamic)")
        }
        return value
    }
}
