import BluetoothCore
import BluetoothRuntime
import Dispatch
import Foundation
import HCI
import HCITransport
import TestSupport
import Testing
@testable import VirtualController
@testable import SharedAir

/// A UNIX stream client that writes raw bytes and never reads (a host that stopped reading its socket).
private final class DeafClient {
    private(set) var fd: Int32 = -1

    init?(path: String) {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
    }

    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    func shut() {
        if fd >= 0 { close(fd) }
        fd = -1
    }
}

/// Waits (bounded, real time, suspending) until `condition` holds; the hub's readers and writers run on their own
/// threads.
private func eventually(seconds: Double = 10, _ condition: () -> Bool) async -> Bool {
    await poll(within: .seconds(seconds), every: .milliseconds(5)) { condition() }
}

/// A host that stops reading is disconnected when its queue overflows; the air and the other hosts go on.
@Suite struct PolishHubBackpressureTests {
    @Test func aHostThatNeverReadsIsDisconnectedWhileAPairKeepsExchangingData() async throws {
        let directory = testTemporaryPath("polish-hub-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        mkdir(directory, 0o700)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socketPath = directory + "/air.sock"
        let loop = ManualEventLoop()
        let hub = AirHub(configuration: AirHubConfiguration(socketPath: socketPath, seed: 11, statisticsInterval: nil,
                                                            hostQueueLimit: 256),
                         eventLoop: loop)
        let events = LockedValue<[AirHubEvent]>([])
        hub.onEvent = { event in events.withLock { $0.append(event) } }
        try hub.start()

        // The pair (devices 1 and 2), in process: 2 connects to 1.
        let peripheral = PolishManualTransport(), central = PolishManualTransport()
        hub.adopt(peripheral, origin: "test:peripheral")
        hub.adopt(central, origin: "test:central")
        for host in [peripheral, central] {
            host.deliver(.reset)
            host.deliver(.setEventMask(0x3FFF_FFFF_FFFF_FFFF))
        }
        peripheral.deliver(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 0x20, intervalMax: 0x20)))
        peripheral.deliver(.leSetAdvertisingEnable(true))
        central.deliver(.leCreateConnection(LECreateConnectionParameters(
            peer: AirHub.address(forDevice: 1),
            connection: LEConnectionParameters(intervalMin: 24, intervalMax: 24, supervisionTimeout: 200))))
        loop.advance(by: .milliseconds(200))
        let handles = events.withLock { $0 }.compactMap { event -> (Int, UInt16)? in
            if case .connected(let device, let handle, _, _, _) = event { return (device, handle) }
            return nil
        }
        guard let centralHandle = handles.first(where: { $0.0 == 2 })?.1,
              let peripheralHandle = handles.first(where: { $0.0 == 1 })?.1 else {
            Issue.record("the pair did not connect: \(handles)")
            hub.stop()
            return
        }
        var sentData: [UInt8] = []
        func exchange(_ round: Int) throws {
            let data = (0..<40).map { UInt8(truncatingIfNeeded: $0 &+ round) }
            sentData += data
            central.deliver(try HCIACLDataPacket(handle: centralHandle, packetBoundary: .firstNonFlushable, data: data).frame)
            loop.advance(by: .milliseconds(100))
        }
        try exchange(0)

        // Device 3 joins over the UNIX socket, asks for 20 000 × 70-octet events and never reads them.
        guard let deaf = DeafClient(path: socketPath) else {
            Issue.record("cannot connect to \(socketPath)")
            hub.stop()
            return
        }
        defer { deaf.shut() }
        let commandsBefore = hub.statistics.traffic.commands
        let count = 20_000
        let readLocalSupportedCommands: [UInt8] = [0x01, 0x02, 0x10, 0x00]
        #expect(deaf.write(Array([[UInt8]](repeating: readLocalSupportedCommands, count: count).joined())))
        #expect(await eventually { hub.statistics.traffic.commands >= commandsBefore + count })

        // The loop answers them all without blocking on the deaf host's socket (1.4 MB, far above its buffers).
        let done = LockedValue(false)
        let finished = await blockingWork(within: .seconds(20)) { () -> Void in
            _ = loop.run()
            done.withLock { $0 = true }
        } != nil
        #expect(finished, "the air's loop blocked on a host that does not read")
        if !finished {
            deaf.shut()  // unblocks the hub's write so the test can end
            // The loop is not thread-safe: while the other thread still runs it, nothing below may touch it.
            guard await poll(within: .seconds(120), until: { done.withLock { $0 } }) else {
                Issue.record("the air's loop still runs 120 s after the deaf host's socket was shut")
                return
            }
        }
        let seen = events.withLock { $0 }
        #expect(seen.contains { if case .warning(let text) = $0 { text.hasPrefix("dev3: the host does not read") } else { false } })
        #expect(seen.contains { if case .left(let device, "host not reading") = $0 { device.number == 3 } else { false } })
        #expect(hub.devices.map(\.number) == [1, 2])

        // The pair goes on exchanging data.
        for round in 1...5 { try exchange(round) }
        #expect(await eventually { peripheral.acl.filter { $0.handle == peripheralHandle }.flatMap(\.data).count == sentData.count })
        #expect(peripheral.acl.filter { $0.handle == peripheralHandle }.flatMap(\.data) == sentData)
        #expect(hub.statistics.connections == 1)

        hub.stop()
        _ = loop.advance(by: .seconds(1))
        #expect(hub.air.deviceCount == 0)
        #expect(hub.air.linkCount == 0)
        #expect(loop.pendingWorkDescription == "nothing")
    }
}
