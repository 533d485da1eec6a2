import Foundation
import Testing
import TestSupport

/// `blue serve --profile blueear` as seed 001's peripheral (issue 12 item 2): a central that subscribes to the
/// BlueEar characteristic receives the binary plist {"Hello": "Darkness"} at once, the bytes the seed's
/// `peripheralManager(_:central:didSubscribeTo:)` sends, without anything else happening on the server.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ServeBlueEarTests {
    static let characteristic = "0CDBE648-EED0-11E6-BC64-92361F002671/199AB74C-EED0-11E6-BC64-92361F002672"

    @Test func subscriberReceivesHelloDarknessRightAfterSubscribing() async throws {
        let tag = UUID().uuidString.prefix(6).lowercased()
        let socket = testTemporaryPath("ocb-blueear-\(tag).sock")
        let name = "ear-\(tag)"
        let hub = try BackgroundBlue(["air", "--socket", socket, "--stats-interval", "0"])
        defer { hub.stopInBackground() }
        #expect(await hub.waitFor("listening", limit: .seconds(30)), "hub: \(hub.output) \(hub.errors)")
        let server = try BackgroundBlue(["serve", "--profile", "blueear", "--name", name, "--hci", "air:\(socket)", "--json"])
        defer { server.stopInBackground() }
        #expect(await server.waitFor("serving", limit: .seconds(30)), "serve: \(server.output) \(server.errors)")

        let subscribed = try await BlueProcess.run(
            ["subscribe", name, Self.characteristic, "--hci", "air:\(socket)", "--count", "1", "--timeout", "30", "--json"],
            limit: .seconds(60))
        #expect(subscribed.status == 0, "\(subscribed.standardOutput) \(subscribed.standardError)")
        // What the seed sends: PropertyListSerialization of ["Hello": "Darkness"], binary format.
        let expected = try PropertyListSerialization.data(fromPropertyList: ["Hello": "Darkness"], format: .binary, options: 0)
        let hex = expected.map { String(format: "%02x", $0) }.joined()
        let values = subscribed.standardOutput.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        #expect(values.count == 1, "\(subscribed.standardOutput)")
        #expect((values.first?["hex"] as? String)?.lowercased() == hex, "\(subscribed.standardOutput)")
        #expect(server.output.contains("\"subscription\""), "serve: \(server.output)")
    }
}
