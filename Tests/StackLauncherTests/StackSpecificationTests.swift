import HCITransport
import BlueZ
import StackLauncher
import Testing

/// The one reading of a stack's name (`--hci`, `OCB_HCI`, `BluetoothStack.open`): our host's transports as
/// HCITransportSpec reads them, bluetoothd's stack by `bluez[:hciN]`, white space ignored, one-line refusals.
@Suite struct StackSpecificationTests {
    @Test func hostTransportsAreHCITransportSpecs() throws {
        #expect(try StackSpecification(parsing: "virtual") == .host(.virtual))
        #expect(try StackSpecification(parsing: " virtual-hub ") == .host(.virtual))
        #expect(try StackSpecification(parsing: "in-process") == .host(.inProcess))
        #expect(try StackSpecification(parsing: "air:/run/x.sock") == .host(.air(path: "/run/x.sock")))
        #expect(try StackSpecification(parsing: "tcp:127.0.0.1:9000") == .host(.tcp(host: "127.0.0.1", port: 9000)))
        #expect(try StackSpecification(parsing: "hci1") == .host(.userChannel(deviceIndex: 1)))
        for text in ["virtual", "in-process", "air:/x", "unix:/y", "tcp:h:1", "serial:/dev/ttyS0,115200", "hci3", "bluez", "bluez:hci2"] {
            #expect(try StackSpecification(parsing: text).description == text)
        }
    }

    @Test func bluetoothdIsNamedWithItsAdapter() throws {
        #expect(try StackSpecification(parsing: "bluez") == .bluez(adapter: nil))
        #expect(try StackSpecification(parsing: " bluez:hci1") == .bluez(adapter: "hci1"))
        for text in ["bluez:", "bluez:usb0", "bluez:hci", "bluez:hci99999"] {
            #expect(throws: StackLaunchError.self, "\(text)") { try StackSpecification(parsing: text) }
            do {
                _ = try StackSpecification(parsing: text)
            } catch {
                #expect(error.code == .invalidSpecification)
                #expect(error.reason.contains("bluez:hciN") && !error.reason.contains("\n"), "\(error.reason)")
            }
        }
    }

    @Test func refusalsAreTheTransportParsersOneLine() {
        for text in ["", "   ", "wifi", "tcp:1", "air:"] {
            do {
                _ = try StackSpecification(parsing: text)
                Issue.record("\"\(text)\" was accepted")
            } catch {
                #expect(error.code == .invalidSpecification)
                #expect(!error.reason.isEmpty && !error.reason.contains("\n"), "\(error.reason)")
            }
        }
    }

    @Test func theAirHubSocketOfANameIsItsHub() throws {
        #expect(try StackSpecification(parsing: "virtual").airHubSocket(hubSocketPath: "/run/air.sock") == "/run/air.sock")
        #expect(try StackSpecification(parsing: "air:/tmp/a.sock").airHubSocket() == "/tmp/a.sock")
        #expect(try StackSpecification(parsing: "in-process").airHubSocket() == nil)
        #expect(try StackSpecification(parsing: "bluez").airHubSocket() == nil)
    }

    /// `open(_:)` opens our host only: bluetoothd's stack is refused before anything is opened, and so is anything
    /// only our host does when bluetoothd's stack is asked for (one line each, the limitation's).
    @Test func theLauncherRefusesBluetoothdWhereOnlyOurHostWillDo() async {
        do {
            _ = try await StackLauncher.open("bluez:hci0")
            Issue.record("bluez was opened")
        } catch {
            #expect(error.code == .notOffered)
            #expect(error.reason == BluetoothdLimitation.ourHost.message(hci: "bluez:hci0"))
        }
        var options = StackLaunchOptions()
        options.needingOurHost = [.privacy, .snoop]
        do {
            _ = try await StackLauncher.open(specification: .bluez(adapter: "hci0"), options: options)
            Issue.record("bluez was opened")
        } catch {
            #expect(error.code == .notOffered)
            #expect(error.reason == BluetoothdLimitation.privacy.message(hci: "bluez:hci0"))
        }
        options = StackLaunchOptions(snoopPath: "/nonexistent/x.btsnoop")
        do {
            _ = try await StackLauncher.open(specification: .bluez(adapter: nil), options: options)
            Issue.record("bluez was opened")
        } catch {
            #expect(error.reason == BluetoothdLimitation.snoop.message(hci: "bluez"))
        }
    }

    /// A program's name for its stack: its --hci, else OCB_HCI when set and not empty, else its own default.
    @Test func theChosenNameIsTheArgumentThenOCBHCIThenTheDefault() {
        #expect(StackSpecification.name(given: "hci1", environment: ["OCB_HCI": "bluez"], default: "virtual") == "hci1")
        #expect(StackSpecification.name(given: nil, environment: ["OCB_HCI": "bluez"], default: "virtual") == "bluez")
        #expect(StackSpecification.name(given: nil, environment: ["OCB_HCI": ""], default: "in-process") == "in-process")
        #expect(StackSpecification.name(given: nil, environment: [:], default: "virtual") == "virtual")
    }
}
