import BluetoothCore
import Foundation
import HCI
import Host
import Testing
import BluetoothEngine

/// The link's PHY changed against code we did not write (issue 15 items 2 and 5): Bumble's host
/// (Interop/peers/bumble_phy_peer.py) and our host on one controller, ours and RootCanal in turn (Bumble's stock
/// controller never answers LE Set PHY; InteropCentralTests covers that). Each side asks in turn: our host's LE Set
/// PHY, and Bumble's, and both hosts must see the same LE PHY Update Complete, and LE Read PHY on Bumble's side must
/// then answer the new PHY: LE 2M, LE Coded and back to LE 1M (both controllers have all three).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct PHYInteropTests {
    static let ourAddress = BluetoothAddress(0xC0CB_0000_0021, type: .random)
    static let peerAddress = BluetoothAddress(0xF00C_B100_0021, type: .random)

    /// What our host asks for in turn, in both directions (LE Set PHY's masks), and the PHY that must follow.
    static let requests: [(mask: UInt8, phy: LEPhy)] = [(0x02, .le2M), (0x04, .leCoded), (0x01, .le1M)]

    @Test(.enabled(if: ExtendedAdvertisingInteropTests.enabled, "no Python with Bumble and rootcanal (set OCB_PYTHON)"),
          arguments: [InteropControllerKind.ourAir, .rootCanal])
    func ourCentralChangesThePHYOfALinkToBumble(on kind: InteropControllerKind) async throws {
        let controllers = try InteropControllers.start(kind)
        defer { controllers.stop() }
        let ours = try await Self.startOurHost(on: controllers, "phy-central")
        defer { ours.shutdown() }
        let peer = try Self.bumble("bumble-phy-peripheral", on: controllers, ["--timeout", "150", "peripheral", "--name", "OCB-PHY"])
        defer { peer.kill() }
        _ = try await peer.waitForEvent("ready", seconds: 30)
        let connected: Result<Connection, HostError> = try await InteropHost.wait(20, "connect") { done in
            ours.host.connect(to: Self.peerAddress, options: ConnectOptions(timeout: .seconds(15))) { done($0) }
        }
        let handle = try connected.get().handle
        _ = try await peer.waitForEvent("connected", seconds: 10)

        for (index, request) in Self.requests.enumerated() {
            let asked: Result<Void, HostError> = try await InteropHost.wait(10, "LE Set PHY \(request.phy)") { done in
                ours.host.setPHY(connectionHandle: handle, txPHYs: request.mask, rxPHYs: request.mask) { done($0) }
            }
            try asked.get()
            // Our host's event for this request: the (index + 1)-th update of the link.
            try await ours.waitForEvents(10, "LE PHY Update Complete to \(request.phy)") { events in
                Self.updates(events, handle).count > index
            }
            let update = Self.updates(ours.events, handle)[index]
            #expect(update.status == .success && update.tx == request.phy && update.rx == request.phy,
                    "\(kind): our host saw \(update)")
            // Bumble's: the same update, and LE Read PHY agrees.
            let seen = try await Self.nthEvent(peer, "phy", index)
            #expect(seen.int("txPhy") == Int(request.phy.rawValue) && seen.int("rxPhy") == Int(request.phy.rawValue),
                    "\(kind): Bumble saw \(seen)")
            let read = try await Self.nthEvent(peer, "readPhy", index)
            #expect(read.int("txPhy") == Int(request.phy.rawValue) && read.int("rxPhy") == Int(request.phy.rawValue),
                    "\(kind): Bumble read \(read)")
        }
        #expect(peer.jsonLines.allSatisfy { $0.string("event") != "phyFailed" }, "\(kind): \(peer.transcript)")
        try await Self.disconnect(ours, handle, peer)
    }

    @Test(.enabled(if: ExtendedAdvertisingInteropTests.enabled, "no Python with Bumble and rootcanal (set OCB_PYTHON)"),
          arguments: [InteropControllerKind.ourAir, .rootCanal])
    func bumblesCentralChangesThePHYOfALinkToUs(on kind: InteropControllerKind) async throws {
        let controllers = try InteropControllers.start(kind)
        defer { controllers.stop() }
        let ours = try await Self.startOurHost(on: controllers, "phy-peripheral")
        defer { ours.shutdown() }
        let advertising: Result<Void, HostError> = try await InteropHost.wait(10, "start advertising") { done in
            ours.host.startAdvertising(AdvertisingContent(localName: "OCB-PHY-ours"), options: AdvertisingOptions(kind: .connectable)) { done($0) }
        }
        try advertising.get()
        let target = Self.ourAddress
        let phy = LEPhy.leCoded
        let peer = try Self.bumble("bumble-phy-central", on: controllers,
                                   ["--timeout", "100", "central", "--target", target.string, "--request", "CODED"])
        defer { peer.kill() }
        _ = try await peer.waitForEvent("connected", seconds: 30)
        try await ours.waitForEvents(10, "the connection") { events in
            events.contains { if case .connected = $0 { true } else { false } }
        }
        let handle = try #require(ours.events.lazy.compactMap { event -> UInt16? in
            if case .connected(let connection) = event { connection.handle } else { nil }
        }.first)
        let seen = try await peer.waitForEvent("phy", seconds: 15)
        #expect(seen.int("txPhy") == Int(phy.rawValue) && seen.int("rxPhy") == Int(phy.rawValue), "\(kind): Bumble saw \(seen)")
        let read = try await peer.waitForEvent("readPhy", seconds: 15)
        #expect(read.int("txPhy") == Int(phy.rawValue) && read.int("rxPhy") == Int(phy.rawValue), "\(kind): Bumble read \(read)")
        try await ours.waitForEvents(10, "LE PHY Update Complete on our side") { Self.updates($0, handle).count == 1 }
        let update = Self.updates(ours.events, handle)[0]
        #expect(update.status == .success && update.tx == phy && update.rx == phy, "\(kind): our host saw \(update)")
        try await Self.disconnect(ours, handle, peer)
    }

    /// Our host on `controllers`, with our address, started.
    static func startOurHost(on controllers: InteropControllers, _ label: String) async throws -> InteropHost {
        let ours = try await InteropHost(port: controllers.hostPort, label: label,
                                         configuration: HostConfiguration(commandTimeout: .seconds(2), address: .fixedRandom(ourAddress)),
                                         controllerAlive: { controllers.isRunning })
        do {
            _ = try await ours.start()
        } catch {
            ours.shutdown()
            throw error
        }
        return ours
    }

    /// Interop/peers/bumble_phy_peer.py on the peer's port with Bumble's address, then `arguments`.
    static func bumble(_ label: String, on controllers: InteropControllers, _ arguments: [String]) throws -> InteropProcess {
        let python = try #require(InteropEnvironment.python)
        return try InteropProcess(label, executable: python, arguments: [
            InteropEnvironment.peersDirectory + "/bumble_phy_peer.py", "--port", "\(controllers.peerPort)",
            "--address", peerAddress.string,
        ] + arguments)
    }

    /// The LE PHY Update Complete events our host reported for `handle`, in order.
    static func updates(_ events: [HostEvent], _ handle: UInt16) -> [(status: HCIStatus, tx: LEPhy, rx: LEPhy)] {
        events.compactMap { event in
            if case .phyUpdated(handle, let status, let tx, let rx) = event { (status, tx, rx) } else { nil }
        }
    }

    /// Waits for the peer's `index`-th (from 0) line of `event`.
    static func nthEvent(_ peer: InteropProcess, _ event: String, _ index: Int, seconds: Double = 10) async throws -> InteropJSON {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let lines = peer.jsonLines.filter { $0.string("event") == event }
            if lines.count > index { return lines[index] }
            if Date() > deadline { throw InteropFailure("no \"\(event)\" #\(index + 1) from Bumble within \(seconds) s\n\(peer.transcript)") }
            if !peer.isRunning { throw InteropFailure("Bumble ended before \"\(event)\" #\(index + 1)\n\(peer.transcript)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Ends the link from our side; Bumble's side sees it and exits 0.
    static func disconnect(_ ours: InteropHost, _ handle: UInt16, _ peer: InteropProcess) async throws {
        let disconnected: Result<HCIStatus, HostError> = try await InteropHost.wait(10, "disconnect") { done in
            ours.host.disconnect(connectionHandle: handle) { done($0) }
        }
        _ = try disconnected.get()
        _ = try await peer.waitForEvent("done", seconds: 10)
    }
}
