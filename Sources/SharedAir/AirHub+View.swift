import FoundationEssentials
import SystemInterface
public import BluetoothCore
public import HCI
import HCITransport
public import VirtualController

/// Sees one HCI frame between device `Int`'s host and its controller, with its direction (`.sent`: host to
/// controller) and the wall clock (µs since 1970). Called on the transports' threads and the air's loop: it must
/// not block (the console queues and drops, as the monitor socket does).
public typealias AirHubFrameTap = @Sendable (Int, H4Frame, BTSnoopDirection, Int64) -> Void

/// The air as a view shows it (issue 29, the console): the hub's devices with their names, places and radios, the
/// links between them with their parameters (``AirSnapshot``) and traffic, in device numbers rather than the air's
/// controller identifiers.
public struct AirHubView: Hashable, Sendable {
    /// Data channel packets (LL control and empty ones included) and their octets on one link.
    public struct Traffic: Hashable, Sendable {
        public var packets = 0
        public var octets = 0

        mutating func add(octets count: Int) {
            packets &+= 1
            octets &+= count
        }
    }

    public struct Device: Hashable, Sendable {
        public var device: AirHubDevice
        public var radio: AirSnapshot.Device
        public var randomAddress: BluetoothAddress?
        /// Advertising packets heard on the air from its addresses since the view began.
        public var advertisingPackets: Int
        public var links: Int
    }

    public struct Link: Hashable, Sendable {
        public var link: AirSnapshot.Link
        /// The device numbers of its ends (nil: a controller the hub no longer lists).
        public var central: Int?
        public var peripheral: Int?
        public var traffic: Traffic
    }

    public var devices: [Device]
    public var links: [Link]
    public var packetLoss: Double
    /// The air's clock (the loop's time since it began).
    public var time: StackInstant
    /// Whether the hub records the air (`--record`): ``AirHub/recordingSoFar()`` gives it.
    public var recording = false
}

extension AirHub {
    /// Sets (or clears) the tap that sees every HCI frame of every device (see ``AirHubFrameTap``).
    public func setFrameTap(_ tap: AirHubFrameTap?) {
        state.withLock { $0.frameTap = tap }
    }

    /// The recording `--record` is writing, as far as it got (flushed first; no digests yet, so a replay of it says
    /// it was cut), and its file name; nil when the hub does not record.
    public func recordingSoFar() -> (filename: String, bytes: [UInt8])? {
        guard let recorder = recording.load(), let bytes = recorder.contentsSoFar() else { return nil }
        return (PathComponents.last(of: recorder.path), bytes)
    }

    /// Gives every packet on the air to `tap` (nil: to nobody), on the air's loop, as `--sniff` records them (the
    /// console's link-layer captures).
    public func setAirPacketTap(_ tap: (@Sendable (AirPacket) -> Void)?) {
        airPacketTap.store(tap)
    }

    /// The air as it is now, given on the air's loop. The first call starts the per-link and per-advertiser counts
    /// (they cost a lock per packet otherwise spared).
    public func view(completion: @escaping @Sendable (AirHubView) -> Void) {
        eventLoop.execute { [self] in
            let snapshot = air.snapshot()
            let time = air.now
            let view = state.withLock { state -> AirHubView in
                state.viewed = true
                let live = Set(snapshot.links.map(\.identifier))
                state.linkTraffic = state.linkTraffic.filter { live.contains($0.key) }
                var numbers: [Int: Int] = [:]
                var known: Set<BluetoothAddress> = []
                for joined in state.joined.values {
                    numbers[joined.controller.identifier] = joined.device.number
                    known.insert(joined.device.address)
                    if let random = joined.randomAddress { known.insert(random) }
                }
                state.advertisingPackets = state.advertisingPackets.filter { known.contains($0.key) }
                let radios = Dictionary(snapshot.devices.map { ($0.identifier, $0) }, uniquingKeysWith: { first, _ in first })
                let devices = state.joined.values.sorted { $0.device.number < $1.device.number }.compactMap { joined -> AirHubView.Device? in
                    guard let radio = radios[joined.controller.identifier] else { return nil }
                    let advertised = (state.advertisingPackets[joined.device.address] ?? 0)
                        + (joined.randomAddress.flatMap { state.advertisingPackets[$0] } ?? 0)
                    let links = snapshot.links.filter {
                        !$0.jammed && ($0.central == radio.identifier || $0.peripheral == radio.identifier)
                    }.count
                    return AirHubView.Device(device: joined.device, radio: radio, randomAddress: joined.randomAddress,
                                             advertisingPackets: advertised, links: links)
                }
                let links = snapshot.links.map { link in
                    AirHubView.Link(link: link, central: numbers[link.central], peripheral: numbers[link.peripheral],
                                    traffic: state.linkTraffic[link.identifier] ?? AirHubView.Traffic())
                }
                return AirHubView(devices: devices, links: links, packetLoss: snapshot.packetLoss, time: time,
                                  recording: recording.load() != nil)
            }
            completion(view)
        }
    }
}
