import BluetoothCore
import BluetoothRuntime
import HCI
@testable import VirtualController

/// A minimal host for tests: sends HCI command and ACL frames to a controller and records what comes back.
final class ScriptedHost: Sendable {
    let controller: VirtualController
    private let frames = LockedValue<[H4Frame]>([])

    init(_ controller: VirtualController) {
        self.controller = controller
        controller.toHost = { [frames] frame in frames.withLock { $0.append(frame) } }
    }

    func send(_ command: HCICommand) {
        controller.receiveFromHost(H4Frame(type: .command, packet: command.encode()))
    }

    func sendRaw(_ packet: [UInt8]) {
        controller.receiveFromHost(H4Frame(type: .command, packet: packet))
    }

    func sendACL(_ packet: HCIACLDataPacket) {
        controller.receiveFromHost(packet.frame)
    }

    var allFrames: [H4Frame] { frames.withLock { $0 } }

    var events: [HCIEvent] {
        allFrames.filter { $0.type == .event }.compactMap { try? HCIEvent(decoding: $0.packet) }
    }

    var acl: [HCIACLDataPacket] {
        allFrames.filter { $0.type == .aclData }.compactMap { try? HCIACLDataPacket(frame: $0) }
    }

    /// Returns and forgets everything received so far.
    @discardableResult
    func drain() -> [HCIEvent] {
        let taken = frames.withLock { frames in
            let copy = frames
            frames = []
            return copy
        }
        return taken.filter { $0.type == .event }.compactMap { try? HCIEvent(decoding: $0.packet) }
    }

    var advertisingReports: [LEAdvertisingReport] {
        events.flatMap { event -> [LEAdvertisingReport] in
            if case .leMeta(.advertisingReport(let reports)) = event { return reports }
            return []
        }
    }

    var connectionCompletes: [LEConnectionComplete] {
        events.compactMap { event in
            switch event {
            case .leMeta(.connectionComplete(let c)): c
            case .leMeta(.enhancedConnectionComplete(let e)): e.connection
            default: nil
            }
        }
    }

    var disconnections: [(handle: UInt16, reason: HCIStatus)] {
        events.compactMap { event in
            if case .disconnectionComplete(_, let handle, let reason) = event { return (handle, reason) }
            return nil
        }
    }

    var completedPackets: Int {
        events.reduce(0) { total, event in
            if case .numberOfCompletedPackets(let entries) = event { return total + entries.reduce(0) { $0 + Int($1.count) } }
            return total
        }
    }

    /// The last Command Complete / Command Status for `opcode`.
    func response(_ opcode: HCIOpcode) -> HCIEvent? {
        events.last { $0.commandResponse?.opcode == opcode }
    }

    func status(_ opcode: HCIOpcode) -> HCIStatus? {
        response(opcode)?.commandResponse?.status
    }

    /// The usual host init: reset, unmask everything LE.
    func initialize() {
        send(.reset)
        send(.setEventMask(0x3FFF_FFFF_FFFF_FFFF))
        send(.leSetEventMask(0x0000_0000_000F_FFFF & ~(1 << 9)))
    }
}

/// A small world: a manual loop, an air and a few controllers with scripted hosts.
struct World {
    let loop = ManualEventLoop()
    let air: VirtualAir
    var hosts: [ScriptedHost] = []

    init(seed: UInt64 = 1, configuration: AirConfiguration = AirConfiguration(), devices: Int = 2) {
        air = VirtualAir(eventLoop: loop, seed: seed, configuration: configuration)
        for index in 0..<devices {
            let controller = VirtualController(air: air, address: BluetoothAddress(0xC0FFEE_000001 + UInt64(index)),
                                               position: AirPosition(x: Double(index), y: 0, z: 0))
            hosts.append(ScriptedHost(controller))
        }
        for host in hosts { host.initialize() }
        loop.run()
        for host in hosts { host.drain() }
    }

    func advance(_ duration: Duration) { loop.advance(by: duration) }

    /// The leak check for tests that end with live links: power every controller off, let the air settle, and
    /// report what is left on the loop (expected: "nothing") and how many links the air still holds (expected: 0).
    func powerOffAllAndSettle() -> (pending: String, links: Int) {
        for host in hosts { host.controller.powerOff() }
        loop.advance(by: .seconds(5))
        return (loop.pendingWorkDescription, air.linkCount)
    }

    /// Host 0 advertises (connectable, 100 ms), host `central` connects to it; returns (central handle, peripheral handle).
    func connect(central: Int = 1, peripheral: Int = 0, interval: UInt16 = 24, timeout: UInt16 = 100) -> (UInt16, UInt16)? {
        let p = hosts[peripheral], c = hosts[central]
        p.send(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 160, intervalMax: 160)))
        p.send(.leSetAdvertisingEnable(true))
        c.send(.leCreateConnection(LECreateConnectionParameters(
            peer: p.controller.publicAddress,
            connection: LEConnectionParameters(intervalMin: interval, intervalMax: interval, supervisionTimeout: timeout))))
        let before = (c.connectionCompletes.count, p.connectionCompletes.count)
        for _ in 0..<40 where c.connectionCompletes.count == before.0 || p.connectionCompletes.count == before.1 {
            loop.advance(by: .milliseconds(50))
        }
        guard c.connectionCompletes.count > before.0, p.connectionCompletes.count > before.1,
              let centralComplete = c.connectionCompletes.last, let peripheralComplete = p.connectionCompletes.last,
              centralComplete.status == .success, peripheralComplete.status == .success else { return nil }
        return (centralComplete.handle, peripheralComplete.handle)
    }
}
