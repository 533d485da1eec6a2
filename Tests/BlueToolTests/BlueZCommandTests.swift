import BlueZTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import TestSupport
import Testing

/// `blue scan/explore/read/write/subscribe --hci bluez` against a bluetoothd stand-in on a real dbus-daemon (the
/// system bus address pointed at it): what each command prints and which D-Bus calls it makes. The real bluetoothd
/// is in the VM scenario bluez-blue-commands.
@Suite(.timeLimit(.minutes(3)))
struct BlueZCommandTests {
    /// Runs `body` with a bus and the stand-in on it; nothing when dbus-daemon is missing (a failure when the
    /// interop tools are required).
    private func withBluetoothd(pairedAtStart: Bool = false, _ body: (FakeBluetoothd, [String: String]) async throws -> Void) async throws {
        let ran = try await FakeBluetoothd.run(pairedAtStart: pairedAtStart) { bluetoothd, bus in
            try await body(bluetoothd, ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        }
        if !ran, TestDBusDaemon.required { Issue.record("OCB_REQUIRE_INTEROP=1 but dbus-daemon is not installed") }
    }

    private let characteristic = FakeBluetoothd.standardCharacteristics[0].uuid.uppercased()
    private let refused = FakeBluetoothd.standardCharacteristics[1].uuid.uppercased()

    @Test func scanReportsTheDeviceBluetoothdFound() async throws {
        try await withBluetoothd { bluetoothd, environment in
            let result = try await BlueProcess.run(["scan", "--hci", "bluez", "--timeout", "1", "--json"], environment: environment)
            #expect(result.status == 0, "\(result.standardError)")
            let line = try #require(result.standardOutput.split(separator: "\n").first, "\(result.standardError)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["name"] as? String == "Fake")
            #expect(object["address"] as? String == FakeBluetoothd.deviceAddress)
            #expect(object["rssi"] as? Int == -50)
            #expect((object["manufacturer"] as? [String: Any])?["company"] as? Int == 0x004C)
            #expect((object["services"] as? [[String: Any]])?.first?["uuid"] as? String == FakeBluetoothd.serviceUUID.uppercased())
            // Reported once: bluetoothd's RSSI updates are not new reports without --duplicates.
            #expect(result.standardOutput.split(separator: "\n").count == 1)
            #expect(bluetoothd.calls.first == #"SetDiscoveryFilter ["DuplicateData": <false>, "Transport": <"le">]"#)
            #expect(bluetoothd.calls.contains("StartDiscovery ") && bluetoothd.calls.contains("StopDiscovery "))
        }
    }

    @Test func exploreShowsTheTreeWithValueHandlesAndErrors() async throws {
        try await withBluetoothd { bluetoothd, environment in
            let result = try await BlueProcess.run(["explore", "--hci", "bluez:hci0", "Fake"], environment: environment)
            #expect(result.status == 0, "\(result.standardError)")
            let text = result.standardOutput
            #expect(text.contains("Fake  0A:1B:00:00:00:77  RSSI -50 dBm  ATT MTU 185"), "\(text)")
            // The last service ends at its last attribute (bluetoothd does not say where a service ends).
            #expect(text.contains("Service \(FakeBluetoothd.serviceUUID.uppercased())  [0x0010-0x0015]"), "\(text)")
            // The value handle is the one after the declaration bluetoothd names the object after.
            #expect(text.contains("\(characteristic)  [read, write-without-response, write, notify]  handle 0x0012  = 01 02 03"), "\(text)")
            #expect(text.contains("2902 Client Characteristic Configuration  handle 0x0013  = 00 00"), "\(text)")
            // The same words as on our host: the ATT error and the handle it names.
            #expect(text.contains("\(refused)  [read]  handle 0x0015  (read failed: Read Not Permitted (0x02) (handle 0x0015))"), "\(text)")
            #expect(bluetoothd.calls.last == "Disconnect ")
        }
    }

    @Test func readWriteAndSubscribe() async throws {
        try await withBluetoothd { bluetoothd, environment in
            let read = try await BlueProcess.run(["read", "--hci", "bluez", "Fake", characteristic], environment: environment)
            #expect(read.status == 0, "\(read.standardError)")
            #expect(read.standardOutput.contains("= 01 02 03"), "\(read.standardOutput)")

            let refusedRead = try await BlueProcess.run(["read", "--hci", "bluez", "Fake", refused], environment: environment)
            #expect(refusedRead.status == 1)
            #expect(refusedRead.standardError.contains("failed: Read Not Permitted (0x02)"), "\(refusedRead.standardError)")
            #expect(refusedRead.standardError.split(separator: "\n").count == 1, "\(refusedRead.standardError)")

            let write = try await BlueProcess.run(["write", "--hci", "bluez", "Fake", characteristic, "0a0b"], environment: environment)
            #expect(write.status == 0, "\(write.standardError)")
            #expect(bluetoothd.calls.contains(#"WriteValue [10, 11] ["type": <"request">]"#), "\(bluetoothd.calls)")
            #expect(bluetoothd.value(of: 0x0011) == [10, 11])

            let command = try await BlueProcess.run(["write", "--hci", "bluez", "--without-response", "Fake", characteristic, "0c"],
                                                    environment: environment)
            #expect(command.status == 0, "\(command.standardError)")
            #expect(bluetoothd.calls.contains(#"WriteValue [12] ["type": <"command">]"#), "\(bluetoothd.calls)")

            let subscribe = try await BlueProcess.run(["subscribe", "--hci", "bluez", "Fake", characteristic, "--count", "3", "--json"],
                                                      environment: environment)
            #expect(subscribe.status == 0, "\(subscribe.standardError)")
            let values = subscribe.standardOutput.split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["hex"] as? String
            }
            #expect(values == ["09", "0a", "0b"], "\(subscribe.standardOutput)")
            #expect(bluetoothd.calls.contains("StartNotify "))
        }
    }

