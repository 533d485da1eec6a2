import Foundation
import TestSupport
import Testing
import VirtualController
import SharedAir

/// Seed 001 (issue 5 item 2) as two programs of Examples/: the iOS peripheral's and the macOS central's
/// BluetoothManager, each in its own process, meeting on a `blue air` hub of the test's own.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ExamplesSeed001Tests {
    @Test("seed 001: the central reads {\"Hello\": \"Darkness\"}, the peripheral receives {\"Yo\": \"Lo\"}, both exit 0")
    func seed001ExchangesBothPlists() async throws {
        let hub = try await ExampleHub()
        let peripheral = try ExampleProcess("Seed001Peripheral", ["--timeout", "25"], environment: hub.environment)
        defer { peripheral.stopInBackground() }
        let central = try ExampleProcess("Seed001Central", ["--timeout", "25"], environment: hub.environment)
        defer { central.stopInBackground() }
        let centralStatus = await central.waitForExit(limit: .seconds(28))
        let peripheralStatus = await peripheral.waitForExit(limit: .seconds(5))
        #expect(centralStatus == 0, "central: \(central.output) \(central.errors)")
        #expect(peripheralStatus == 0, "peripheral: \(peripheral.output) \(peripheral.errors)")

        // The seed's own log (its `print`s, on standard output), as the seed's screenshot shows it.
        let centralLog = central.output
        #expect(centralLog.contains("didDiscover: Peripheral - iOS"))
        #expect(centralLog.contains("Matching characteristic"))
        #expect(centralLog.contains(#"Value read is: ["Hello": "Darkness"]"#))
        #expect(centralLog.contains("Writing on peripheral."))
        #expect(centralLog.contains("didWriteValueFor "))
        #expect(centralLog.contains("didDisconnectPeripheral"))
        let peripheralLog = peripheral.output
        #expect(peripheralLog.contains("peripheralManagerDidStartAdvertising"))
        #expect(peripheralLog.contains("didSubscribeTo characteristic"))
        #expect(peripheralLog.contains("Sending response: Success"))
        #expect(peripheralLog.contains(#"Written value is: ["Yo": "Lo"]"#))

        // The order of the central's steps: read, then write, then disconnect.
        let read = try #require(centralLog.range(of: "Value read is:"))
        let write = try #require(centralLog.range(of: "didWriteValueFor "))
        let disconnect = try #require(centralLog.range(of: "didDisconnectPeripheral"))
        #expect(read.lowerBound < write.lowerBound && write.lowerBound < disconnect.lowerBound)

        // The view controllers' labels (standard error).
        #expect(central.errors.contains("[Seed001Central] Did connect to: Peripheral - iOS"))
        #expect(central.errors.contains("[Seed001Central] Exchange done"))
        #expect(peripheral.errors.contains("[Seed001Peripheral] Did send data ⬆️"))
        #expect(peripheral.errors.contains("[Seed001Peripheral] Exchange done"))
    }

    /// Issue 12 item 1: on Apple's systems two apps on two devices simply meet. Here two programs with no `OCB_HCI`
    /// meet on the shared air: the first that needs it starts `blue air` (found beside it) at the socket
    /// (`OCB_AIR_SOCKET` only keeps the test off the user's own hub), the other joins it; the hub outlives both.
    @Test("seed 001: two programs with no OCB_HCI meet on the shared air, started on demand")
    func seed001MeetsOnTheSharedAirByDefault() async throws {
        let directory = testTemporaryPath("ocb-shared-\(UUID().uuidString.prefix(6).lowercased())")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let socket = directory + "/air.sock"
        #expect(!AirHub.isRunning(at: socket))
        let environment = ["OCB_AIR_SOCKET": socket]
        let peripheral = try ExampleProcess("Seed001Peripheral", ["--timeout", "25"], environment: environment)
        let central = try ExampleProcess("Seed001Central", ["--timeout", "25"], environment: environment)
        let centralStatus = await central.waitForExit(limit: .seconds(28))
        let peripheralStatus = await peripheral.waitForExit(limit: .seconds(5))
        let hubWasRunning = AirHub.isRunning(at: socket)
        peripheral.stopInBackground()
        central.stopInBackground()
        await stopHubsStarted(at: socket)
        try? FileManager.default.removeItem(atPath: directory)
        #expect(centralStatus == 0, "central: \(central.output) \(central.errors)")
        #expect(peripheralStatus == 0, "peripheral: \(peripheral.output) \(peripheral.errors)")
        #expect(central.output.contains(#"Value read is: ["Hello": "Darkness"]"#))
        #expect(peripheral.output.contains(#"Written value is: ["Yo": "Lo"]"#))
        #expect(hubWasRunning, "the hub started on demand outlives the programs")
    }

    /// Issue 12 item 4: seed 001 in the background, both with their background modes (OCB_BACKGROUND_MODES stands in
    /// for Info.plist's UIBackgroundModes): the exchange completes; the peripheral's name is not advertised (the
    /// central scans for the seed's service explicitly, so the overflow area finds it).
    @Test("seed 001: in the background with bluetooth-central and bluetooth-peripheral, the exchange completes")
    func seed001InTheBackgroundWithItsModes() async throws {
        let hub = try await ExampleHub()
        var environment = hub.environment
        environment["OCB_APP_STATE"] = "background"
        environment["OCB_BACKGROUND_MODES"] = "bluetooth-central,bluetooth-peripheral"
        let peripheral = try ExampleProcess("Seed001Peripheral", ["--timeout", "40"], environment: environment)
        defer { peripheral.stopInBackground() }
        let central = try ExampleProcess("Seed001Central", ["--timeout", "40"], environment: environment)
        defer { central.stopInBackground() }
        let centralStatus = await central.waitForExit(limit: .seconds(45))
        let peripheralStatus = await peripheral.waitForExit(limit: .seconds(5))
        #expect(centralStatus == 0, "central: \(central.output) \(central.errors)")
        #expect(peripheralStatus == 0, "peripheral: \(peripheral.output) \(peripheral.errors)")
        #expect(central.output.contains("didDiscover: \n"), "no name in a background app's advertising: \(central.output)")
        #expect(central.output.contains(#"Value read is: ["Hello": "Darkness"]"#))
        #expect(peripheral.output.contains(#"Written value is: ["Yo": "Lo"]"#))
    }

    /// Without bluetooth-peripheral, a peripheral app in the background gets no Bluetooth event (not even its first
    /// state update): it never publishes nor advertises, and the central finds nothing.
    @Test("seed 001: a background peripheral without its mode hears nothing, and the central finds nothing")
    func seed001PeripheralInTheBackgroundWithoutItsMode() async throws {
        let hub = try await ExampleHub()
        var background = hub.environment
        background["OCB_APP_STATE"] = "background"
        background["OCB_BACKGROUND_MODES"] = "bluetooth-central"
        let peripheral = try ExampleProcess("Seed001Peripheral", ["--timeout", "3"], environment: background)
        defer { peripheral.stopInBackground() }
        let central = try ExampleProcess("Seed001Central", ["--timeout", "3"], environment: hub.environment)
        defer { central.stopInBackground() }
        #expect(await central.waitForExit(limit: .seconds(15)) == 1)
        #expect(await peripheral.waitForExit(limit: .seconds(15)) == 1)
        #expect(peripheral.errors.contains("Seed001Peripheral: timed out after 3.0 s: advertising did not start"), "\(peripheral.errors)")
        #expect(!peripheral.output.contains("peripheralManagerDidUpdateState"), "\(peripheral.output)")
        #expect(central.errors.contains("Seed001Central: timed out after 3.0 s: no peripheral advertising the seed's service"))
    }

    /// A suspended central app gets nothing either: a foreground peripheral advertises and waits in vain.
    @Test("seed 001: a suspended central hears nothing; the peripheral waits in vain")
    func seed001SuspendedCentral() async throws {
        let hub = try await ExampleHub()
        var suspended = hub.environment
        suspended["OCB_APP_STATE"] = "suspended"
        suspended["OCB_BACKGROUND_MODES"] = "bluetooth-central"
        let peripheral = try ExampleProcess("Seed001Peripheral", ["--timeout", "3"], environment: hub.environment)
        defer { peripheral.stopInBackground() }
        let central = try ExampleProcess("Seed001Central", ["--timeout", "3"], environment: suspended)
        defer { central.stopInBackground() }
        #expect(await central.waitForExit(limit: .seconds(15)) == 1)
        #expect(await peripheral.waitForExit(limit: .seconds(15)) == 1)
        #expect(!central.output.contains("centralManagerDidUpdateState"), "\(central.output)")
        #expect(peripheral.errors.contains("Seed001Peripheral: timed out after 3.0 s: advertising, but no central subscribed"),
                "\(peripheral.errors)")
    }

    @Test("seed 001: the central alone times out with exit 1 and says what it was waiting for")
    func seed001CentralTimesOut() async throws {
        let hub = try await ExampleHub()
        let central = try ExampleProcess("Seed001Central", ["--timeout", "1"], environment: hub.environment)
        defer { central.stopInBackground() }
        #expect(await central.waitForExit(limit: .seconds(10)) == 1)
        #expect(central.errors.contains("Seed001Central: timed out after 1.0 s: no peripheral advertising the seed's service"))
    }

    @Test("seed 001: the peripheral alone times out with exit 1 and says what it was waiting for")
    func seed001PeripheralTimesOut() async throws {
        let hub = try await ExampleHub()
        let peripheral = try ExampleProcess("Seed001Peripheral", ["--timeout", "1"], environment: hub.environment)
        defer { peripheral.stopInBackground() }
        #expect(await peripheral.waitForExit(limit: .seconds(10)) == 1)
        #expect(peripheral.errors.contains("Seed001Peripheral: timed out after 1.0 s: advertising, but no central subscribed"))
        #expect(peripheral.output.contains("peripheralManagerDidStartAdvertising"))
    }

    @Test("seed 001: a bad --timeout is one line and exit 1")
    func seed001RejectsABadTimeout() async throws {
        for program in ["Seed001Central", "Seed001Peripheral"] {
            let process = try ExampleProcess(program, ["--timeout", "zero"])
            defer { process.stopInBackground() }
            #expect(await process.waitForExit(limit: .seconds(10)) == 1)
            #expect(process.errors == "\(program): --timeout needs a positive number of seconds\n")
        }
    }
}
