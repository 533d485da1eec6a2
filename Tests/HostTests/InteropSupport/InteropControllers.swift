import BluetoothRuntime
import Foundation
import VirtualController
import SharedAir

/// The three controllers our host is proven on (issue 4 item 7), each serving HCI over H4 on TCP: one port for
/// our host, one for the Bumble peer.
enum InteropControllerKind: String, CaseIterable, Sendable, CustomStringConvertible {
    /// Our virtual controller: an in-process ``AirHub`` (what `blue air --h4-tcp` runs) with a TCP listener;
    /// each connection is a new controller on one air.
    case ourAir
    /// Bumble's stock controllers, `python -m bumble.apps.controllers tcp-server:P1 tcp-server:P2`: exactly two,
    /// both with the public address 00:00:00:00:00:00 (hosts use distinct random addresses).
    case bumble
    /// RootCanal 1.10.0 (the binary in the `rootcanal` wheel): each connection to its HCI port is a new
    /// controller on one shared air.
    case rootCanal

    var description: String { rawValue }
}

/// A running controller setup; ``stop()`` (idempotent) ends it: the hub stops, the process gets SIGKILL.
final class InteropControllers: @unchecked Sendable {
    let kind: InteropControllerKind
    let hostPort: UInt16
    let peerPort: UInt16
    private let hub: AirHub?
    private let process: InteropProcess?

    private init(kind: InteropControllerKind, hostPort: UInt16, peerPort: UInt16, hub: AirHub?, process: InteropProcess?) {
        self.kind = kind
        self.hostPort = hostPort
        self.peerPort = peerPort
        self.hub = hub
        self.process = process
    }

    deinit { stop() }

    static func start(_ kind: InteropControllerKind) throws -> InteropControllers {
        switch kind {
        case .ourAir:
            let hub = AirHub(
                configuration: AirHubConfiguration(socketPath: nil, tcpEndpoints: [AirHubTCPEndpoint(port: 0)], statisticsInterval: nil),
                eventLoop: DispatchEventLoop(label: "interop.air"))
            do {
                try hub.start()
            } catch {
                throw InteropFailure("the air hub did not start: \(error)")
            }
            guard let port = hub.tcpPorts.first else {
                hub.stop()
                throw InteropFailure("the air hub has no TCP port")
            }
            return InteropControllers(kind: kind, hostPort: port, peerPort: port, hub: hub, process: nil)
        case .bumble:
            guard let python = InteropEnvironment.python else {
                throw InteropFailure("OCB_REQUIRE_INTEROP=1 but no Python with Bumble was found (set OCB_PYTHON)")
            }
            let ports = (try InteropEnvironment.freePort(), try InteropEnvironment.freePort())
            let process = try InteropProcess("bumble-controllers", executable: python, arguments: [
                "-m", "bumble.apps.controllers", "tcp-server:127.0.0.1:\(ports.0)", "tcp-server:127.0.0.1:\(ports.1)",
            ])
            return InteropControllers(kind: kind, hostPort: ports.0, peerPort: ports.1, hub: nil, process: process)
        case .rootCanal:
            guard let binary = InteropEnvironment.rootCanal else {
                throw InteropFailure("OCB_REQUIRE_INTEROP=1 but the rootcanal wheel's binary was not found")
            }
            let ports = (try InteropEnvironment.freePort(), try InteropEnvironment.freePort(),
                         try InteropEnvironment.freePort(), try InteropEnvironment.freePort())
            let process = try InteropProcess("rootcanal", executable: binary, arguments: [
                "-hci_port", "\(ports.0)", "-link_port", "\(ports.1)", "-link_ble_port", "\(ports.2)",
                "-test_port", "\(ports.3)",
            ])
            return InteropControllers(kind: kind, hostPort: ports.0, peerPort: ports.0, hub: nil, process: process)
        }
    }

    /// What the controller process printed (for failure messages).
    var transcript: String { process?.transcript ?? "" }

    var isRunning: Bool { process?.isRunning ?? true }

    func stop() {
        hub?.stop()
        process?.kill()
    }
}
