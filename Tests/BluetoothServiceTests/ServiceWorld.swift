import BluetoothCore
import BluetoothEngine
import BluetoothLE
import BluetoothRuntime
import BluetoothService
import Foundation
import HCITransport
import ServiceEngine
import SharedAir
import StackLauncher
import TestSupport
import Testing

/// A private air hub and a Bluetooth service beside it, in a folder of the test's own (mode 0700): programs on
/// the air directly (``directStack()``) and programs whose stack the service runs (``serviceStack(identifier:)``).
final class ServiceWorld: Sendable {
    let folder: String
    let hub: AirHub
    let service: BluetoothService
    var airPath: String { folder + "/air.sock" }
    var servicePath: String { folder + "/service.sock" }

    init(outboxLimit: Int? = nil, queueLimit: Int = 4096) throws {
        folder = NSTemporaryDirectory() + "ocb-service-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        hub = AirHub(configuration: AirHubConfiguration(socketPath: folder + "/air.sock", statisticsInterval: nil),
                     eventLoop: DispatchEventLoop(label: "ServiceWorld.air"))
        try hub.start()
        service = try BluetoothService(socketPath: folder + "/service.sock", outboxLimit: outboxLimit, stateDirectory: folder + "/state",
                                       queueLimit: queueLimit)
        service.start()
    }

    func stop() {
        service.stop()
        _ = hub.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A program of its own on the air (our host in this process).
    func directStack() async throws -> BluetoothStack {
        BluetoothStack(opened: try await StackLauncher.open(spec: .air(path: airPath), options: StackLaunchOptions(label: "direct")))
    }

    /// A program whose stack the service runs, on the same air.
    func serviceStack(identifier: String? = nil, relaunch: ServiceRelaunch? = nil, preferredATTMTU: Int = 517) async throws -> ServiceStack {
        var options = StackLaunchOptions(label: "through-service")
        options.serviceRelaunch = relaunch
        options.host.preferredATTMTU = preferredATTMTU
        options.serviceSocketPath = servicePath
        options.startsService = false
        options.serviceIdentifier = identifier
        options.hubSocketPath = airPath
        let opened = try await StackLauncher.open(specification: .service(.air(path: airPath)), options: options)
        return try #require(opened as? ServiceStack)
    }
}

/// Waits for `condition` on the wall clock, at most `seconds`.
func eventually(_ seconds: Double = 10, _ condition: @Sendable () async -> Bool) async -> Bool {
    await poll(within: .milliseconds(Int(seconds * 1000)), until: condition)
}

/// Events of a stack, recorded from now on.
final class EventLog: Sendable {
    private let events = LockedValue<[HostEvent]>([])

    init(_ engine: any StackEngine) {
        engine.addEventHandler { [events] event in events.withLock { $0.append(event) } }
    }

    var all: [HostEvent] { events.load() }

    var notifications: [[UInt8]] {
        all.compactMap { if case .gattNotification(_, _, let value) = $0 { value } else { nil } }
    }
}
