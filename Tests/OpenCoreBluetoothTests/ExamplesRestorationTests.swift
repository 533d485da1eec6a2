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

        // Relaunched: its service and advertising restored, the central still subscribed (in willRestoreState, as
        // the characteristic's subscribedCentrals, so no didSubscribeTo); the values resume and the central gets
        // all it asked for on the same link.
        let second = try ExampleProcess("RestoringHeartRatePeripheral", ["--timeout", "20"], environment: environment)
        defer { second.stopInBackground() }
        #expect(await central.waitForExit(limit: .seconds(30)) == 0, "central: \(central.output) \(central.errors)")
        let lines = second.output.split(separator: "\n")
        #expect(lines.first == "restored services=1 advertising=true subscribers=1", "\(second.output)")
        #expect(!lines.contains("subscribed"), "\(second.output)")
        #expect(!lines.contains("published"), "\(second.output)")
    }

    // Seed 001's apps, unchanged, given a restore identifier by the environment (OCB_RESTORE_ID: the option an iOS
    // developer adds to their managers). Their willRestoreState only prints, so they rebuild what they need as
    // they would on iOS; what the system kept makes the exchange go on across the kills.

    @Test("seed 001's peripheral, killed, is relaunched by the service for the central's subscription, and the exchange completes")
    func seed001PeripheralIsRelaunchedForTheSubscription() async throws {
        let world = try await RestorationWorld()
        var kept = world.environment
        kept["OCB_RESTORE_ID"] = "seed001"
        kept["OCB_RELAUNCH"] = "peripheral"
        try await seedPeripheralAdvertisesThenIsKilled(kept)

        // Seed 001's central on a stack of its own finds the advertising the service kept, connects, subscribes:
        // the service starts the peripheral app again, which takes its stack back and answers.
        let central = try ExampleProcess("Seed001Central", ["--timeout", "45"], environment: world.environment)
        defer { central.stopInBackground() }
        #expect(await central.waitForExit(limit: .seconds(50)) == 0, "central: \(central.errors) \(central.output)")
        #expect(central.errors.contains("Exchange done"), "\(central.errors)")
        let launchLog = world.folder + "/data/opencorebluetooth/bonds/service/peripheral.seed001/launch.log"
        let relaunched = { (try? String(contentsOfFile: launchLog, encoding: .utf8)) ?? "" }
        // (Its view controller's lines come at once, the seed's own log when it exits.)
        #expect(await poll(within: .seconds(10)) { relaunched().contains("Exchange done") && relaunched().contains("Written value is") },
                "\(relaunched())")
        let lines = relaunched().split(separator: "\n").map(String.init)
        let restoredAt = lines.firstIndex(of: "willRestoreState"), subscribedAt = lines.firstIndex(of: "didSubscribeTo characteristic")
        #expect(restoredAt != nil && subscribedAt != nil && restoredAt! < subscribedAt!, "\(lines)")
        #expect(lines.contains("Written value is: [\"Yo\": \"Lo\"]"), "\(lines)")
    }

    @Test("seed 001's peripheral, killed and launched again, hears the Write Command sent while it was gone and the live one")
    func seed001PeripheralHearsWriteCommandsAcrossItsAbsence() async throws {
        let world = try await RestorationWorld()
        var kept = world.environment
        kept["OCB_RESTORE_ID"] = "seed001"
        try await seedPeripheralAdvertisesThenIsKilled(kept)
        let characteristic = "199ab74c-eed0-11e6-bc64-92361f002672"
        func writeCommand(_ value: String) async throws {
            let writer = try ExampleProcess("blue", ["write", "--hci", "air:" + world.air, "Peripheral - iOS", characteristic, value,
                                                     "--without-response", "--timeout", "15"], environment: world.environment)
            #expect(await writer.waitForExit(limit: .seconds(20)) == 0, "\(writer.output) \(writer.errors)")
        }
        try await writeCommand("01")

        // Launched again: the queued command reaches didReceiveWrite once its services are published again (the
        // service held it), and a live command too, through the database it took back.
        let second = try ExampleProcess("Seed001Peripheral", ["--timeout", "8"], environment: kept)
        defer { second.stopInBackground() }
        #expect(await poll(within: .seconds(20)) { second.errors.contains("Start advertising") }, "\(second.errors)")
        try await writeCommand("02")
        _ = await second.waitForExit(limit: .seconds(20))
        #expect(second.output.hasPrefix("willRestoreState\n"), "\(second.output)")
        #expect(second.output.components(separatedBy: "didReceiveWrite requests").count == 3, "\(second.output)")
        #expect(second.output.contains("'0x1'") && second.output.contains("'0x2'"), "the seed decodes each value: \(second.output)")
    }

    @Test("seed 001's peripheral and central both killed mid-exchange; relaunched, the kept subscription carries the value and the exchange completes")
    func seed001BothKilledAndRelaunched() async throws {
        let world = try await RestorationWorld()
        var kept = world.environment
        kept["OCB_RESTORE_ID"] = "seed001"
        try await seedPeripheralAdvertisesThenIsKilled(kept)

        // The central connects and subscribes to the kept server; no value comes (the app is gone). Killed too.
        let centralState = world.folder + "/state/opencorebluetooth/restoration/central-seed001.json"
        let central = try ExampleProcess("Seed001Central", ["--timeout", "60"], environment: kept)
        defer { central.stopInBackground() }
        #expect(await poll(within: .seconds(20)) {
            ((try? String(contentsOfFile: centralState, encoding: .utf8)) ?? "").contains("\"notifying\" : true")
        }, "central: \(central.errors)")
        kill(central.process.processIdentifier, SIGKILL)
        #expect(await central.process.waitForExit(within: .seconds(5)))

        // The peripheral app again: its central is still subscribed (no new connection, no new subscription on
        // the air), so the seed sends its value, which the central's kept stack queues.
        let peripheralAgain = try ExampleProcess("Seed001Peripheral", ["--timeout", "40"], environment: kept)
        defer { peripheralAgain.stopInBackground() }
        #expect(await poll(within: .seconds(20)) { peripheralAgain.errors.contains("Did send data") }, "\(peripheralAgain.errors)")

        // The central app again: restored; the seed keeps no restored peripheral (iOS cancels its link then),
        // finds it by scanning, and the exchange completes.
        let centralAgain = try ExampleProcess("Seed001Central", ["--timeout", "40"], environment: kept)
        defer { centralAgain.stopInBackground() }
        #expect(await centralAgain.waitForExit(limit: .seconds(45)) == 0, "central: \(centralAgain.errors) \(centralAgain.output)")
        #expect(centralAgain.output.hasPrefix("willRestoreState\n"), "\(centralAgain.output)")
        #expect(centralAgain.errors.contains("Cancelling connection for unused peripheral"), "\(centralAgain.errors)")
        #expect(await peripheralAgain.waitForExit(limit: .seconds(20)) == 0, "peripheral: \(peripheralAgain.errors)")
        // (The seed's log is on standard output, written at its exit.) Its subscriber was given back before the
        // central app came again.
        #expect(peripheralAgain.output.hasPrefix("willRestoreState\n"), "\(peripheralAgain.output)")
        #expect(peripheralAgain.output.contains("didSubscribeTo characteristic"), "\(peripheralAgain.output)")
        #expect(peripheralAgain.output.contains("Written value is: [\"Yo\": \"Lo\"]"), "\(peripheralAgain.output)")
    }
}

/// Seed 001's peripheral started with `environment` (a restore identifier) until it advertises, then killed with
/// SIGKILL: its stack, advertising and database stay with the service.
private func seedPeripheralAdvertisesThenIsKilled(_ environment: [String: String]) async throws {
    let peripheral = try ExampleProcess("Seed001Peripheral", ["--timeout", "60"], environment: environment)
    defer { peripheral.stopInBackground() }
    #expect(await poll(within: .seconds(20)) { peripheral.errors.contains("Start advertising") }, "\(peripheral.errors)")
    kill(peripheral.process.processIdentifier, SIGKILL)
    #expect(await peripheral.process.waitForExit(within: .seconds(5)))
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
