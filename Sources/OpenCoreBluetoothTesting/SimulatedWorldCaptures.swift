import BluetoothRuntime
import Foundation
import SharedAir
import VirtualController

/// What a ``SimulatedWorld`` keeps of its air for a failed test: a recording of every step (`NAME.airrec`, which
/// `blue air --replay` takes again packet for packet) and the link-layer packets (`NAME.pcap`, for `blue snoop show`
/// and Wireshark's btle dissector), the same files `blue air --record` and `--sniff` write. Beside them, each stack of
/// the world writes its HCI traffic as `NAME.N-LABEL.btsnoop` (``stackCaptures``), as `--snoop` does.
public final class SimulatedWorldCaptures: Sendable {
    /// The recording of the air's steps.
    public let recordingPath: String
    /// The link-layer capture.
    public let packetsPath: String
    /// The folder the files are in.
    public let directory: String
    /// The world's name, the files' first part.
    public let name: String
    private let recorder: AirRecorder
    private let sniffer: LinkLayerSniffer
    private let failures = LockedValue<[String]>([])

    init(directory: String, name: String, air: VirtualAir, seed: UInt64) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        self.directory = directory
        self.name = name
        let base = (directory as NSString).appendingPathComponent(name)
        recordingPath = base + ".airrec"
        packetsPath = base + ".pcap"
        do {
            recorder = try AirRecorder(path: recordingPath, seed: seed, configuration: air.configuration)
            sniffer = try LinkLayerSniffer(path: packetsPath)
        } catch {
            throw SimulatedWorldError("the captures cannot be written in \(directory): \(error)")
        }
        // Before any device joins: the recording starts with the air's first step.
        air.recorder = recorder
        let sniffer = sniffer
        air.observer = { packet in sniffer.write(packet) }
    }

    /// The btsnoop captures of the world's stacks so far, one per stack (the app's managers' and the declared
    /// devices'), in the order they started.
    public var stackCaptures: [String] {
        // NAME.N-LABEL.btsnoop: in the order of N, the device's number on the air.
        func device(_ file: String) -> Int { Int(file.dropFirst(name.count + 1).prefix(while: \.isNumber)) ?? 0 }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.filter { $0.hasPrefix(name + ".") && $0.hasSuffix(".btsnoop") }
            .sorted { device($0) < device($1) }
            .map { (directory as NSString).appendingPathComponent($0) }
    }

    /// Problems met while writing (a full disk), once finished.
    public var problems: [String] { failures.load() }

    /// Ends both files, after the air's last step (on its loop).
    func finish(air: VirtualAir) {
        let done = DispatchSemaphore(value: 0)
        let recorder = recorder, sniffer = sniffer, failures = failures
        air.eventLoop.execute {
            air.observer = nil
            failures.store([recorder.finish(), sniffer.finish()].compactMap { $0 })
            done.signal()
        }
        _ = done.wait(timeout: .now() + 10)
    }
}
