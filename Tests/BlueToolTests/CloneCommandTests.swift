import Foundation
import TestSupport
import Testing

/// `blue clone DEVICE FILE` (issue 29 item 5): a device served from a definition is cloned, the clone is served in
/// its place, and a client sees the same device: `blue explore --json` gives the same tree (handles, properties,
/// values, descriptors) and `blue scan --json` the same advertisement; a value readable only encrypted stays so.
/// (A Bumble peripheral cloned and played back to a Bumble central: Interop/test_clone_bumble.py.)
@Suite(.serialized, .timeLimit(.minutes(2)))
struct CloneCommandTests {
    static let definition = """
        {"name": "Thermo 9", "appearance": 768, "advertise": ["181A"],
         "advertisingData": {"manufacturer": {"company": 89, "hex": "0102abcd"}, "serviceData": [{"uuid": "181A", "hex": "e803"}], "txPower": -8},
         "services": [
          {"uuid": "181A", "characteristics": [
            {"uuid": "2A6E", "properties": ["read", "notify"], "value": {"hex": "e803"}, "description": "Temperature"},
            {"uuid": "2A6F", "properties": ["read", "indicate"], "value": {"uint16": 4500},
             "descriptors": [{"uuid": "2904", "value": {"hex": "06feaf27010000"}}]}]},
          {"uuid": "3C1D0001-7B6E-4E5C-9A3B-0C0FFEE00001", "characteristics": [
            {"uuid": "3C1D0002-7B6E-4E5C-9A3B-0C0FFEE00001", "properties": ["read", "write", "write-without-response"], "value": {"text": "hello"}},
            {"uuid": "3C1D0003-7B6E-4E5C-9A3B-0C0FFEE00001", "properties": ["read", "write"], "permissions": ["read-encrypted", "write-encrypted"], "value": {"text": "secret"}},
            {"uuid": "3C1D0004-7B6E-4E5C-9A3B-0C0FFEE00001", "properties": ["write"]}]}
         ]}
        """

    enum Failure: Error { case notReady(String) }

