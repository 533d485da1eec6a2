public import BluetoothCore
import BluetoothRuntime
import FoundationEssentials
import SystemInterface
public import HCI
import HCITransport
import VirtualController
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Takes the steps of an ``AirRecorder`` recording again, on a fresh air with the recorded seed and radio model,
/// on virtual time (a `ManualEventLoop` moved to each step's recorded time), with no host: the recorded host frames
/// stand in for the hosts (issue 13 item 7; `blue air --replay FILE`). Every controller then sends its host exactly
/// what it sent in the recorded run, which the digests at the end of the recording check; `snoopDirectory` gets one
/// btsnoop capture per device (host → controller as sent, controller → host as received) to study a failure with
/// `blue snoop show` or Wireshark, and `onFrame` sees each frame a controller sends its host.
///
/// A recording is input we did not write: every line is checked (bounded lengths, known steps, times that never go
/// back, devices that exist) and the first bad one is reported with its line number.
public enum AirReplay {
    /// What a replay did and whether it matched the recording.
    public struct Outcome: Sendable {
        public struct Device: Sendable {
            public var identifier: Int
            public var address: BluetoothAddress
            /// Frames this controller sent its host in the replay, and their FNV-1a 64 hash.
            public var framesToHost: Int
            public var hash: UInt64
            /// The recording's digest for this device (nil when the recording has no digest: it was cut).
            public var recorded: FrameDigest?
            public var matches: Bool? { recorded.map { $0 == FrameDigest(count: framesToHost, hash: hash) } }
        }

        public var seed: UInt64
        public var steps: Int
        /// Virtual time from the first step to the last.
        public var duration: Duration
        public var devices: [Device]
        /// Whether every device sent its host what the recording says (nil: the recording has no digests).
        public var matches: Bool? {
            let verdicts = devices.compactMap(\.matches)
            return verdicts.isEmpty ? nil : verdicts.allSatisfy { $0 }
        }
    }

    /// The most lines and the longest line a recording may have.
    public static let maximumLines = 50_000_000
    public static let maximumLineLength = 200_000

