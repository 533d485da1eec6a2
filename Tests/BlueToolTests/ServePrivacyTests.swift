import BluetoothCore
import Foundation
import TestSupport
import Testing

/// `blue serve --privacy` (issue 15 item 4, host side): it advertises with a resolvable private address made from
/// its IRK, and a central that bonded with it recognises it there (`blue pair` with the same bonds encrypts with the
/// bond instead of pairing: it resolved the RPA to the identity it holds the bond of).
@Suite(.serialized) struct ServePrivacyTests {
    @Test func servesWithAnRPAThatABondedCentralRecognises() async throws {
        let tag = UUID().uuidString.prefix(6).lowercased()
        let socket = testTemporaryPath("ocb-rpa-\(tag).sock")
        let bonds = NSTemporaryDirectory() + "ocb-rpa-\(tag)"
        defer { try? FileManager.default.removeItem(atPath: bonds) }
        let hub = try BackgroundBlue(["air", "--socket", socket, "--stats-interval", "0"])
        defer { hub.stopInBackground() }
        #expect(await hub.waitFor("listening"), "hub: \(hub.errors)")
        let name = "rpa-\(tag)"
        let server = try BackgroundBlue(["serve", "--profile", "battery", "--name", name, "--privacy", "--hci", "air:\(socket)", "--json"])
        defer { server.stopInBackground() }
        #expect(await server.waitFor("serving"), "serve: \(server.output) \(server.errors)")
        let serving = server.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.first { $0["event"] as? String == "serving" }
        let address = try BluetoothAddress(string: try #require(serving?["address"] as? String), type: .random)
        #expect(address.kind == .resolvablePrivate, "\(address)")

        let scan = try await BlueProcess.run(["scan", "--hci", "air:\(socket)", "--timeout", "3", "--json", "--name", name])
        let heard = scan.standardOutput.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.last
        #expect(heard?["address"] as? String == address.string, "\(scan.standardOutput)")

        let first = try await BlueProcess.run(["pair", name, "--hci", "air:\(socket)", "--bonds", bonds])
        #expect(first.status == 0, "\(first.standardError)")
        #expect(first.standardOutput.contains("bonded: yes"), "\(first.standardOutput)")
        let second = try await BlueProcess.run(["pair", name, "--hci", "air:\(socket)", "--bonds", bonds])
        #expect(second.status == 0, "\(second.standardError)")
        #expect(second.standardOutput.contains("Encrypted with the existing bond of \(name)"), "\(second.standardOutput)")
        let stopped = await server.stop()
        #expect(stopped.status == 0)
    }

    @Test func privacyThroughBluetoothdAndABadIntervalAreUsageErrors() async throws {
        let bluez = try await BlueProcess.run(["serve", "--profile", "battery", "--privacy", "--hci", "bluez"])
        #expect(bluez.status == 64 && bluez.standardError.contains("--privacy: through bluetoothd"), "\(bluez.standardError)")
        let interval = try await BlueProcess.run(["serve", "--profile", "battery", "--privacy", "--rpa-interval", "0"])
        #expect(interval.status == 64 && interval.standardError.contains("--rpa-interval must be 1...3600"), "\(interval.standardError)")
    }
}
