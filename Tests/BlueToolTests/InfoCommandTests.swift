import BlueZTestSupport
import Foundation
import TestSupport
import Testing

/// `blue info` (issue 29 item 5): what a controller says of itself, asked of our virtual controller (whose answers
/// are known: Core 5.4, 8 LE buffers of 251 octets, 16 sets and list entries, LL Privacy), in text and JSON, every
/// supported command named; on bluetoothd, the adapter's properties. Bumble's controller: Interop/test_info_bumble_controller.py.
@Suite(.timeLimit(.minutes(2)))
struct InfoCommandTests {
    @Test func ourVirtualControllerDescribedInText() async throws {
        let result = try await BlueProcess.run(["info", "--hci", "in-process"])
        #expect(result.status == 0, "\(result.standardError)")
        let text = result.standardOutput
        for line in ["Version       Bluetooth Core 5.4 (HCI 0x0D revision 0x01, LMP 0x0D subversion 0x01)",
                     "LE buffers    8 × 251 octets (ACL)", "Data length   up to 251 octets / 2120 µs sent, 251 / 2120 µs received",
                     "Advertising   extended commands, 16 sets, data up to 1650 octets", "Lists         filter accept list 16, resolving list 16",
                     "LE states     0x3FFFFFFFFFF (42 state and role combinations)", "Commands      68 supported (--commands lists them)"] {
            #expect(text.contains(line), "\(line) not in:\n\(text)")
        }
        #expect(text.contains("LE features   LE Encryption, Extended Reject Indication"), "\(text)")
    }

    @Test func jsonNamesEveryCommandItKnows() async throws {
        let result = try await BlueProcess.run(["info", "--hci", "in-process", "--json", "--commands"])
        #expect(result.status == 0, "\(result.standardError)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        let commands = try #require(object["supportedCommands"] as? [String])
        #expect(commands.count == 68 && object["supportedCommandCount"] as? Int == 68)
        #expect(commands.contains("LE Set Extended Advertising Enable") && commands.contains("Reset"), "\(commands)")
        #expect((object["version"] as? [String: Any])?["name"] as? String == "Bluetooth Core 5.4")
        #expect(object["advertisingSets"] as? Int == 16 && object["resolvingListSize"] as? Int == 16)
        #expect((object["leFeatures"] as? [[String: Any]])?.contains { $0["name"] as? String == "LE Coded PHY" } == true)
        #expect(result.standardOutput.split(separator: "\n").count == 1)
    }

    @Test func bluetoothdShowsTheAdaptersProperties() async throws {
        let ran = try await FakeBluetoothd.run { _, bus in
            let result = try await BlueProcess.run(["info", "--hci", "bluez"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.standardOutput.contains("Address       00:AA:01:00:00:23"), "\(result.standardOutput)")
            #expect(result.standardOutput.contains("Powered       yes"), "\(result.standardOutput)")
        }
        if !ran, TestDBusDaemon.required { Issue.record("OCB_REQUIRE_INTEROP=1 but dbus-daemon is not installed") }
    }
}