    /// Replays the recording at `path`; with `sniffer`, every PDU the replayed air carries goes into that capture.
    public static func run(path: String, snoopDirectory: String? = nil, sniffer: LinkLayerSniffer? = nil,
                           onFrame: (@Sendable (_ device: Int, _ frame: H4Frame) -> Void)? = nil) throws(AirHubError) -> Outcome {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AirHubError(.invalidRecording, "cannot read the recording \(path)")
        }
        let lines = data.split(separator: 0x0A, omittingEmptySubsequences: false)
        guard lines.count <= maximumLines else { throw AirHubError(.invalidRecording, "\(path): more than \(maximumLines) lines") }
        guard let first = lines.first, String(decoding: first, as: UTF8.self) == "# opencorebluetooth air recording 1" else {
            throw AirHubError(.invalidRecording, "\(path): not an air recording (its first line must be \"# opencorebluetooth air recording 1\")")
        }
        var seed: UInt64?
        var configuration: AirConfiguration?
        var replay: Replay?
        var recordedDigests: [Int: FrameDigest] = [:]
        var lastTime: UInt64 = 0
        var steps = 0
        for (index, raw) in lines.enumerated().dropFirst() {
            let number = index + 1
            guard raw.count <= maximumLineLength else { throw Self.bad(number, "longer than \(maximumLineLength) octets") }
            guard let line = String(validating: raw, as: UTF8.self) else { throw Self.bad(number, "not UTF-8") }
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let head = words.first else { continue }
            if head.hasPrefix("#") { continue }
            switch head {
            case "seed":
                guard words.count == 2, let value = UInt64(words[1]) else { throw Self.bad(number, "expected: seed N") }
                seed = value
                continue
            case "air":
                configuration = try Self.configuration(words, line: number)
                continue
            case "digest":
                guard words.count == 4, let identifier = Int(words[1]), let count = Int(words[2]), count >= 0,
                      let hash = UInt64(words[3], radix: 16) else { throw Self.bad(number, "expected: digest DEVICE COUNT HASH") }
                recordedDigests[identifier] = FrameDigest(count: count, hash: hash)
                continue
            default:
                break
            }
            guard let time = UInt64(head) else { throw Self.bad(number, "unknown line \"\(head.prefix(32))\"") }
            guard time >= lastTime else { throw Self.bad(number, "time \(time) ns goes back (the line before: \(lastTime) ns)") }
            guard time <= UInt64(Int64.max) / 2 else { throw Self.bad(number, "time \(time) ns is out of range") }
            lastTime = time
            if replay == nil {
                guard let seed, let configuration else { throw Self.bad(number, "a step before the seed and air lines") }
                replay = try Replay(seed: seed, configuration: configuration, snoopDirectory: snoopDirectory, onFrame: onFrame)
                if let sniffer { replay?.air.observer = { sniffer.write($0) } }
            }
            guard let replay else { continue }
            try replay.take(Array(words.dropFirst()), at: StackInstant(nanoseconds: time), line: number)
            steps += 1
        }
        guard let replay else { throw AirHubError(.invalidRecording, "\(path): no steps") }
        replay.finish()
        let devices = replay.devices.map { device in
            Outcome.Device(identifier: device.identifier, address: device.address, framesToHost: device.digest.count,
                           hash: device.digest.hash, recorded: recordedDigests[device.identifier])
        }
        return Outcome(seed: seed ?? 0, steps: steps, duration: .nanoseconds(Int64(lastTime)), devices: devices)
    }

    private static func configuration(_ words: [Substring], line: Int) throws(AirHubError) -> AirConfiguration {
        let numbers = words.dropFirst().compactMap { Double($0) }
        guard words.count == 8, numbers.count == 7, numbers.allSatisfy(\.isFinite),
              (0...1).contains(numbers[4]), (1...10_000).contains(numbers[5]), numbers[6] == 0 || numbers[6] == 1 else {
            throw bad(line, "expected: air REFERENCE_LOSS EXPONENT SENSITIVITY JITTER LOSS EXCHANGES TIMED")
        }
        return AirConfiguration(referenceLoss: numbers[0], pathLossExponent: numbers[1], sensitivity: numbers[2],
                                rssiJitter: numbers[3], packetLoss: numbers[4], maximumExchangesPerEvent: Int(numbers[5]),
                                realRadioTiming: numbers[6] == 1)
    }

    static func bad(_ line: Int, _ reason: String) -> AirHubError {
        AirHubError(.invalidRecording, "line \(line): \(reason)")
    }

    /// The air being replayed and its devices.
    private final class Replay {
        final class Device: @unchecked Sendable {
            let identifier: Int
            let address: BluetoothAddress
            let controller: VirtualController
            let sink: BTSnoopFileSink?
            let digest = LockedValue(FrameDigest())

            init(identifier: Int, address: BluetoothAddress, controller: VirtualController, sink: BTSnoopFileSink?) {
                self.identifier = identifier
                self.address = address
                self.controller = controller
                self.sink = sink
            }
        }

        let loop = ManualEventLoop()
        let air: VirtualAir
        let snoopDirectory: String?
        let onFrame: (@Sendable (Int, H4Frame) -> Void)?
        private var byIdentifier: [Int: Device] = [:]
        private(set) var ordered: [Device] = []
        /// Recorded time 0 on this loop (the first step).
        private var origin: StackInstant?

        var devices: [(identifier: Int, address: BluetoothAddress, digest: FrameDigest)] {
            ordered.map { ($0.identifier, $0.address, $0.digest.load()) }
        }

        init(seed: UInt64, configuration: AirConfiguration, snoopDirectory: String?,
             onFrame: (@Sendable (Int, H4Frame) -> Void)?) throws(AirHubError) {
            air = VirtualAir(eventLoop: loop, seed: seed, configuration: configuration)
            air.replaying = true
            self.snoopDirectory = snoopDirectory
            self.onFrame = onFrame
            if let snoopDirectory, !FileManager.default.fileExists(atPath: snoopDirectory) {
                do {
                    try FileManager.default.createDirectory(atPath: snoopDirectory, withIntermediateDirectories: true)
                } catch {
                    throw AirHubError(.snoopFailed, "cannot create \(snoopDirectory): \(POSIX.describe(error))")
                }
            }
        }

        func take(_ words: [Substring], at offset: StackInstant, line: Int) throws(AirHubError) {
            let start = origin ?? loop.now
            origin = start
            loop.advance(to: start + .nanoseconds(Int64(offset.nanoseconds)))
            guard let kind = words.first else { throw AirReplay.bad(line, "a time without a step") }
            let arguments = Array(words.dropFirst())
            switch kind {
            case "join":
                try join(arguments, line: line)
            case "frame":
                guard arguments.count == 2, let device = device(arguments[0]),
                      let bytes = try? Hex.decode(String(arguments[1])), let frame = try? H4Frame(decoding: bytes) else {
                    throw AirReplay.bad(line, "expected: frame DEVICE H4-HEX (of a device that joined)")
                }
                device.sink?.record(frame, direction: .sent, unixMicroseconds: microseconds)
                device.controller.receiveFromHost(frame)
            case "tick":
                guard arguments.isEmpty else { throw AirReplay.bad(line, "expected: tick") }
                air.fireRecordedTick()
            case "leave":
                guard arguments.count == 1, let device = device(arguments[0]) else { throw AirReplay.bad(line, "expected: leave DEVICE") }
                air.detach(device.controller)
            case "loss":
                guard arguments.count == 1, let loss = Double(arguments[0]), (0...1).contains(loss) else {
                    throw AirReplay.bad(line, "expected: loss PROBABILITY (0...1)")
                }
                air.configuration.packetLoss = loss
            case "jam":
                guard arguments.count == 1 else { throw AirReplay.bad(line, "expected: jam DEVICE|all") }
                if arguments[0] == "all" {
                    loop.execute { [air] in _ = air.step { _ in air.jamLinks(of: nil) } }
                } else {
                    guard let device = device(arguments[0]) else { throw AirReplay.bad(line, "jam: no such device") }
                    loop.execute { [air] in _ = air.step { _ in air.jamLinks(of: device.controller) } }
                }
            case "radio", "power":
                guard arguments.count == 2, let device = device(arguments[0]), arguments[1] == "0" || arguments[1] == "1" else {
                    throw AirReplay.bad(line, "expected: \(kind) DEVICE 0|1")
                }
                let on = arguments[1] == "1"
                if kind == "radio" {
                    loop.execute { [air] in air.step { _ in device.controller.radioOn = on } }
                } else if on {
                    device.controller.powerOn()
                } else {
                    device.controller.powerOff()
                }
            case "move":
                let numbers = arguments.dropFirst().compactMap { Double($0) }
                guard arguments.count == 4, let device = device(arguments[0]), numbers.count == 3, numbers.allSatisfy(\.isFinite) else {
                    throw AirReplay.bad(line, "expected: move DEVICE X Y Z")
                }
                loop.execute { [air] in air.move(device.controller, to: AirPosition(x: numbers[0], y: numbers[1], z: numbers[2])) }
            default:
                throw AirReplay.bad(line, "unknown step \"\(kind.prefix(32))\"")
            }
            loop.run()
        }

        private func join(_ arguments: [Substring], line: Int) throws(AirHubError) {
            let numbers = arguments.dropFirst(2).compactMap { Double($0) }
            guard arguments.count == 6, let identifier = Int(arguments[0]), byIdentifier[identifier] == nil,
                  arguments[1].utf8.count == 12, let value = UInt64(arguments[1], radix: 16), numbers.count == 4,
                  numbers.allSatisfy(\.isFinite), let power = Int8(exactly: numbers[3]) else {
                throw AirReplay.bad(line, "expected: join DEVICE ADDRESS(12 hex digits) X Y Z TX_POWER, a new device")
            }
            let address = BluetoothAddress(value, type: .public)
            let controller = VirtualController(air: air, address: address, position: AirPosition(x: numbers[0], y: numbers[1], z: numbers[2]),
                                               txPower: power)
            guard controller.identifier == identifier else {
                air.detach(controller)
                throw AirHubError(.invalidRecording, "line \(line): the replay diverged: device \(identifier) became \(controller.identifier) "
                                  + "(devices must join in the recorded order)")
            }
            var sink: BTSnoopFileSink?
            if let snoopDirectory {
                let path = "\(snoopDirectory)/device\(identifier).btsnoop"
                do { sink = try BTSnoopFileSink(path: path) } catch {
                    throw AirHubError(.snoopFailed, "\(path): \(error.reason)")
                }
            }
            let device = Device(identifier: identifier, address: address, controller: controller, sink: sink)
            let onFrame = self.onFrame
            controller.toHost = { [weak device] frame in
                guard let device else { return }
                let bytes = frame.encode()
                device.digest.withLock { $0.add(bytes) }
                device.sink?.record(frame, direction: .received, unixMicroseconds: Replay.microseconds(device.controller.air))
                onFrame?(identifier, frame)
            }
            byIdentifier[identifier] = device
            ordered.append(device)
        }

        private func device(_ word: Substring) -> Device? {
            Int(word).flatMap { byIdentifier[$0] }
        }

        /// Capture timestamps: the air's virtual time, from the Unix epoch (a replay has no wall clock).
        private var microseconds: Int64 { Self.microseconds(air) }

        static func microseconds(_ air: VirtualAir) -> Int64 { Int64(air.now.nanoseconds / 1000) }

        func finish() {
            for device in ordered {
                device.controller.toHost = nil
                device.sink?.close()
            }
        }
    }
}
