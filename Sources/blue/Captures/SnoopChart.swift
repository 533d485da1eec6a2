import ArgumentParser
import BluetoothDissector
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Snoop {
    /// `blue snoop chart FILE...`: a sequence chart of HCI captures as one self-contained HTML page (issue 29 item 4).
    struct Chart: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Draw a sequence chart of btsnoop captures as one self-contained HTML file.",
            discussion: """
                A lane per device and, on a time axis, what passed between them: connections and the link layer's \
                procedures (updates, PHY, data length, encryption) as the controllers reported them, every L2CAP, \
                ATT and SMP PDU, and the first advertising heard from each advertiser, with the time of each and the \
                gap since the one before. Several captures of one session (blue air --snoop DIR writes one per \
                device) give one lane per captured device, each PDU drawn once. The page needs no script and no \
                network: open it in any browser, attach it to a bug report.
                """
        )

        @Argument(help: "The btsnoop captures (HCI, H4 or btmon's format), one per device.")
        var files: [String]

        @Option(name: [.short, .long], help: ArgumentHelp("Where to write the page (default: the first capture's name with .html; - for standard output).",
                                                          valueName: "file"))
        var output: String?

        @Option(help: "The most exchanges drawn (the first ones).")
        var limit = 5_000

        func validate() throws {
            guard !files.isEmpty else { throw ValidationError("give at least one capture") }
            guard limit > 0, limit <= 1_000_000 else { throw ValidationError("--limit must be from 1 to 1000000") }
        }

        func run() throws {
            var captures: [SequenceChart.Capture] = []
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else {
                    printError("cannot read \(file)")
                    throw ExitCode(1)
                }
                let capture = try Snoop.capture(Array(data), file: file)
                if let error = capture.error { printError("\(file): charting the \(capture.records.count) records before: \(error)") }
                let name = URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
                captures.append(SequenceChart.Capture(name: name, records: capture.records, datalink: capture.header.datalink))
            }
            let chart = SequenceChart(captures: captures, limit: limit)
            let title = files.map { URL(fileURLWithPath: $0).lastPathComponent }.joined(separator: ", ")
            let page = chart.html(title: title)
            let destination = output ?? (URL(fileURLWithPath: files[0]).deletingPathExtension().path + ".html")
            if destination == "-" {
                Console.write(page)
                return
            }
            try Snoop.write(Array(page.utf8), to: destination)
            print("wrote \(destination): \(chart.entries.count) exchanges between \(chart.lanes.count) devices"
                  + (chart.omitted > 0 ? " (\(chart.omitted) more left out: --limit)" : ""))
        }
    }
}
