import Foundation
import TestSupport
import Testing

/// A `blue` process in the background (a hub, a server): output to a file, SIGTERM then SIGKILL on stop.
final class BackgroundBlue: @unchecked Sendable {
    let process = Process()
    let outputURL: URL
    let errorURL: URL

    /// `environment`: variables added to ours.
    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("blue-bg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        outputURL = folder.appendingPathComponent("stdout")
        errorURL = folder.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        process.executableURL = BlueProcess.executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var output: String { (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "" }
    var errors: String { (try? String(contentsOf: errorURL, encoding: .utf8)) ?? "" }

    /// Waits (at most `limit`, suspending) until the output contains `text`.
    @discardableResult
    func waitFor(_ text: String, limit: Duration = .seconds(60)) async -> Bool {
        await poll(within: limit, every: .milliseconds(20)) { output.contains(text) || process.ended != nil }
            && output.contains(text)
    }

    /// SIGTERM, then SIGKILL after `grace`. Returns the exit status (or the signal) and whether it ended by itself.
    @discardableResult
    func stop(grace: Duration = .seconds(3)) async -> (status: Int32, clean: Bool) {
        if let ended = process.ended { return (ended.status, true) }
        return await process.stop(grace: grace)
    }

    /// SIGTERM now, SIGKILL after `grace` if still running, without waiting (for `defer`).
    func stopInBackground(grace: Duration = .seconds(3)) {
        process.stopInBackground(grace: grace)
    }

    deinit {
        // SIGTERM, SIGKILL after the grace period, without waiting.
        process.stopInBackground(grace: .seconds(3))
    }
}

/// A hub and a heart-rate server on it, for one test; both stopped (SIGKILL after a grace period) in all cases.
final class HeartRateScene: @unchecked Sendable {
    let socket: String
    let name: String
    let hub: BackgroundBlue
    let server: BackgroundBlue

    init() async throws {
        let tag = UUID().uuidString.prefix(6).lowercased()
        socket = testTemporaryPath("ocb-test-\(tag).sock")
        name = "hr-\(tag)"
        hub = try BackgroundBlue(["air", "--socket", socket, "--stats-interval", "0"])
        guard await hub.waitFor("listening") else {
            await hub.stop()
            throw SceneError.notReady("hub: \(hub.output) \(hub.errors)")
        }
        server = try BackgroundBlue(["serve", "--profile", "heart-rate", "--name", name, "--hci", "air:\(socket)"])
        guard await server.waitFor("serving") else {
            await server.stop()
            await hub.stop()
            throw SceneError.notReady("server: \(server.output) \(server.errors)")
        }
    }

    var hci: [String] { ["--hci", "air:\(socket)"] }

    func stop() async -> (status: Int32, clean: Bool) {
        let result = await server.stop()
        await hub.stop()
        return result
    }

    deinit {
        server.stopInBackground()
        hub.stopInBackground()
    }

    enum SceneError: Error { case notReady(String) }
}

@Suite(.serialized) struct StackCommandTests {
    @Test func badTransportUUIDAndValueAreOneLineErrors() async throws {
        let bogus = try await BlueProcess.run(["scan", "--hci", "bogus", "--timeout", "1"])
        #expect(bogus.status == 64)
        #expect(bogus.standardError == "error: unknown HCI transport \"bogus\"; expected virtual, in-process, air:PATH, tcp:HOST:PORT, unix:PATH, serial:/dev/ttyX[,BAUD][,rtscts] or hciN\n")
        let missing = testTemporaryPath("ocb-test-missing-\(UUID().uuidString.prefix(6)).sock")
        let unreachable = try await BlueProcess.run(["read", "--hci", "air:\(missing)", "somebody", "2A38"])
        #expect(unreachable.status == 69)
        #expect(unreachable.standardError.hasPrefix("error: no air hub at \(missing) (start one with `blue air --socket \(missing)`)"))
        #expect(unreachable.standardError.split(separator: "\n").count == 1)
        let uuid = try await BlueProcess.run(["read", "--hci", "air:\(missing)", "somebody", "2AZZ"])
        #expect(uuid.status == 64)
        #expect(uuid.standardError == "error: bad UUID \"2AZZ\": expected 4 or 8 hex digits, or 8-4-4-4-12 hex digits\n")
        let scanUUID = try await BlueProcess.run(["scan", "--hci", "air:\(missing)", "--service", "xyz"])
        #expect(scanUUID.status == 64)
        #expect(scanUUID.standardError == "error: bad UUID \"xyz\": expected 4 or 8 hex digits, or 8-4-4-4-12 hex digits\n")
        let value = try await BlueProcess.run(["write", "--hci", "air:\(missing)", "somebody", "2A39", "0g"])
        #expect(value.status == 64)
        #expect(value.standardError.hasPrefix("error: \"0g\" is not a hex value"))
        let serve = try await BlueProcess.run(["serve", "--hci", "air:\(missing)"])
        #expect(serve.status == 64)
        #expect(serve.standardError == "error: give a definition file or --profile (heart-rate, battery, chat, blueear)\n")
    }

    @Test func scanAndExploreSeeTheHeartRateServer() async throws {
        let scene = try await HeartRateScene()
        let scan = try await BlueProcess.run(["scan"] + scene.hci + ["--timeout", "3", "--json"])
        #expect(scan.status == 0, "\(scan.standardError)")
        let objects = scan.standardOutput.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let mine = objects.filter { $0["name"] as? String == scene.name }
        #expect(!mine.isEmpty, "\(scan.standardOutput)")
        let services = (mine.first?["services"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
        #expect(services.contains("Heart Rate"), "\(services)")
        #expect(mine.first?["connectable"] as? Bool == true)

        let filtered = try await BlueProcess.run(["scan"] + scene.hci + ["--timeout", "2", "--service", "180F"])
        #expect(filtered.status == 0)
        #expect(filtered.standardOutput.contains(scene.name))
        #expect(filtered.standardOutput.contains("180D Heart Rate"))
        let none = try await BlueProcess.run(["scan"] + scene.hci + ["--timeout", "2", "--service", "FFF0"])
        #expect(none.status == 0)
        #expect(none.standardOutput.isEmpty)
        // Each report of --json says when it was heard.
        #expect(mine.allSatisfy { ($0["time"] as? String)?.hasSuffix("Z") == true }, "\(mine)")
        // Name (any case), address prefix, RSSI and company filters; --timestamps starts lines with the time.
        let address = try #require(mine.first?["address"] as? String)
        let named = try await BlueProcess.run(["scan"] + scene.hci + [
            "--timeout", "2", "--name", scene.name.uppercased(), "--address", String(address.prefix(5)), "--rssi-min", "-127",
            "--timestamps"])
        #expect(named.status == 0, "\(named.standardError)")
        let lines = named.standardOutput.split(separator: "\n")
        #expect(!lines.isEmpty && lines.allSatisfy { $0.contains(scene.name) }, "\(named.standardOutput)")
        #expect(lines.allSatisfy { $0.range(of: #"^\d\d:\d\d:\d\d\.\d\d\d  "#, options: .regularExpression) != nil },
                "\(named.standardOutput)")
        let strong = try await BlueProcess.run(["scan"] + scene.hci + ["--timeout", "2", "--name", scene.name, "--rssi-min", "10"])
        #expect(strong.status == 0 && strong.standardOutput.isEmpty, "\(strong.standardOutput)")
        let company = try await BlueProcess.run(["scan"] + scene.hci + ["--timeout", "2", "--name", scene.name, "--manufacturer", "0x004C"])
        #expect(company.status == 0 && company.standardOutput.isEmpty, "\(company.standardOutput)")
        for (arguments, message) in [
            (["--rssi-min", "50"], "error: --rssi-min 50: expected dBm from -127 to 20 (e.g. -70)\n"),
            (["--address", "AA:B"], "error: --address AA:B: expected an address or its first octets (AA:BB:CC)\n"),
            (["--sort", "loud"], "error: --sort loud: expected first, rssi, name\n"),
            (["--manufacturer", "apple"], "error: --manufacturer apple: expected a company identifier (0x004C or 76)\n"),
        ] {
            let refused = try await BlueProcess.run(["scan"] + scene.hci + arguments)
            #expect(refused.status == 64 && refused.standardError == message, "\(refused.standardError)")
        }

        let explore = try await BlueProcess.run(["explore", scene.name] + scene.hci + ["--timeout", "5"])
        #expect(explore.status == 0, "\(explore.standardError)")
        #expect(explore.standardOutput.contains("Service 180D Heart Rate"))
        // The link it used: parameters, PHYs, data length, ATT_MTU, RSSI, encryption.
        #expect(explore.standardOutput.range(
            of: #"\nLink: interval [0-9.]+ ms, latency \d+, timeout \d+ ms, PHY 1M/1M, data \d+/\d+ octets, ATT MTU \d+, RSSI -?\d+ dBm, not encrypted\n"#,
            options: .regularExpression) != nil, "\(explore.standardOutput)")
        #expect(explore.standardOutput.contains("2A37 Heart Rate Measurement  [notify]"))
        #expect(explore.standardOutput.contains("2A38 Body Sensor Location  [read]"))
        #expect(explore.standardOutput.contains("= 01  (Chest)"))
        #expect(explore.standardOutput.contains("2A29 Manufacturer Name String  [read]"))
        #expect(explore.standardOutput.contains("(\"OpenCoreBluetooth\")"))
        #expect(explore.standardOutput.contains("2A19 Battery Level  [read, notify]"))
        #expect(explore.standardOutput.contains("= 57  (87 %)"))
        #expect(await scene.server.waitFor("read 2A38 Body Sensor Location by "))
        // Service lines in bold when colours are forced (never in a pipe otherwise, as above).
        let coloured = try await BlueProcess.run(["explore", scene.name] + scene.hci + ["--timeout", "5"], environment: ["FORCE_COLOR": "1", "NO_COLOR": ""])
        #expect(coloured.standardOutput.contains("\u{1B}[1mService 180D Heart Rate\u{1B}[0m"), "\(coloured.standardOutput)")
        #expect(!explore.standardOutput.contains("\u{1B}"))
        let exploreJSON = try await BlueProcess.run(["explore", scene.name, "--json"] + scene.hci + ["--timeout", "5"])
        let tree = try JSONSerialization.jsonObject(with: Data(exploreJSON.standardOutput.utf8)) as? [String: Any]
        let link = tree?["link"] as? [String: Any]
        #expect(link?["txPHY"] as? String == "1M" && link?["intervalMs"] is Double && link?["encrypted"] as? Bool == false,
                "\(exploreJSON.standardOutput)")
        let stopped = await scene.stop()
        #expect(stopped.clean && stopped.status == 0, "serve must exit 0 on SIGTERM")
    }

