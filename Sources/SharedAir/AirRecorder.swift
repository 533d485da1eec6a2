public import BluetoothCore
import BluetoothRuntime
import FoundationEssentials
import SystemInterface
public import HCI
public import VirtualController
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Writes every step of a ``VirtualAir`` to a file, in the order and at the time the air took it, so that
/// ``AirReplay`` can take the same steps again and reproduce the run packet for packet (issue 13 item 7;
/// `blue air --record FILE`, `blue air --replay FILE`).
///
/// The air is a pure function of its seed, its configuration and its steps: every random draw comes from the
/// seeded generator in step order, and within a step the air's clock stands still (``VirtualAir/now``). A step is
/// one of: a device joins or leaves, a host's frame reaches its controller, the air's timer fires (advertising and
/// connection events), a fault changes the air. The recording is text, one step a line:
///
/// ```
/// # opencorebluetooth air recording 1
/// seed 1
/// air 40 2 -95 0 0 32 0          (reference loss, exponent, sensitivity, jitter, loss, exchanges/event, timed)
/// 1500000 join 1 0A1B00000001 0 0 0 0     (ns since the air's start, device identifier, address, x y z, tx power)
/// 1520000 frame 1 01030c00        (H4 frame, host to controller)
/// 7500000 tick                    (the air's timer)
/// 9000000 loss 0.1 | jam 2 | jam all | radio 2 0 | move 2 100000 0 0 | leave 2
/// digest 1 42 9f3a...             (at the end: frames each controller sent its host, and their FNV-1a 64 hash)
/// ```
///
/// Steps are appended under a lock (the air's loop writes them; ``finish()`` may come from another thread) to a
/// buffered file. A write error stops the recording and is reported by ``finish()``.
public final class AirRecorder: AirStepRecording, @unchecked Sendable {
    private struct State {
        var file: BufferedOutputFile
        var digests: [Int: FrameDigest] = [:]
        var origin: StackInstant?
    }

    public let path: String
    private let state: LockedValue<State>

    /// Creates (or truncates) `path` and writes the header.
    public init(path: String, seed: UInt64, configuration: AirConfiguration) throws(AirHubError) {
        self.path = path
        guard var file = BufferedOutputFile(path: path, what: "the recording") else {
            throw AirHubError(.listenFailed, "cannot create the recording \(path)")
        }
        let c = configuration
        let header = "# opencorebluetooth air recording 1\nseed \(seed)\nair \(c.referenceLoss) \(c.pathLossExponent) "
            + "\(c.sensitivity) \(c.rssiJitter) \(c.packetLoss) \(c.maximumExchangesPerEvent) \(c.realRadioTiming ? 1 : 0)\n"
        file.append(Array(header.utf8))
        state = LockedValue(State(file: file))
    }

    // MARK: Steps (on the air's loop)

    public func join(_ device: VirtualController, at time: StackInstant) {
        let p = device.position
        append(time, "join \(device.identifier) \(Self.hex48(device.publicAddress.value)) \(p.x) \(p.y) \(p.z) \(device.txPower)")
    }

    public func leave(_ device: VirtualController, at time: StackInstant) { append(time, "leave \(device.identifier)") }

    public func frame(_ frame: H4Frame, to device: VirtualController, at time: StackInstant) {
        append(time, "frame \(device.identifier) \(Hex.encode(frame.encode()))")
    }

    public func tick(at time: StackInstant) { append(time, "tick") }

    public func fault(_ text: String, at time: StackInstant) { append(time, text) }

    /// A frame `device` sent its host: counted into its digest.
    public func toHost(_ frame: H4Frame, from device: VirtualController) {
        let bytes = frame.encode()
        state.withLock { state in state.digests[device.identifier, default: FrameDigest()].add(bytes) }
    }

    /// The digests so far, by device identifier.
    public var digests: [Int: FrameDigest] { state.withLock { $0.digests } }

    /// The file so far (its buffer flushed first), nil once it failed or cannot be read. Read outside the lock the
    /// air's loop appends under, up to the size it had once flushed: whole lines only.
    public func contentsSoFar() -> [UInt8]? {
        let size = state.withLock { state -> Int? in
            guard state.file.isOpen else { return nil }
            state.file.flush()
            return POSIX.fileSize(path)
        }
        guard let size, let data = FileManager.default.contents(atPath: path), data.count >= size else { return nil }
        return Array(data.prefix(size))
    }

    // MARK: End

    /// Writes the digests and closes the file (idempotent); the error of a failed write, if any.
    @discardableResult
    public func finish() -> String? {
        state.withLock { state in
            guard state.file.isOpen else { return state.file.failure }
            for (identifier, digest) in state.digests.sorted(by: { $0.key < $1.key }) {
                state.file.append(Array("digest \(identifier) \(digest.count) \(String(digest.hash, radix: 16))\n".utf8))
            }
            return state.file.close()
        }
    }

    private func append(_ time: StackInstant, _ text: String) {
        state.withLock { state in
            guard state.file.isOpen else { return }
            let origin = state.origin ?? time
            state.origin = origin
            state.file.append(Array("\(max(0, (time - origin).nanosecondsClamped)) \(text)\n".utf8))
        }
    }

    static func hex48(_ value: UInt64) -> String {
        let digits = String(value & 0xFFFF_FFFF_FFFF, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 12 - digits.count)) + digits
    }
}
