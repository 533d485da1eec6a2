import BluetoothCore
import Foundation
import TestSupport
import Testing

/// `blue serve --extended --advertising-phy` and `blue scan`'s extended fields (issue 15 item 1): a server on the
/// shared air advertising in extended PDUs on LE 2M is listed by `blue scan --json` as not legacy, LE 1M then LE 2M;
/// bad values are one line and exit 64.
@Suite(.serialized) struct ServeExtendedAdvertisingTests {
    @Test func scanShowsAServersExtendedAdvertisingAndItsPHYs() async throws {
        let tag = UUID().uuidString.prefix(6).lowercased()
        let socket = testTemporaryPath("ocb-ext-\(tag).sock")
        let hub = try BackgroundBlue(["air", "--socket", socket, "--stats-interval", "0"])
        defer { hub.stopInBackground() }
        #expect(await hub.waitFor("listening"), "hub: \(hub.errors)")
        let name = "ext-\(tag)"
        let server = try BackgroundBlue(["serve", "--profile", "battery", "--name", name, "--extended", "--advertising-phy", "2m",
                                         "--hci", "air:\(socket)", "--json"])
        defer { server.stopInBackground() }
        #expect(await server.waitFor("serving"), "serve: \(server.output) \(server.errors)")
        let scan = try await BlueProcess.run(["scan", "--hci", "air:\(socket)", "--timeout", "3", "--json", "--name", name])
        let heard = scan.standardOutput.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.last
        #expect(heard?["legacy"] as? Bool == false, "\(scan.standardOutput)")
        #expect(heard?["primaryPHY"] as? String == "1M" && heard?["secondaryPHY"] as? String == "2M", "\(scan.standardOutput)")
        #expect(heard?["connectable"] as? Bool == true)
        let table = try await BlueProcess.run(["scan", "--hci", "air:\(socket)", "--timeout", "2", "--name", name])
        #expect(table.standardOutput.contains("ext 1M/2M"), "\(table.standardOutput)")
        let stopped = await server.stop()
        #expect(stopped.status == 0)
    }

    @Test func badAdvertisingOptionsAreUsageErrors() async throws {
        let phy = try await BlueProcess.run(["serve", "--profile", "battery", "--advertising-phy", "3m"])
        #expect(phy.status == 64 && phy.standardError.contains("--advertising-phy 3m: give 1M, 2M or coded"), "\(phy.standardError)")
        let bluez = try await BlueProcess.run(["serve", "--profile", "battery", "--extended", "--hci", "bluez"])
        #expect(bluez.status == 64 && bluez.standardError.contains("--extended, --advertising-phy: through bluetoothd"), "\(bluez.standardError)")
    }
}
