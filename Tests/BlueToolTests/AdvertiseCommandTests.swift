import AdvertisingData
import BluetoothCore
import Foundation
import TestSupport
import Testing

/// `blue advertise` (issue 14 item 5): beacons and arbitrary data from the command line, heard by `blue scan` on a
/// hub of the test's own and decoded back with the decoders the spec vectors check (IBeacon, EddystoneFrame); what
/// cannot be sent is one line and exit 64 before any stack is opened.
@Suite(.serialized) struct AdvertiseCommandTests {
    /// A hub, an advertiser with `arguments`, and one scan report of it (matched by `filter`).
    private func heard(_ arguments: [String], filter: [String]) async throws -> [String: Any]? {
        let tag = UUID().uuidString.prefix(6).lowercased()
        let socket = testTemporaryPath("ocb-adv-\(tag).sock")
        let hub = try BackgroundBlue(["air", "--socket", socket, "--stats-interval", "0"])
        defer { hub.stopInBackground() }
        guard await hub.waitFor("listening") else { throw AdvertiseError.notReady("hub: \(hub.errors)") }
        let advertiser = try BackgroundBlue(["advertise", "--hci", "air:\(socket)"] + arguments)
        defer { advertiser.stopInBackground() }
        guard await advertiser.waitFor("Advertising as ") else { throw AdvertiseError.notReady("advertise: \(advertiser.errors)") }
        let scan = try await BlueProcess.run(["scan", "--hci", "air:\(socket)", "--timeout", "3", "--json", "--duplicates"] + filter)
        #expect(scan.status == 0, "\(scan.standardError)")
        let reports = scan.standardOutput.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let stopped = await advertiser.stop()
        #expect(stopped.status == 0 && stopped.clean, "advertise must end with exit 0 on SIGTERM")
        await hub.stop()
        return reports.last
    }

    enum AdvertiseError: Error { case notReady(String) }

    @Test func anIBeaconIsHeardAndDecodes() async throws {
        let uuid = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"
        let report = try await heard(["--ibeacon", "\(uuid),513,7", "--measured-power", "-65"], filter: ["--manufacturer", "0x004C"])
        let manufacturer = try #require(report?["manufacturer"] as? [String: Any])
        let beacon = try IBeacon(manufacturerData: try Hex.decode(try #require(manufacturer["data"] as? String)))
        #expect(beacon == IBeacon(proximityUUID: try BluetoothUUID(string: uuid), major: 513, minor: 7, measuredPower: -65))
        #expect(report?["connectable"] as? Bool == false)
    }

    @Test func eddystoneURLAndTelemetryAreHeardAndDecode() async throws {
        let url = try await heard(["--eddystone-url", "https://example.com/a", "--name", "beacon"], filter: ["--name", "beacon"])
        let urlData = try Hex.decode(try #require((url?["serviceData"] as? [String: String])?["FEAA"]))
        guard case .url(let frame) = try EddystoneFrame(serviceData: urlData) else { Issue.record("not a URL frame"); return }
        #expect(frame.url == "https://example.com/a" && frame.txPower == -20)

        // TLM's counts move while it runs: the last report heard is a later frame than the first sent.
        let telemetry = try await heard(["--eddystone-tlm", "3100,21.5"], filter: ["--service", "FEAA"])
        let tlmData = try Hex.decode(try #require((telemetry?["serviceData"] as? [String: String])?["FEAA"]))
        guard case .tlm(.plain(let plain)) = try EddystoneFrame(serviceData: tlmData) else { Issue.record("not a TLM frame"); return }
        #expect(plain.batteryMillivolts == 3100 && plain.temperatureCelsius == 21.5)
        #expect(plain.uptimeDeciseconds >= 10 && plain.advertisementCount > 0, "\(plain)")
    }

    /// `blue serve`'s definition carries advertising data too (issue 14 item 5, JSON part).
    @Test func aServedDefinitionAdvertisesItsData() async throws {
        let tag = UUID().uuidString.prefix(6).lowercased()
        let socket = testTemporaryPath("ocb-adv-\(tag).sock")
        let path = testTemporaryPath("adv-\(tag).json")
        try """
            {"name": "adv-\(tag)", "services": [{"uuid": "180F", "characteristics": [{"uuid": "2A19", "properties": ["read"]}]}],
             "advertisingData": {"manufacturer": {"company": 65535, "hex": "0102"}, "serviceData": [{"uuid": "180F", "hex": "32"}],
                                 "txPower": -4}}
            """.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let hub = try BackgroundBlue(["air", "--socket", socket, "--stats-interval", "0"])
        defer { hub.stopInBackground() }
        guard await hub.waitFor("listening") else { throw AdvertiseError.notReady("hub: \(hub.errors)") }
        let server = try BackgroundBlue(["serve", path, "--hci", "air:\(socket)"])
        defer { server.stopInBackground() }
        guard await server.waitFor("serving") else { throw AdvertiseError.notReady("serve: \(server.errors)") }
        let scan = try await BlueProcess.run(["scan", "--hci", "air:\(socket)", "--timeout", "3", "--json", "--name", "adv-\(tag)"])
        let report = scan.standardOutput.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.last
        #expect((report?["manufacturer"] as? [String: Any])?["data"] as? String == "0102", "\(scan.standardOutput)")
        #expect((report?["manufacturer"] as? [String: Any])?["company"] as? Int == 65535)
        #expect(report?["serviceData"] as? [String: String] == ["180F": "32"])
        #expect(report?["txPower"] as? Int == -4)
        _ = await server.stop()
        await hub.stop()
    }

    @Test func whatCannotBeSentIsOneLine() async throws {
        for (arguments, message) in [
            ([String](), "error: nothing to advertise: give --name, --service, --service-data, --manufacturer or a beacon\n"),
            (["--manufacturer", "0xFFFF:" + String(repeating: "aa", count: 30)],
             "error: the advertising data takes 37 octets; legacy advertising carries 31 (drop a --service, --service-data or --manufacturer)\n"),
            (["--ibeacon", "180D,1,2"], "error: --ibeacon 180D,1,2: expected UUID,MAJOR,MINOR (a 128-bit UUID, 0-65535 twice)\n"),
            (["--eddystone-uid", "00,11"], "error: --eddystone-uid 00,11: expected NAMESPACE,INSTANCE (20 and 12 hex digits)\n"),
            (["--eddystone-url", "https://example.com/a", "--ibeacon", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0,1,2"],
             "error: one beacon frame at a time (--ibeacon, --eddystone-uid, --eddystone-url or --eddystone-tlm)\n"),
            (["--service-data", "180F"], "error: --service-data 180F: expected UUID:HEX\n"),
        ] {
            let result = try await BlueProcess.run(["advertise", "--hci", "air:/nonexistent/air.sock"] + arguments)
            #expect(result.status == 64 && result.standardError == message, "\(arguments): \(result.standardError)")
        }
    }
}
