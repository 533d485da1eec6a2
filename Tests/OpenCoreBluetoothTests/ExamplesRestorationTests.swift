import Foundation
import TestSupport
import Testing

/// State restoration as iOS does it (issue 33): a CoreBluetooth central with a restore identifier runs on the
/// per-user Bluetooth service, which keeps its link when the program is killed; started again, the program gets
/// the peripheral back connected, with its services and its subscription, and the values go on.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ExamplesRestorationTests {
    @Test("a heart-rate central killed with SIGKILL is restored connected and subscribed, with no connect")
    func aKilledCentralIsRestoredWithItsLink() async throws {
        let world = try await RestorationWorld()
        let (folder, air, environment) = (world.folder, world.air, world.environment)
        let peripheral = try ExampleProcess("blue", ["serve", "--hci", "air:" + air, "--profile", "heart-rate"], environment: environment)
        defer { peripheral.stopInBackground() }
        #expect(await peripheral.waitFor("serving"))

        // First launch: scan, connect, discover, subscribe, values.
        let first = try ExampleProcess("RestoringHeartRateCentral", ["--timeout", "60"], environment: environment)
        defer { first.stopInBackground() }
        #expect(await poll(within: .seconds(20)) { first.output.components(separatedBy: "bpm ").count > 2 },
                "first launch: \(first.output) \(first.errors)")
        #expect(first.output.hasPrefix("state 5\nconnect\ndiscovered\nsubscribed\nbpm "), "\(first.output)")

        // The system terminates it; what the app had discovered is on disk for the next launch.
        let file = folder + "/state/opencorebluetooth/restoration/central-com.example.heart-rate-monitor.json"
        kill(first.process.processIdentifier, SIGKILL)
        #expect(await first.process.waitForExit(within: .seconds(5)))
        #expect(FileManager.default.fileExists(atPath: file))
        try await Task.sleep(for: .seconds(1))

        // Relaunched: the peripheral restored connected with its service and subscription; values, no connect.
        let second = try ExampleProcess("RestoringHeartRateCentral", ["--timeout", "4"], environment: environment)
        defer { second.stopInBackground() }
        #expect(await poll(within: .seconds(10)) { second.output.components(separatedBy: "bpm ").count > 2 },
                "second launch: \(second.output) \(second.errors)")
        // The peripheral saw one central, one connection, one subscription, and no disconnection.
        let served = peripheral.output
        #expect(served.components(separatedBy: "connected: ").count == 2, "\(served)")
        #expect(!served.contains("disconnected"), "\(served)")
        #expect(served.components(separatedBy: "subscribe 2A37").count == 2, "\(served)")

        #expect(await second.waitForExit(limit: .seconds(15)) == 0, "second launch: \(second.output) \(second.errors)")
        let lines = second.output.split(separator: "\n")
        #expect(lines.first == "restored connected services=1 notifying=true", "\(second.output)")
        #expect(lines.dropFirst().first == "state 5", "\(second.output)")
        #expect(!lines.contains("connect") && !lines.contains("discovered") && !lines.contains("subscribed"), "\(second.output)")
        // Its exit was its own choice: the service let the link go and the file is gone, as iOS restores nothing
        // for an app the user quits.
        #expect(await peripheral.waitFor("disconnected"), "\(peripheral.output)")
        #expect(!FileManager.default.fileExists(atPath: file))
    }

    @Test("a heart-rate sensor killed with SIGKILL keeps its central subscribed; relaunched, values resume")
    func aKilledPeripheralKeepsItsSubscribers() async throws {
        let world = try await RestorationWorld()
        let (air, environment) = (world.air, world.environment)

        let first = try ExampleProcess("RestoringHeartRatePeripheral", ["--timeout", "60"], environment: environment)
        defer { first.stopInBackground() }
        #expect(await first.waitFor("advertising"), "\(first.output) \(first.errors)")
        // A central of its own (our host on the air directly) that must see every value on one link.
        let central = try ExampleProcess("blue", ["subscribe", "--hci", "air:" + air, "Restoring HR", "2A37", "--count", "25",
                                                  "--timeout", "40"], environment: environment)
        defer { central.stopInBackground() }
        #expect(await poll(within: .seconds(20)) { central.output.components(separatedBy: "bpm").count > 3 }, "\(central.output) \(central.errors)")

        kill(first.process.processIdentifier, SIGKILL)
        #expect(await first.process.waitForExit(within: .seconds(5)))
        let before = central.output.components(separatedBy: "bpm").count
        try await Task.sleep(for: .seconds(1))
        #expect(central.output.components(separatedBy: "bpm").count == before, "values while the app was gone")

        // Relaunched: its service and advertising restored, the central still subscribed; the values resume and
        // the central gets all it asked for on the same link.
        let second = try ExampleProcess("RestoringHeartRatePeripheral", ["--timeout", "20"], environment: environment)
        defer { second.stopInBackground() }
        #expect(await central.waitForExit(limit: .seconds(30)) == 0, "central: \(central.output) \(central.errors)")
        let lines = second.output.split(separator: "\n")
        #expect(lines.first == "restored services=1 advertising=true", "\(second.output)")
        #expect(lines.contains("subscribed"), "\(second.output)")
        #expect(!lines.contains("published"), "\(second.output)")
    }
}

/// A folder of the test's own (0700) with a `blue air` hub and a `blue service` in it, and the environment that
/// puts a program's state, bonds and shared air there.
private final class RestorationWorld: @unchecked Sendable {
    let folder: String
    let air: String
    let environment: [String: String]
    private var processes: [ExampleProcess] = []

    init() async throws {
        folder = testTemporaryPath("ocb-restore-\(UUID().uuidString.prefix(6).lowercased())")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        air = folder + "/air.sock"
        environment = [
            "OCB_AIR_SOCKET": air,
            "XDG_STATE_HOME": folder + "/state",
            "XDG_DATA_HOME": folder + "/data",
            "OCB_BLUE": ExampleProcess.productsFolder.appendingPathComponent("blue").path,
        ]
        let hub = try ExampleProcess("blue", ["air", "--socket", air, "--stats-interval", "0"], environment: environment)
        processes.append(hub)
        guard await hub.waitFor("listening") else { throw ExampleProcess.Failure.notReady("hub: \(hub.errors)") }
        let service = try ExampleProcess("blue", ["service", "--socket", folder + "/service.sock"], environment: environment)
        processes.append(service)
        guard await service.waitFor("listening") else { throw ExampleProcess.Failure.notReady("service: \(service.errors)") }
    }

    deinit {
        for process in processes { process.stopInBackground() }
        try? FileManager.default.removeItem(atPath: folder)
    }
}
