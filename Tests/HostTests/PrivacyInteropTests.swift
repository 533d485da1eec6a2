import AdvertisingData
import BluetoothCore
import BluetoothCrypto
import Foundation
import HCI
import Host
import Testing
import BluetoothEngine

/// Privacy done by the controller, seen by code we did not write (issue 15 items 4 and 5): our host with privacy on
/// a controller that offers LL Privacy (ours, and RootCanal, which sets LE feature bit 6) loads the resolving list and
/// advertises with Own_Address_Type 0x03; Bumble's scanner (Interop/peers/bumble_extended_peer.py --watch) sees only
/// resolvable private addresses of our IRK, and on our controller a new one every RPA timeout while advertising.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct PrivacyInteropTests {
    static let ourAddress = BluetoothAddress(0xC0CB_0000_0021, type: .random)
    static let peerAddress = BluetoothAddress(0xF00C_B100_0021, type: .random)

    @Test(.enabled(if: ExtendedAdvertisingInteropTests.enabled, "no Python with Bumble and rootcanal (set OCB_PYTHON)"),
          arguments: [InteropControllerKind.ourAir, .rootCanal])
    func bumbleSeesOurControllersPrivateAddresses(on kind: InteropControllerKind) async throws {
        let python = try #require(InteropEnvironment.python)
        let controllers = try InteropControllers.start(kind)
        defer { controllers.stop() }
        var configuration = HostConfiguration(commandTimeout: .seconds(2), address: .fixedRandom(Self.ourAddress))
        configuration.security.privateAddressRotation = .seconds(2)
        let ours = try await InteropHost(port: controllers.hostPort, label: "private", configuration: configuration,
                                         controllerAlive: { controllers.isRunning })
        defer { ours.shutdown() }
        _ = try await ours.start()
        let name = "OCB-private"
        let advertising: Result<Void, HostError> = try await InteropHost.wait(10, "start advertising") { done in
            // Non-connectable: the name is in the advertising data (Bumble scans passively here).
            ours.host.startAdvertising(AdvertisingContent(localName: name), options: AdvertisingOptions(kind: .nonConnectable)) { done($0) }
        }
        try advertising.get()
        let state = try await ours.onLoop { host in (host.controllerInfo.usesControllerPrivacy, host.localIdentityResolvingKey) }
        #expect(state.0, "\(kind): the controller does our privacy")
        let irk = try #require(state.1)
        let peer = try InteropProcess("bumble-private-watcher", executable: python, arguments: [
            InteropEnvironment.peersDirectory + "/bumble_extended_peer.py", "--port", "\(controllers.peerPort)",
            "--address", Self.peerAddress.string, "--timeout", "60", "scan", "--name", name, "--watch", "7",
        ])
        defer { peer.kill() }
        _ = try await peer.waitForEvent("done", seconds: 40)
        let addresses = peer.jsonLines.filter { $0.string("event") == "advertisement" }.compactMap { line -> BluetoothAddress? in
            guard let text = line.string("address")?.split(separator: "/").first else { return nil }
            return try? BluetoothAddress(string: String(text), type: .random)
        }
        try #require(!addresses.isEmpty, "\(kind): Bumble heard nothing named \(name)")
        for address in addresses {
            #expect(address.kind == .resolvablePrivate && (try? ResolvablePrivateAddress.resolves(address, irk: irk)) == true,
                    "\(kind): \(address) is not an RPA of our IRK")
        }
        if kind == .ourAir {
            #expect(addresses.count >= 2, "\(kind): rotated every 2 s while advertising: \(addresses)")
        }
    }
}