    @Test func optionsBluetoothdDecidesAreOneLineErrors() async throws {
        let serve = try await BlueProcess.run(["serve", "--hci", "bluez", "--profile", "heart-rate", "--io", "display-only"],
                                              limit: .seconds(30))
        #expect(serve.status == 64)
        #expect(serve.standardError.contains("--io: through bluetoothd (--hci bluez) pairing is answered by its default agent"),
                "\(serve.standardError)")
        #expect(serve.standardError.split(separator: "\n").count == 1)
        let snoop = try await BlueProcess.run(["scan", "--hci", "bluez", "--snoop", "/tmp/x.btsnoop", "--timeout", "1"], limit: .seconds(30))
        #expect(snoop.status == 64)
        #expect(snoop.standardError.contains("btmon"), "\(snoop.standardError)")
    }

    @Test func noBluetoothdIsOneLineAndExit69() async throws {
        let folder = testTemporaryPath("ocb-nobus-\(UUID().uuidString.prefix(8))")
        let result = try await BlueProcess.run(["read", "--hci", "bluez", "Fake", characteristic],
                                               environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(folder)/none"], limit: .seconds(60))
        #expect(result.status == 69)
        #expect(result.standardError.split(separator: "\n").count == 1, "\(result.standardError)")
        #expect(result.standardError.contains("no BlueZ backend"), "\(result.standardError)")
    }

    @Test func pairAnswersBluetoothdThroughOurAgent() async throws {
        try await withBluetoothd { bluetoothd, environment in
            let first = try await BlueProcess.run(["pair", "--hci", "bluez", "Fake", "--method", "numeric"], environment: environment)
            #expect(first.status == 0, "\(first.standardError)")
            #expect(first.standardOutput.contains("Numeric comparison: 123456 (confirmed)"), "\(first.standardOutput)")
            // bluetoothd tells the method by its prompts and keeps the keys: no key size, no key names.
            #expect(first.standardOutput.contains("Paired with Fake: Numeric Comparison, LE Secure Connections, authenticated\n"),
                    "\(first.standardOutput)")
            #expect(first.standardOutput.contains("  keys: kept by the stack's engine, not told\n  encrypted: yes\n  bonded: yes"),
                    "\(first.standardOutput)")
            #expect(bluetoothd.calls.contains { $0.hasPrefix("RegisterAgent") && $0.contains("DisplayYesNo") }, "\(bluetoothd.calls)")
            #expect(bluetoothd.calls.contains { $0.hasPrefix("UnregisterAgent") }, "\(bluetoothd.calls)")

            let again = try await BlueProcess.run(["pair", "--hci", "bluez", "Fake", "--json"], environment: environment)
            #expect(again.status == 0, "\(again.standardError)")
            #expect(again.standardOutput.contains(#""usedExistingBond":true"#), "\(again.standardOutput)")

            let repaired = try await BlueProcess.run(["pair", "--hci", "bluez", "Fake", "--repair", "--method", "passkey", "--io", "keyboard-only",
                                                      "--passkey", "654321"], environment: environment)
            #expect(repaired.status == 0, "\(repaired.standardError)")
            #expect(repaired.standardOutput.contains("Paired with Fake: Passkey Entry"), "\(repaired.standardOutput)")
            #expect(repaired.standardOutput.contains("  bonded: yes"), "\(repaired.standardOutput)")
            #expect(bluetoothd.calls.contains { $0.hasPrefix("RegisterAgent") && $0.contains("KeyboardOnly") }, "\(bluetoothd.calls)")
            #expect(bluetoothd.calls.contains { $0.hasPrefix("RemoveDevice") }, "\(bluetoothd.calls)")
        }
    }

    @Test func aWrongPasskeyFailsInOneLine() async throws {
        try await withBluetoothd { _, environment in
            let result = try await BlueProcess.run(["pair", "--hci", "bluez", "Fake", "--method", "passkey", "--io", "keyboard-only",
                                                    "--passkey", "111111"], environment: environment)
            #expect(result.status == 1)
            #expect(result.standardError.contains("pairing with Fake failed: authentication failed"), "\(result.standardError)")
            #expect(result.standardError.split(separator: "\n").count == 1, "\(result.standardError)")
        }
    }

    @Test func pairOptionsBluetoothdDecidesAreRefused() async throws {
        let legacy = try await BlueProcess.run(["pair", "--hci", "bluez", "Fake", "--method", "legacy-jw"], limit: .seconds(30))
        #expect(legacy.status == 64)
        #expect(legacy.standardError.contains("bluetoothd chooses LE Secure Connections or legacy pairing"), "\(legacy.standardError)")
        let bonds = try await BlueProcess.run(["pair", "--hci", "bluez", "Fake", "--bonds", "/tmp/nowhere"], limit: .seconds(30))
        #expect(bonds.status == 64)
        #expect(bonds.standardError.contains("--bonds: bluetoothd keeps the bonds"), "\(bonds.standardError)")
    }

    @Test func serveThroughBluetoothdAnswersItsCalls() async throws {
        try await withBluetoothd { bluetoothd, environment in
            let serve = try BackgroundBlue(["serve", "--hci", "bluez", "--profile", "heart-rate"], environment: environment)
            defer { serve.stopInBackground() }
            #expect(await serve.waitFor("serving \"blue heart rate\" on bluetoothd", limit: .seconds(60)), "\(serve.errors)")
            #expect(bluetoothd.isServing)
            bluetoothd.centralConnects()
            #expect(await serve.waitFor("connected: \(FakeBluetoothd.deviceAddress)"), "\(serve.output)")

            let location = try #require(try await bluetoothd.applicationCharacteristic("00002a38-0000-1000-8000-00805f9b34fb"))
            let read = try await bluetoothd.callApplication(location, "ReadValue", [FakeBluetoothd.options()])
            #expect(read.body.first?.bytesValue == [1])
            #expect(await serve.waitFor("read 2A38 Body Sensor Location by \(FakeBluetoothd.deviceAddress): 01"), "\(serve.output)")
            // A read beyond the value is the ATT error bluetoothd passes on (Invalid Offset).
            await #expect(throws: (any Error).self) {
                _ = try await bluetoothd.callApplication(location, "ReadValue", [FakeBluetoothd.options(["offset": .uint16(5)])])
            }

            let controlPoint = try #require(try await bluetoothd.applicationCharacteristic("00002a39-0000-1000-8000-00805f9b34fb"))
            _ = try await bluetoothd.callApplication(controlPoint, "WriteValue", [.bytes([1]), FakeBluetoothd.options(["type": .string("request")])])
            #expect(await serve.waitFor("write 2A39 Heart Rate Control Point by \(FakeBluetoothd.deviceAddress): 01"), "\(serve.output)")
            // Longer than the control point's one octet: Invalid Attribute Value Length, nothing printed.
            await #expect(throws: (any Error).self) {
                _ = try await bluetoothd.callApplication(controlPoint, "WriteValue", [.bytes([1, 2]), FakeBluetoothd.options()])
            }

            // The measurement offers NotifyAcquired: bluetoothd takes a socket and reads each notification from it.
            let measurement = try #require(try await bluetoothd.applicationCharacteristic("00002a37-0000-1000-8000-00805f9b34fb"))
            let objects = try await bluetoothd.applicationObjects()
            #expect(objects[measurement]?["org.bluez.GattCharacteristic1"]?["NotifyAcquired"]?.boolValue == false)
            let acquired = try await bluetoothd.acquireNotify(measurement)
            defer { close(acquired.fd) }
            #expect(acquired.mtu == Int(FakeBluetoothd.mtu))
            #expect(await serve.waitFor("subscribe 2A37 Heart Rate Measurement by \(FakeBluetoothd.deviceAddress)"), "\(serve.output)")
            var values: [[UInt8]] = []
            let notified = await poll(within: .seconds(60)) {
                var buffer = [UInt8](repeating: 0, count: 512)
                let count = recv(acquired.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if count > 0 { values.append(Array(buffer[..<count])) }
                return values.count >= 2
            }
            #expect(notified, "\(values)")
            #expect(values.allSatisfy { $0.count >= 2 && $0[0] & 0x01 == 0 }, "\(values)")

            // Without the socket (StartNotify, older bluetoothd): the Value's PropertiesChanged signals.
            let battery = try #require(try await bluetoothd.applicationCharacteristic("00002a19-0000-1000-8000-00805f9b34fb"))
            try await bluetoothd.watchApplicationSignals()
            _ = try await bluetoothd.callApplication(battery, "StartNotify", [])
            #expect(await serve.waitFor("subscribe 2A19 Battery Level by \(FakeBluetoothd.deviceAddress)"), "\(serve.output)")

            let (status, byItself) = await serve.stop()
            #expect(status == 0 && byItself, "\(serve.errors)")
            #expect(serve.output.contains("stopping"))
            #expect(!serve.output.contains("write 2A39 Heart Rate Control Point by \(FakeBluetoothd.deviceAddress): 01 02"))
        }
    }

    @Test func bondsListsAndRemovesBluetoothdsBonds() async throws {
        try await withBluetoothd(pairedAtStart: true) { bluetoothd, environment in
            let list = try await BlueProcess.run(["bonds", "list", "--hci", "bluez", "--json"], environment: environment)
            #expect(list.status == 0, "\(list.standardError)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(list.standardOutput.utf8)) as? [String: Any])
            let bonds = try #require(object["bonds"] as? [[String: Any]])
            #expect(bonds.count == 1)
            #expect(bonds.first?["address"] as? String == FakeBluetoothd.deviceAddress)
            #expect(bonds.first?["name"] as? String == "Fake")

            let unknown = try await BlueProcess.run(["bonds", "remove", "--hci", "bluez", "0A:1B:00:00:00:99"], environment: environment)
            #expect(unknown.status == 2)
            #expect(unknown.standardError.contains("bluetoothd has no device paired with 0A:1B:00:00:00:99"), "\(unknown.standardError)")

            let removed = try await BlueProcess.run(["bonds", "remove", "--hci", "bluez", FakeBluetoothd.deviceAddress], environment: environment)
            #expect(removed.status == 0, "\(removed.standardError)")
            #expect(removed.standardOutput.contains("Removed the bond with \(FakeBluetoothd.deviceAddress) (bluetoothd (its first adapter))"),
                    "\(removed.standardOutput)")
            #expect(bluetoothd.calls.contains { $0.hasPrefix("RemoveDevice") }, "\(bluetoothd.calls)")
        }
        // Every other transport is our host, whose bonds are the bond folder (here an empty one).
        let data = testTemporaryPath("ocb-bonds-\(UUID().uuidString.prefix(8))")
        let ours = try await BlueProcess.run(["bonds", "list", "--hci", "hci0"], environment: ["XDG_DATA_HOME": data], limit: .seconds(30))
        #expect(ours.status == 0, "\(ours.standardError)")
        #expect(ours.standardOutput == "No bonds in \(data)/opencorebluetooth/bonds\n", "\(ours.standardOutput)")
        let both = try await BlueProcess.run(["bonds", "list", "--hci", "bluez", "--directory", data], limit: .seconds(30))
        #expect(both.status == 64)
        #expect(both.standardError.contains("bluetoothd keeps its bonds itself"), "\(both.standardError)")
        #expect(both.standardError.split(separator: "\n").count == 1, "\(both.standardError)")
    }

    @Test func shellThroughBluetoothdConnectsReadsAndRefusesLinkChanges() async throws {
        try await withBluetoothd { bluetoothd, environment in
            let script = "connect Fake 10\nexplore\nread \(characteristic)\nlink\nmtu\n"
            let session = try await BlueProcess.run(["shell", "--hci", "bluez:hci0"], input: script, environment: environment)
            #expect(session.status == 0, "\(session.standardError)")
            let text = session.standardOutput
            #expect(text.contains("connected to Fake"), "\(text)")
            #expect(text.contains("\(characteristic)  [read, write-without-response, write, notify]  handle 0x0012  = 01 02 03"), "\(text)")
            #expect(text.contains("ATT MTU 185, RSSI -50 dBm (bluetoothd does not tell the rest)"), "\(text)")
            #expect(text.contains("ATT MTU 185 (exchanged at connection"), "\(text)")
            #expect(bluetoothd.calls.contains("ReadValue [\"offset\": <0>]") || bluetoothd.calls.contains { $0.hasPrefix("ReadValue") })
            #expect(bluetoothd.calls.last == "Disconnect ")

            // What bluetoothd decides itself: the engine's one line, naming the script's line, exit 64.
            let phy = try await BlueProcess.run(["shell", "--hci", "bluez:hci0"], input: "connect Fake 10\nphy 2M\n", environment: environment)
            #expect(phy.status == 64, "\(phy.standardError)")
            #expect(phy.standardError.contains("line 2 (phy 2M): through bluetoothd the PHY is the kernel's to choose"), "\(phy.standardError)")
            #expect(phy.standardError.split(separator: "\n").count == 1, "\(phy.standardError)")
        }
    }

    @Test func advertiseThroughBluetoothdIsTheEnginesOneLine() async throws {
        try await withBluetoothd { _, environment in
            let result = try await BlueProcess.run(["advertise", "--hci", "bluez", "--name", "Beacon", "--timeout", "1"],
                                                   environment: environment)
            #expect(result.status == 64, "\(result.standardError)")
            #expect(result.standardError.contains("cannot advertise: through bluetoothd an advertisement carries a name, service UUIDs and manufacturer data, connectable"),
                    "\(result.standardError)")
            #expect(result.standardError.split(separator: "\n").count == 1, "\(result.standardError)")
        }
    }

    @Test func passiveScanThroughBluetoothdIsTheEnginesOneLine() async throws {
        try await withBluetoothd { bluetoothd, environment in
            let result = try await BlueProcess.run(["scan", "--hci", "bluez", "--passive", "--timeout", "1"], environment: environment)
            #expect(result.status == 64, "\(result.standardError)")
            #expect(result.standardError.contains("cannot scan: through bluetoothd passive scanning cannot be asked"), "\(result.standardError)")
            #expect(result.standardError.split(separator: "\n").count == 1, "\(result.standardError)")
            #expect(!bluetoothd.calls.contains("StartDiscovery "))
        }
    }
}
