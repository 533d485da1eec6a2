import ArgumentParser
import BluetoothCore
import BluetoothDissector
import FoundationEssentials
import HCI
import LinkLayer
import SystemInterface
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue snoop`: btsnoop captures (the format btmon, Android and Wireshark use).
struct Snoop: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read and write btsnoop captures.",
        subcommands: [Show.self, Make.self, Chart.self]
    )

    /// `blue snoop show FILE`: every record, decoded like btmon prints it.
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a btsnoop capture (HCI, H4 or btmon's monitor format) or a link-layer pcap (blue air --sniff) packet by packet.")

        @Argument(help: "The btsnoop or link-layer pcap file.")
        var file: String

        @Flag(help: "Print JSON (one object per record and line).")
        var json = false

        @Flag(help: "Link-layer captures: also print the empty data PDUs (counted otherwise).")
        var empty = false

        func run() throws {
            guard let data = FileManager.default.contents(atPath: file) else {
                printError("cannot read \(file)")
                throw ExitCode(1)
            }
            if LinkLayerCaptureReader.isPcap(Array(data.prefix(4))) { return try showLinkLayer(Array(data)) }
            let capture = try Snoop.capture(Array(data), file: file)
            var formatter = SnoopFormatter()
            if !json {
                print("btsnoop version \(capture.header.version), datalink \(capture.header.datalink), \(capture.records.count) records")
            }
            for (index, record) in capture.records.enumerated() {
                if json {
                    print(formatter.json(record, number: index + 1, datalink: capture.header.datalink))
                } else {
                    print(formatter.format(record, number: index + 1, datalink: capture.header.datalink))
                }
            }
            if let error = capture.error {
                printError("\(file): stopped after \(capture.records.count) records: \(error)")
                throw ExitCode(1)
            }
        }
    }

    /// `blue snoop make FILE`: a capture from H4 packets given as hex lines (for tests and bug reports).
    struct Make: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a btsnoop capture from H4 packets read as hex lines on standard input.",
            discussion: """
                Each line is an H4 packet in hex (type octet first). Commands and ACL data are recorded as sent by \
                the host, events as received; a line starting with '<' or '>' sets the direction explicitly. \
                Records are 1 ms apart.
                """
        )

        @Argument(help: "The btsnoop file to write.")
        var file: String

        func run() throws {
            var writer = BTSnoopWriter()
            var lineNumber = 0
            var count = 0
            var failed = false
            let start: Int64 = 1_763_769_600_000_000  // 2025-11-22T00:00:00Z
            while let line = readLine() {
                lineNumber += 1
                var text = line.trimmingWhitespace()
                if text.isEmpty || text.hasPrefix("#") { continue }
                var direction: BTSnoopDirection?
                if text.hasPrefix("<") { direction = .sent; text.removeFirst() }
                if text.hasPrefix(">") { direction = .received; text.removeFirst() }
                do {
                    let frame = try H4Frame(decoding: try Hex.decode(text))
                    let defaultDirection: BTSnoopDirection = frame.type == .event ? .received : .sent
                    writer.write(frame, direction: direction ?? defaultDirection,
                                 unixMicroseconds: start + Int64(count) * 1000)
                    count += 1
                } catch {
                    printError("line \(lineNumber): \(error)")
                    failed = true
                }
            }
            guard !failed else { throw ExitCode(1) }
            try Snoop.write(writer.takeBytes(), to: file)
            print("wrote \(count) records to \(file)")
        }
    }
}

extension Snoop {
    /// The records of a btsnoop capture; one line and exit 1 when it is not one.
    static func capture(_ bytes: [UInt8], file: String) throws -> (header: BTSnoopFileHeader, records: [BTSnoopRecord], error: BTSnoopError?) {
        do {
            return try BTSnoopReader.readAll(bytes)
        } catch {
            printError("\(file) is not a btsnoop capture: \(error)")
            throw ExitCode(1)
        }
    }

    /// Writes `bytes` to a new file at `path` (0600, as every capture); one line and exit 1 when it cannot.
    static func write(_ bytes: [UInt8], to path: String) throws {
        let fd: Int32
        switch POSIX.createOutputFile(path) {
        case .success(let opened): fd = opened
        case .failure(let error):
            printError(error.reason)
            throw ExitCode(1)
        }
        let writeError = POSIX.writeAll(fd, bytes, style: .file)
        POSIX.closeDescriptor(fd)
        if let writeError {
            printError("cannot write \(path): \(POSIX.errorText(writeError))")
            throw ExitCode(1)
        }
    }
}

extension Snoop.Show {
    /// A link-layer capture (LINKTYPE 256 or 251): every packet, its advertising PDU or its connection's LL
    /// procedures and L2CAP (``LinkLayerSnoopFormatter``).
    func showLinkLayer(_ bytes: [UInt8]) throws {
        let capture: (linkType: UInt32, packets: [LinkLayerCapturedPacket], error: DecodeError?)
        do {
            capture = try LinkLayerCaptureReader.read(bytes)
        } catch {
            printError("\(file) is not a link-layer capture: \(error.reason)")
            throw ExitCode(1)
        }
        var formatter = LinkLayerSnoopFormatter()
        formatter.showEmpty = empty
        if !json { print("pcap, link type \(capture.linkType), \(capture.packets.count) packets") }
        for (index, packet) in capture.packets.enumerated() {
            if let line = json ? formatter.json(packet, number: index + 1) : formatter.format(packet, number: index + 1) { print(line) }
        }
        if !json, formatter.emptyPDUs > 0, !empty { print("(\(formatter.emptyPDUs) empty data PDUs not shown: --empty shows them)") }
        if let error = capture.error {
            printError("\(file): stopped after \(capture.packets.count) packets: \(error.reason)")
            throw ExitCode(1)
        }
    }
}