    private static func json(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    /// A JSON object as text with sorted keys (what two objects are compared by).
    private static func canonical(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// The explored tree and the last advertisement heard of "Thermo 9", without what differs by nature (address,
    /// identifier, link, RSSI).
    private func observe(_ socket: String) async throws -> (tree: [[String: Any]], advertisement: [String: Any]) {
        let explore = try await BlueProcess.run(["explore", "Thermo 9", "--hci", "air:\(socket)", "--json"])
        #expect(explore.status == 0, "\(explore.standardError)")
        let scan = try await BlueProcess.run(["scan", "--hci", "air:\(socket)", "--timeout", "2", "--json", "--name", "Thermo 9"])
        var advertisement = scan.standardOutput.split(separator: "\n").last.map { Self.json(String($0)) } ?? [:]
        for key in ["address", "addressType", "identifier", "rssi", "time", "timestamp"] { advertisement[key] = nil }
        return (Self.json(explore.standardOutput)["services"] as? [[String: Any]] ?? [], advertisement)
    }

    @Test("a served device cloned and served again looks the same to a client, an encrypted value included")
    func cloneServesTheSameDevice() async throws {
        let tag = UUID().uuidString.prefix(6).lowercased()
        let socket = testTemporaryPath("ocb-clone-\(tag).sock")
        let original = testTemporaryPath("ocb-clone-\(tag)-original.json")
        let clone = testTemporaryPath("ocb-clone-\(tag)-clone.json")
        defer { for path in [original, clone] { try? FileManager.default.removeItem(atPath: path) } }
        try Self.definition.write(toFile: original, atomically: true, encoding: .utf8)
        let hub = try BackgroundBlue(["air", "--socket", socket, "--stats-interval", "0"])
        defer { hub.stopInBackground() }
        guard await hub.waitFor("listening") else { throw Failure.notReady("hub: \(hub.errors)") }

        let server = try BackgroundBlue(["serve", original, "--hci", "air:\(socket)"])
        guard await server.waitFor("serving") else { throw Failure.notReady("serve: \(server.errors)") }
        let cloned = try await BlueProcess.run(["clone", "Thermo 9", clone, "--hci", "air:\(socket)"])
        #expect(cloned.status == 0, "\(cloned.standardError)")
        #expect(cloned.standardOutput.hasPrefix("cloned \"Thermo 9\" ("), "\(cloned.standardOutput)")
        #expect(cloned.standardOutput.contains("2 services, 5 characteristics, 3 values read → \(clone)"), "\(cloned.standardOutput)")
        #expect(cloned.standardError.contains("readable only on an encrypted link"), "\(cloned.standardError)")
        // To standard output with `-`: the same definition (the summary on standard error).
        let piped = try await BlueProcess.run(["clone", "Thermo 9", "-", "--hci", "air:\(socket)"])
        #expect(piped.status == 0, "\(piped.standardError)")
        let written = try String(contentsOfFile: clone, encoding: .utf8)
        #expect(piped.standardOutput == written)
        let file = Self.json(written)
        #expect(file["name"] as? String == "Thermo 9" && file["appearance"] as? Int == 768)
        #expect(file["advertise"] as? [String] == ["181A"])
        let services = file["services"] as? [[String: Any]] ?? []
        let secret = (services.last?["characteristics"] as? [[String: Any]])?[1]
        #expect(secret?["permissions"] as? [String] == ["read-encrypted", "write-encrypted"], "\(secret ?? [:])")
        let before = try await observe(socket)
        #expect(await server.stop().status == 0)

        let replay = try BackgroundBlue(["serve", clone, "--hci", "air:\(socket)"])
        defer { replay.stopInBackground() }
        guard await replay.waitFor("serving") else { throw Failure.notReady("serve clone: \(replay.errors)") }
        let after = try await observe(socket)
        #expect(!before.tree.isEmpty && !before.advertisement.isEmpty)
        #expect(Self.canonical(before.advertisement) == Self.canonical(after.advertisement))
        #expect(before.tree.count == after.tree.count)
        for (service, replayed) in zip(before.tree, after.tree) {
            var service = service, replayed = replayed
            // explore pairs to read the encrypted value: the original gives "secret", the clone its empty value.
            for index in [0, 1] {
                var entry = index == 0 ? service : replayed
                if var characteristics = entry["characteristics"] as? [[String: Any]] {
                    for position in characteristics.indices
                    where characteristics[position]["uuid"] as? String == "3C1D0003-7B6E-4E5C-9A3B-0C0FFEE00001" {
                        #expect(characteristics[position]["hex"] as? String == (index == 0 ? "736563726574" : ""))
                        characteristics[position]["hex"] = nil
                        characteristics[position]["decoded"] = nil
                    }
                    entry["characteristics"] = characteristics
                }
                if index == 0 { service = entry } else { replayed = entry }
            }
            #expect(Self.canonical(service) == Self.canonical(replayed))
        }
    }

    @Test("a device nobody serves is exit 2; a file in a missing folder is one line and exit 64 before any radio work")
    func cloneErrors() async throws {
        let socket = testTemporaryPath("ocb-clone-\(UUID().uuidString.prefix(6).lowercased()).sock")
        let hub = try BackgroundBlue(["air", "--socket", socket, "--stats-interval", "0"])
        defer { hub.stopInBackground() }
        guard await hub.waitFor("listening") else { throw Failure.notReady("hub: \(hub.errors)") }
        let missing = try await BlueProcess.run(["clone", "nobody-here", "-", "--hci", "air:\(socket)", "--timeout", "1"])
        #expect(missing.status == 2, "\(missing.standardError)")
        #expect(missing.standardOutput.isEmpty)
        let badFolder = try await BlueProcess.run(["clone", "anyone", "/nonexistent-ocb/x.json", "--hci", "air:\(socket)"])
        #expect(badFolder.status == 64)
        #expect(badFolder.standardError == "error: cannot write /nonexistent-ocb/x.json: /nonexistent-ocb is not a folder we may write in\n",
                "\(badFolder.standardError)")
    }
}