    @Test func readWriteAndTheirErrors() async throws {
        let scene = try await HeartRateScene()
        let read = try await BlueProcess.run(["read", scene.name, "2A38"] + scene.hci)
        #expect(read.status == 0, "\(read.standardError)")
        #expect(read.standardOutput == "2A38 Body Sensor Location  = 01  (Chest)\n")
        let json = try await BlueProcess.run(["read", scene.name, "180D/2A38", "--json"] + scene.hci)
        #expect(json.standardOutput == "{\"decoded\":\"Chest\",\"handle\":\(handleOf(json.standardOutput)),\"hex\":\"01\",\"name\":\"Body Sensor Location\",\"uuid\":\"2A38\"}\n")

        let write = try await BlueProcess.run(["write", scene.name, "2A39", "01"] + scene.hci)
        #expect(write.status == 0, "\(write.standardError)")
        #expect(write.standardOutput == "wrote 1 byte to 2A39 Heart Rate Control Point\n")
        #expect(await scene.server.waitFor("write 2A39 Heart Rate Control Point by "))
        #expect(scene.server.output.contains(": 01\n"))

        let notWritable = try await BlueProcess.run(["write", scene.name, "2A38", "02"] + scene.hci)
        #expect(notWritable.status == 1)
        #expect(notWritable.standardError == "error: characteristic 2A38 (Body Sensor Location) is not writable\n")
        let notReadable = try await BlueProcess.run(["read", scene.name, "2A39"] + scene.hci)
        #expect(notReadable.status == 1)
        #expect(notReadable.standardError == "error: characteristic 2A39 (Heart Rate Control Point) is not readable\n")
        let noCharacteristic = try await BlueProcess.run(["read", scene.name, "2A99"] + scene.hci)
        #expect(noCharacteristic.status == 2)
        #expect(noCharacteristic.standardError == "error: no characteristic 2A99 Database Change Increment on \(scene.name)\n")
        let notFound = try await BlueProcess.run(["read", "nobody-here", "2A38", "--timeout", "1"] + scene.hci)
        #expect(notFound.status == 2)
        #expect(notFound.standardError == "error: no device matching \"nobody-here\" found within 1 s\n")
        _ = await scene.stop()
    }

