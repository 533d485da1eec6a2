import BluetoothCore
import BluetoothRuntime
import Foundation
import HCI
import Host
import Testing
import BluetoothEngine

/// Issue 32 item 1 against controllers and a peer we did not write: our host keeps a connect to a device that never
/// appears pending, then connects to a Bumble GATT server (Interop/peers/bumble_gatt_server.py) through the Filter
/// Accept List (initiator filter policy 1, Core 5.4 Vol 4 Part E §7.8.12), on our controller and on RootCanal;
/// then the absent one's connect is cancelled. Bumble's stock controller is not among them: it accepts the Filter
/// Accept List commands without keeping a list, matches LE Create Connection by the peer address only, and its
/// LE Create Connection Cancel does not end the initiation (DESIGN.md, "Known behaviour of Bumble").
@Suite(.serialized, .timeLimit(.minutes(3)))
struct PendingConnectionsInteropTests {
    static let ourAddress = BluetoothAddress(0xC0CB_0000_0032, type: .random)
    static let peerAddress = BluetoothAddress(0xF00C_B100_0032, type: .random)
    static let absent = BluetoothAddress(0xC0DE_AD00_0032, type: .random)

    @Test(.enabled(if: ExtendedAdvertisingInteropTests.enabled, "no Python with Bumble and rootcanal (set OCB_PYTHON)"),
          arguments: [InteropControllerKind.ourAir, .rootCanal])
    func aPendingConnectToNobodyDoesNotHoldUpAPeerThatIsThere(on kind: InteropControllerKind) async throws {
        let controllers = try InteropControllers.start(kind)
        defer { controllers.stop() }
        let ours = try await InteropHost(port: controllers.hostPort, label: "pending-central",
                                         configuration: HostConfiguration(commandTimeout: .seconds(2), address: .fixedRandom(Self.ourAddress)),
                                         controllerAlive: { controllers.isRunning })
        defer { ours.shutdown() }
        _ = try await ours.start()
        let python = try #require(InteropEnvironment.python)
        let server = try InteropProcess("bumble-gatt-server", executable: python, arguments: [
            InteropEnvironment.peersDirectory + "/bumble_gatt_server.py", "--port", "\(controllers.peerPort)",
            "--address", Self.peerAddress.string, "--name", "OCB-Pending", "--timeout", "120",
        ])
        defer { server.kill() }
        _ = try await server.waitForEvent("ready", seconds: 30)

        // The absent device first, with no time limit: a lone connect, directed to it.
        let absentResult = LockedValue<Result<Connection, HostError>?>(nil)
        ours.host.connect(to: Self.absent) { result in absentResult.store(result) }
        try await Task.sleep(for: .milliseconds(300))
        // Then the server: both are pending, so the host initiates through the Filter Accept List.
        let connected: Result<Connection, HostError> = try await InteropHost.wait(20, "connect through the accept list") { done in
            ours.host.connect(to: Self.peerAddress, options: ConnectOptions(timeout: .seconds(15))) { done($0) }
        }
        let connection = try connected.get()
        #expect(connection.peer.value == Self.peerAddress.value, "\(kind): \(connection)")
        _ = try await server.waitForEvent("connected", seconds: 10)
        let list = try await ours.onLoop { host in host.filterAcceptList }
        #expect(Set(list) == [Self.absent, Self.peerAddress], "\(kind): \(list)")
        #expect(absentResult.load() == nil, "\(kind): the absent device's connect ended: \(String(describing: absentResult.load()))")

        // The absent device's connect goes on until cancelled.
        try await Task.sleep(for: .milliseconds(500))
        #expect(absentResult.load() == nil)
        let cancelled: Result<Void, HostError> = try await InteropHost.wait(10, "cancel the absent device's connect") { done in
            ours.host.cancelConnect(to: Self.absent) { done($0) }
        }
        #expect((try? cancelled.get()) != nil, "\(kind): \(cancelled)")
        if case .failure(let error)? = absentResult.load() { #expect(error.code == .cancelled) } else {
            Issue.record("\(kind): the absent device's connect did not end: \(String(describing: absentResult.load()))")
        }

        let disconnected: Result<HCIStatus, HostError> = try await InteropHost.wait(10, "disconnect") { done in
            ours.host.disconnect(connectionHandle: connection.handle) { done($0) }
        }
        _ = try disconnected.get()
        _ = try await server.waitForEvent("disconnected", seconds: 10)
        try await Task.sleep(for: .milliseconds(300))
        let quiet = try await ours.onLoop { host in (host.resources.isQuiescent, "\(host.resources)") }
        #expect(quiet.0, "\(kind): \(quiet.1)")
    }
}
