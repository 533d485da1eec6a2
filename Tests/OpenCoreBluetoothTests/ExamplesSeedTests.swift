import Foundation
import Testing

/// The seed programs of Examples/ (issue 5 item 2), run as separate processes meeting on a `blue air` hub.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ExamplesSeedTests {
    @Test("seed 002: the peripheral's long text reaches the central intact, in chunks, ended by EOM")
    func seed002MovesALongText() async throws {
        let hub = try await ExampleHub()
        let text = exampleText(bytes: 12_000)
        let peripheral = try ExampleProcess("Seed002Peripheral", ["--timeout", "25", text], environment: hub.environment)
        defer { peripheral.stopInBackground() }
        let central = try ExampleProcess("Seed002Central", ["--timeout", "25"], environment: hub.environment)
        defer { central.stopInBackground() }
        let centralStatus = await central.waitForExit(limit: .seconds(28))
        let peripheralStatus = await peripheral.waitForExit(limit: .seconds(5))
        #expect(centralStatus == 0, "central: \(central.errors)")
        #expect(peripheralStatus == 0, "peripheral: \(peripheral.errors)")
        #expect(central.outputData.count == text.utf8.count)
        #expect(exampleHash(central.outputData) == exampleHash(Data(text.utf8)))
        #expect(central.output == text)
        #expect(central.errors.contains("Received \(text.utf8.count) bytes and EOM"))
        #expect(peripheral.errors.contains("Sent: EOM"))
        #expect(peripheral.errors.contains("Central unsubscribed from characteristic"))
    }

    /// Issue 32 item 8: seed 002 as the tutorial wrote it. The peripheral's early startAdvertising is refused as
    /// on iOS (API MISUSE), 20-octet chunks whatever the ATT_MTU, the central unsubscribes and disconnects at once
    /// on "EOM", scans again, and is served a second time.
    @Test("seed 002 as the tutorial wrote it: 20-octet chunks, unsubscribe and disconnect at once, scan again, twice")
    func seed002TutorialTransfersTwice() async throws {
        let hub = try await ExampleHub()
        let text = exampleText(bytes: 3_000)
        let peripheral = try ExampleProcess("Seed002TutorialPeripheral", ["--transfers", "2", "--timeout", "40", text], environment: hub.environment)
        defer { peripheral.stopInBackground() }
        let central = try ExampleProcess("Seed002TutorialCentral", ["--transfers", "2", "--timeout", "40"], environment: hub.environment)
        defer { central.stopInBackground() }
        let centralStatus = await central.waitForExit(limit: .seconds(45))
        let peripheralStatus = await peripheral.waitForExit(limit: .seconds(10))
        #expect(centralStatus == 0, "central: \(central.errors)")
        #expect(peripheralStatus == 0, "peripheral: \(peripheral.errors)")
        let bytes = text.utf8.count
        #expect(central.output == "--- transfer 1 (\(bytes) bytes)\n\(text)\n--- transfer 2 (\(bytes) bytes)\n\(text)\n")
        // Two connections (the second after scanning again), each ended by the central.
        #expect(central.errors.components(separatedBy: "[Seed002TutorialCentral] Connected\n").count - 1 == 2, "\(central.errors)")
        #expect(central.errors.components(separatedBy: "[Seed002TutorialCentral] Disconnected\n").count - 1 == 2)
        // NOTIFY_MTU: 20 octets a chunk, whatever the ATT_MTU; "EOM" after each text.
        let sent = peripheral.errors.components(separatedBy: "\n").filter { $0.hasPrefix("[Seed002TutorialPeripheral] Sent: ") }
        #expect(sent.count == 2 * ((bytes + 19) / 20 + 1), "\(sent.count) lines sent")
        #expect(sent.filter { $0 == "[Seed002TutorialPeripheral] Sent: EOM" }.count == 2)
        #expect(peripheral.errors.contains("API MISUSE: <CBPeripheralManager: "), "\(peripheral.errors)")
        #expect(peripheral.errors.contains("can only accept this command while in the powered on state"))
    }

    @Test("seed 002: the central alone times out with exit 1 and says what it was waiting for")
    func seed002CentralTimesOut() async throws {
        let hub = try await ExampleHub()
        let central = try ExampleProcess("Seed002Central", ["--timeout", "1"], environment: hub.environment)
        defer { central.stopInBackground() }
        #expect(await central.waitForExit(limit: .seconds(10)) == 1)
        #expect(central.errors.contains("Seed002Central: timed out after 1.0 s: no peripheral advertising the transfer service"))
    }

    @Test("seed 003: scan all with an RSSI list, connect, discover all, read, subscribe, write text, get the notification")
    func seed003CentralFlow() async throws {
        let hub = try await ExampleHub()
        let peripheral = try ExampleProcess("ChatPeripheral", ["--name", "Chat3", "--once", "--timeout", "25"], environment: hub.environment)
        defer { peripheral.stopInBackground() }
        #expect(await peripheral.waitFor("ready"))
        let central = try ExampleProcess("Seed003Central", ["--name", "Chat3", "--timeout", "25"], environment: hub.environment)
        defer { central.stopInBackground() }
        let status = await central.waitForExit(limit: .seconds(28))
        #expect(status == 0, "central: \(central.output) \(central.errors)")
        let out = central.output
        #expect(out.contains("RSSI list:"))
        #expect(out.contains(" dBm  Chat3  "))
        #expect(out.contains("Connected to Chat3"))
        #expect(out.contains("Discovered service E20A39F4-73F5-4BC4-A12F-17D1AD07A961"))
        // read 0x02 | write without response 0x04 | write 0x08 | notify 0x10
        #expect(out.contains("Discovered characteristic 08590F7E-DB05-467E-8757-72F6FAEB13D4 properties 0x1e"))
        #expect(out.contains("Value of C0DE0001-7E57-4C0D-9000-00000000CAFE: Hello from Chat3"))
        #expect(out.contains("Wrote \"Xin chào, Bluetooth!\" to 08590F7E-DB05-467E-8757-72F6FAEB13D4"))
        #expect(out.contains("Notification received: echo: Xin chào, Bluetooth!"))
        #expect(await peripheral.waitForExit(limit: .seconds(5)) == 0)
        #expect(peripheral.errors.contains("Received: Xin chào, Bluetooth!"))
    }

    @Test("seed 004: list named devices with RSSI, connect, classify property bits, write UTF-8, receive the reply")
    func seed004CentralFlow() async throws {
        let hub = try await ExampleHub()
        let peripheral = try ExampleProcess("ChatPeripheral", ["--name", "Chat4", "--once", "--timeout", "25"], environment: hub.environment)
        defer { peripheral.stopInBackground() }
        #expect(await peripheral.waitFor("ready"))
        let central = try ExampleProcess("Seed004Central", ["--name", "Chat4", "--timeout", "25"], environment: hub.environment)
        defer { central.stopInBackground() }
        let status = await central.waitForExit(limit: .seconds(28))
        #expect(status == 0, "central: \(central.output) \(central.errors)")
        let out = central.output
        #expect(out.contains("CBCentralManager state: poweredOn"))
        #expect(out.contains("peripheral.name = Chat4"))
        #expect(out.contains("RSSI = -"))
        #expect(out.contains("鏈接成功=====>Chat4"))
        #expect(out.contains("服務的UUID E20A39F4-73F5-4BC4-A12F-17D1AD07A961"))
        // The combined properties (0x1e) go to `default`, whose bit test finds the write property.
        #expect(out.contains("characteristic.properties --> 30"))
        #expect(out.contains("characteristic ===> default --test-- write"))
        // The read-only greeting matches the `.read` case exactly.
        #expect(out.contains("characteristic ===> read"))
        #expect(out.contains("寫入測試數據 ==> ~測試數據 hello"))
        #expect(out.contains("Received: echo: ~測試數據 hello"))
        #expect(await peripheral.waitForExit(limit: .seconds(5)) == 0)
    }

    /// The Android chat server of seed 004's subject (Examples/Definitions/android-chat.json).
    static var androidChatDefinition: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Examples/Definitions/android-chat.json").path
    }

    @Test("seed 004 against an Android phone: blue serve --personality android answers the CCCD write as the app, echoes the text")
    func seed004CentralAgainstAndroid() async throws {
        let hub = try await ExampleHub()
        let server = try ExampleProcess("blue", ["serve", "--hci", "air:\(hub.socket)", "--personality", "android", "--name", "Chat4A",
                                                  Self.androidChatDefinition])
        defer { server.stopInBackground() }
        #expect(await server.waitFor("serving \"Chat4A\" as android (GAP name \"Pixel 8\")", limit: .seconds(30)), "\(server.output) \(server.errors)")
        let central = try ExampleProcess("Seed004Central", ["--name", "Chat4A", "--timeout", "25"], environment: hub.environment)
        defer { central.stopInBackground() }
        let status = await central.waitForExit(limit: .seconds(28))
        #expect(status == 0, "central: \(central.output) \(central.errors)")
        let out = central.output
        #expect(out.contains("peripheral.name = Chat4A"))
        #expect(out.contains("characteristic ===> default --test-- write"))
        #expect(out.contains("characteristic ===> read"))
        #expect(out.contains("Received: echo: ~測試數據 hello"))
        // The Android side: the app answered the central's 2902 write (the CCCD it added itself), then the write.
        #expect(await server.waitFor("write 08590F7E-DB05-467E-8757-72F6FAEB13D4 by "), "\(server.output)")
        let served = server.output
        #expect(served.contains("write 2902 of 08590F7E-DB05-467E-8757-72F6FAEB13D4 by "), "\(served)")
        #expect(served.contains("01 00 (the app answers: success)"), "\(served)")
        #expect(served.contains("subscribe 08590F7E-DB05-467E-8757-72F6FAEB13D4 by "), "\(served)")
        #expect(served.contains("(\"~測試數據 hello\")"), "\(served)")
        #expect(!server.errors.contains("warning"), "\(server.errors)")
    }
}