    /// The library logs through swift-log; `blue` routes it to stderr at `--log-level`, else `$OCB_LOG_LEVEL`, else
    /// notice (nothing on a successful read).
    @Test func logLevelRoutesTheLibrarysLogging() async throws {
        let scene = try await HeartRateScene()
        let quiet = try await BlueProcess.run(["read", scene.name, "2A38"] + scene.hci)
        #expect(quiet.status == 0 && quiet.standardError.isEmpty, "\(quiet.standardError)")
        let debug = try await BlueProcess.run(["read", scene.name, "2A38", "--log-level", "debug"] + scene.hci)
        #expect(debug.status == 0, "\(debug.standardError)")
        #expect(debug.standardOutput == quiet.standardOutput)
        let lines = debug.standardError.split(separator: "\n")
        #expect(lines.contains { $0.contains(" debug opencorebluetooth.hci: sent Reset") })
        #expect(lines.contains { $0.contains(" debug opencorebluetooth.att: sent Read Request") && $0.contains(" connection=0x") && $0.contains(" peer=") })
        #expect(lines.contains { $0.contains(" debug opencorebluetooth.gap: connected as central") })
        #expect(lines.allSatisfy { $0.range(of: #"^\d\d:\d\d:\d\d\.\d{6} (trace|debug|info|notice|warning|error|critical) opencorebluetooth\.[a-z]+: "#, options: .regularExpression) != nil },
                "\(lines.prefix(3))")
        let variable = try await BlueProcess.run(["read", scene.name, "2A38"] + scene.hci, environment: ["OCB_LOG_LEVEL": "DEBUG"])
        #expect(variable.status == 0)
        #expect(variable.standardError.contains(" debug opencorebluetooth.gap: connected as central"))
        #expect(!variable.standardError.contains(" trace "))
        let overridden = try await BlueProcess.run(["read", scene.name, "2A38", "--log-level", "error"] + scene.hci,
                                                   environment: ["OCB_LOG_LEVEL": "debug"])
        #expect(overridden.status == 0 && overridden.standardError.isEmpty, "\(overridden.standardError)")
        let badVariable = try await BlueProcess.run(["read", scene.name, "2A38"] + scene.hci, environment: ["OCB_LOG_LEVEL": "loud"])
        #expect(badVariable.status == 0)
        #expect(badVariable.standardError == "OCB_LOG_LEVEL=loud is not a log level (trace, debug, info, notice, warning, error, critical); using notice\n")
        let badOption = try await BlueProcess.run(["read", scene.name, "2A38", "--log-level", "loud"] + scene.hci)
        #expect(badOption.status == 64)
        #expect(badOption.standardError.hasPrefix("Error: --log-level loud is not a level (trace, debug, info, notice, warning, error, critical)\n"))
        _ = await scene.stop()
    }

    @Test func subscribeGetsThreeNotifications() async throws {
        let scene = try await HeartRateScene()
        let subscribe = try await BlueProcess.run(["subscribe", scene.name, "2A37", "--count", "3", "--timeout", "8"] + scene.hci)
        #expect(subscribe.status == 0, "\(subscribe.standardError)")
        let lines = subscribe.standardOutput.split(separator: "\n")
        #expect(lines.count == 3, "\(subscribe.standardOutput)")
        #expect(lines.allSatisfy { $0.hasPrefix("2A37 Heart Rate Measurement  = 16 ") && $0.contains(" bpm, contact, RR ") })
        #expect(await scene.server.waitFor("subscribe 2A37 Heart Rate Measurement by "))
        // With --timestamps each line starts with the time it arrived; JSON objects always say it.
        let timed = try await BlueProcess.run(["subscribe", scene.name, "2A37", "--count", "2", "--timeout", "8", "--timestamps"] + scene.hci)
        #expect(timed.status == 0, "\(timed.standardError)")
        #expect(timed.standardOutput.split(separator: "\n").allSatisfy {
            $0.range(of: #"^\d\d:\d\d:\d\d\.\d\d\d  2A37 Heart Rate Measurement  = "#, options: .regularExpression) != nil
        }, "\(timed.standardOutput)")
        let json = try await BlueProcess.run(["subscribe", scene.name, "2A37", "--count", "1", "--timeout", "8", "--json"] + scene.hci)
        let object = try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any]
        #expect((object?["time"] as? String)?.hasSuffix("Z") == true, "\(json.standardOutput)")
        // Battery Level notifies, but this server never changes it: the silence is said, exit 0.
        let quiet = try await BlueProcess.run(["subscribe", scene.name, "2A19", "--timeout", "2"] + scene.hci)
        #expect(quiet.status == 0, "\(quiet.standardError)")
        #expect(quiet.standardOutput.isEmpty)
        #expect(quiet.standardError == "blue subscribe: no value arrived within 2 s\n", "\(quiet.standardError)")
        let notNotifying = try await BlueProcess.run(["subscribe", scene.name, "2A38", "--count", "1"] + scene.hci)
        #expect(notNotifying.status == 1)
        #expect(notNotifying.standardError == "error: characteristic 2A38 (Body Sensor Location) does not notify or indicate\n")
        _ = await scene.stop()
    }
}

/// The "handle" number in a JSON line (the test checks the rest exactly).
func handleOf(_ line: String) -> Int {
    guard let data = line.split(separator: "\n").first.map({ Data($0.utf8) }),
          let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return -1 }
    return object["handle"] as? Int ?? -1
}
