import BluetoothRuntime
import BluetoothCore
import FoundationEssentials
import HCI
public import VirtualController
import LinkLayer
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Writes what a sniffer on the virtual air would capture (`blue air --sniff FILE`): every PDU of ``VirtualAir``'s
/// observer, advertising and data, as a pcap file of LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR (256), which Wireshark and
/// tshark dissect down to L2CAP, ATT and SMP (the link layer of Core 5.4 Vol 6 Part B §2; the pseudo-header as
/// tcpdump.org's link-type registry defines it).
///
/// Each record is the 10-octet pseudo-header (RF channel, signal and noise power, access address offenses,
/// reference access address, flags: dewhitened, PDU type, CRC checked and valid, PHY), then the packet without its
/// preamble: access address, PDU and CRC. The PDU type bits tell primary advertising, auxiliary advertising
/// (Vol 6 Part B §2.3.4 PDUs on the secondary channel), and data from the central or the peripheral, so Wireshark
/// follows connections from their CONNECT_IND and reads each direction. Encrypted payloads stay sealed (no keys
/// here). Packets on the Coded PHY carry the coding indicator octet (S=8) after the access address, as the
/// link type requires.
///
/// Thread-safe: records are appended under a lock to a buffer flushed every 64 KiB, at the first packet a quarter
/// second after the last flush (so a reader can follow the file live) and by ``finish()``; a write error stops the
/// capture and ``finish()`` reports it.
public final class LinkLayerSniffer: @unchecked Sendable {
    /// LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR.
    public static let linkType: UInt32 = 256

    private struct State {
        var file: BufferedOutputFile
        var origin: StackInstant?
        var packets = 0
        var lastFlush = ContinuousClock.now
    }

    public let path: String
    /// The wall-clock time of the first packet, in microseconds since 1970.
    private let startMicroseconds: Int64
    private let state: LockedValue<State>

    /// Creates (or truncates) `path` and writes the pcap header; packets are stamped from `startMicroseconds` (now by
    /// default) plus their time on the air since the first one.
    public init(path: String, startMicroseconds: Int64? = nil) throws(AirHubError) {
        self.path = path
        self.startMicroseconds = startMicroseconds ?? Int64(Date().timeIntervalSince1970 * 1_000_000)
        guard var file = BufferedOutputFile(path: path, what: "the capture") else {
            throw AirHubError(.listenFailed, "cannot create the capture \(path)")
        }
        file.append(Self.fileHeader())
        state = LockedValue(State(file: file))
    }

    /// How many packets were written so far.
    public var packetCount: Int { state.withLock { $0.packets } }

    /// Appends one packet (any thread; the air calls it on its loop).
    public func write(_ packet: AirPacket) {
        let record = Self.record(packet)
        state.withLock { state in
            guard state.file.isOpen else { return }
            let origin = state.origin ?? packet.time
            state.origin = origin
            let stamp = startMicroseconds + max(0, (packet.time - origin).nanosecondsClamped / 1000)
            var w = ByteWriter()
            w.write(UInt32(truncatingIfNeeded: stamp / 1_000_000))
            w.write(UInt32(truncatingIfNeeded: stamp % 1_000_000))
            w.write(UInt32(record.count))
            w.write(UInt32(record.count))
            state.file.append(w.bytes + record)
            state.packets += 1
            // A reader following the file (`tail -f | wireshark -k -i -`) sees each packet within a quarter second.
            let now = ContinuousClock.now
            if now - state.lastFlush >= .milliseconds(250) {
                state.file.flush()
                state.lastFlush = now
            }
        }
    }

    /// Writes out what is buffered (a reader of the file sees every packet so far).
    public func flush() {
        state.withLock { state in
            guard state.file.isOpen else { return }
            state.file.flush()
            state.lastFlush = ContinuousClock.now
        }
    }

    /// Flushes and closes the file (idempotent); the error of a failed write, if any.
    @discardableResult
    public func finish() -> String? {
        state.withLock { $0.file.close() }
    }

    // MARK: Encoding

    /// The pcap global header (microsecond timestamps, snap length 65,535, LINKTYPE 256 unless told).
    public static func fileHeader(linkType: UInt32 = linkType) -> [UInt8] {
        var w = ByteWriter()
        w.write(UInt32(0xA1B2_C3D4))
        w.write(UInt16(2))
        w.write(UInt16(4))
        w.write(UInt32(0))
        w.write(UInt32(0))
        w.write(UInt32(65_535))
        w.write(linkType)
        return w.bytes
    }

    /// The pseudo-header and the packet of one PDU.
    public static func record(_ packet: AirPacket) -> [UInt8] {
        let pduType: UInt16 = switch packet.kind {
        case .data(_, fromCentral: true): 2
        case .data(_, fromCentral: false): 3
        case .extendedAdvertising(.advExtInd): 0
        case .extendedAdvertising: 1
        case .advertising, .scanRequest, .scanResponse, .connectRequest: 0
        }
        let phyBits: UInt16 = switch packet.phy {
        case .le2M: 1
        case .leCoded: 2
        default: 0
        }
        // Dewhitened, the PDU type and the PHY; decrypted with its MIC checked and valid when the sender sealed it.
        // The CRC is left for the reader to check (Wireshark does, with CRC_INIT from the CONNECT_IND).
        var flags: UInt16 = 0x0001 | pduType << 7 | phyBits << 14
        let pdu: [UInt8]
        if let decrypted = packet.decrypted {
            flags |= 0x0008 | 0x1000 | 0x2000
            pdu = decrypted
        } else {
            pdu = packet.bytes
        }
        var w = ByteWriter()
        w.write(rfChannel(packet.channel))
        w.write(UInt8(0))  // signal power (not valid)
        w.write(UInt8(0))  // noise power (not valid)
        w.write(UInt8(0))  // access address offenses (not valid)
        w.write(UInt32(0))  // reference access address (not valid)
        w.write(flags)
        w.write(packet.accessAddress)
        if packet.phy == .leCoded { w.write(UInt8(0x00)) }  // coding indicator: S=8
        w.write(pdu)
        w.write(LinkLayerCRC.compute(pdu, initial: packet.crcInit))
        return w.bytes
    }

    /// The RF channel (0...39, 2402 + 2k MHz) of a channel index (Vol 6 Part A §2, Table 2.1): advertising channels
    /// 37, 38 and 39 are RF channels 0, 12 and 39; data channels 0...10 are 1...11 and 11...36 are 13...38.
    public static func rfChannel(_ index: UInt8) -> UInt8 {
        switch index {
        case 37: 0
        case 38: 12
        case 39: 39
        case 0...10: index + 1
        default: min(index, 36) + 2
        }
    }
}
