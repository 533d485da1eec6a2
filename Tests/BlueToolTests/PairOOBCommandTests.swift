import Foundation
import Testing
import TestSupport

/// Out-of-band pairing on the command line (Core 5.4 Vol 3 Part H §2.3.5.6.4 LE Secure Connections OOB, §2.3.5.4
/// legacy OOB): `blue serve` and `blue pair` as two processes on a private `blue air` hub, exchanging OOB data
/// through files (Docs/pairing.md) in either direction or both, a shared legacy key, a tampered confirm value
/// failing with Confirm Value Failed, and bad input refused with one line and exit 64 before anything starts.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PairOOBCommandTests {
    static func json(_ line: Substring) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    static func jsonFile(_ path: String) -> [String: Any]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    static let key = "00112233445566778899aabbccddeeff"

    /// A scratch folder, a hub and `blue serve --profile heart-rate --json` with `serveArguments` on it.
    static func scene(serve serveArguments: (String) -> [String],
                      _ body: (_ socket: String, _ folder: String, _ server: BackgroundBlue) async throws -> Void) async throws {
        let tag = UUID().uuidString.prefix(6).lowercased()
        let socket = testTemporaryPath("ocb-oob-\(tag).sock")
        let folder = NSTemporaryDirectory() + "ocb-oob-\(tag)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let hub = try BackgroundBlue(["air", "--socket", socket, "--stats-interval", "0"])
        defer { hub.stopInBackground() }
        #expect(await hub.waitFor("listening"), "hub: \(hub.output) \(hub.errors)")
        let server = try BackgroundBlue(["serve", "--profile", "heart-rate", "--hci", "air:\(socket)", "--json"]
                                        + serveArguments(folder))
        defer { server.stopInBackground() }
        #expect(await server.waitFor("serving"), "serve: \(server.output) \(server.errors)")
        try await body(socket, folder, server)
    }

    /// `blue pair "blue heart rate" --json` with `arguments` on the hub; the JSON summary (last line).
    static func pair(_ socket: String, _ folder: String, _ arguments: [String], bonds: String = "bonds") async throws -> (BlueProcess.Result, [String: Any]?) {
        let result = try await BlueProcess.run(["pair", "blue heart rate", "--hci", "air:\(socket)", "--bonds", folder + "/" + bonds, "--json"]
                                         + arguments)
        return (result, result.standardOutput.split(separator: "\n").last.flatMap(Self.json))
    }

    /// The server's JSON events.
    static func events(_ server: BackgroundBlue) -> [[String: Any]] {
        server.output.split(separator: "\n").compactMap(Self.json)
    }

    /// Both sides report an authenticated LE SC pairing with the OOB method ("oob").
    static func expectOOB(_ summary: [String: Any]?, _ server: BackgroundBlue, secureConnections: Bool = true,
                          sourceLocation: SourceLocation = #_sourceLocation) async {
        #expect(summary?["method"] as? String == "oob", "\(String(describing: summary))", sourceLocation: sourceLocation)
        #expect(summary?["secureConnections"] as? Bool == secureConnections, sourceLocation: sourceLocation)
        #expect(summary?["authenticated"] as? Bool == true, sourceLocation: sourceLocation)
        #expect(summary?["encrypted"] as? Bool == true, sourceLocation: sourceLocation)
        #expect(summary?["bonded"] as? Bool == true, sourceLocation: sourceLocation)
        #expect(await server.waitFor("\"paired\""), "serve: \(server.output)", sourceLocation: sourceLocation)
        let paired = events(server).first { $0["event"] as? String == "paired" }
        #expect(paired?["method"] as? String == "oob", "\(server.output)", sourceLocation: sourceLocation)
        #expect(paired?["authenticated"] as? Bool == true, sourceLocation: sourceLocation)
        #expect(paired?["secureConnections"] as? Bool == secureConnections, sourceLocation: sourceLocation)
    }

    @Test("LE SC OOB, peripheral → central only (then --reconnect with the bond): serve --oob-out, pair --oob-in")
    func peripheralToCentral() async throws {
        try await Self.scene(serve: { ["--oob-out", $0 + "/peripheral.json"] }) { socket, folder, server in
            let file = try #require(Self.jsonFile(folder + "/peripheral.json"), "serve wrote no --oob-out file")
            let serving = Self.events(server).first { $0["event"] as? String == "serving" }
            #expect(file["address"] as? String == serving?["address"] as? String, "\(file)")
            #expect((file["random"] as? String)?.count == 32 && (file["confirm"] as? String)?.count == 32, "\(file)")
            #expect(file["addressType"] as? String == "random" || file["addressType"] as? String == "public")
            let attributes = try FileManager.default.attributesOfItem(atPath: folder + "/peripheral.json")
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            let (result, summary) = try await Self.pair(socket, folder, ["--method", "oob", "--oob-in", folder + "/peripheral.json",
                                                                          "--reconnect"])
            #expect(result.status == 0, "\(result.standardOutput) \(result.standardError)")
            await Self.expectOOB(summary, server)
            // --reconnect: the OOB bond encrypts the second link without pairing again.
            let reconnect = summary?["reconnect"] as? [String: Any]
            #expect(reconnect?["usedExistingBond"] as? Bool == true && reconnect?["encrypted"] as? Bool == true,
                    "\(String(describing: summary))")
        }
    }

    @Test("LE SC OOB, central → peripheral only: pair --oob-out, serve --oob-in picks up the file written after it started")
    func centralToPeripheral() async throws {
        try await Self.scene(serve: { ["--oob-in", $0 + "/central.json"] }) { socket, folder, server in
            #expect(!FileManager.default.fileExists(atPath: folder + "/central.json"))
            let (result, summary) = try await Self.pair(socket, folder, ["--method", "oob", "--oob-out", folder + "/central.json"])
            #expect(result.status == 0, "\(result.standardOutput) \(result.standardError)")
            await Self.expectOOB(summary, server)
            let file = try #require(Self.jsonFile(folder + "/central.json"), "pair wrote no --oob-out file")
            let written = result.standardOutput.split(separator: "\n").compactMap(Self.json)
                .first { $0["event"] as? String == "oobDataWritten" }
            #expect(written?["address"] as? String == file["address"] as? String, "\(result.standardOutput)")
            let read = Self.events(server).first { $0["event"] as? String == "oobDataRead" }
            #expect(read?["address"] as? String == file["address"] as? String, "\(server.output)")
        }
    }

    @Test("serve --oob-in follows the file: a second central (another identity, a new key pair) rewrites it and pairs with OOB too")
    func fileRewrittenBetweenCentrals() async throws {
        try await Self.scene(serve: { ["--oob-in", $0 + "/central.json"] }) { socket, folder, server in
            var addresses: [String] = []
            for run in ["first", "second"] {
                let (result, summary) = try await Self.pair(socket, folder, ["--method", "oob", "--oob-out", folder + "/central.json"],
                                                      bonds: "bonds-\(run)")
                #expect(result.status == 0, "\(run): \(result.standardOutput) \(result.standardError)")
                #expect(summary?["method"] as? String == "oob", "\(run): \(String(describing: summary))")
                addresses += [try #require(Self.jsonFile(folder + "/central.json")?["address"] as? String)]
                #expect(await server.waitFor("\"paired\""))
            }
            #expect(addresses.count == 2 && addresses[0] != addresses[1], "\(addresses)")
            let read = Self.events(server).filter { $0["event"] as? String == "oobDataRead" }.compactMap { $0["address"] as? String }
            #expect(read == addresses, "\(server.output)")
            let paired = Self.events(server).filter { $0["event"] as? String == "paired" }
            #expect(paired.count == 2 && paired.allSatisfy { $0["method"] as? String == "oob" }, "\(server.output)")
        }
    }

    @Test("LE SC OOB, both ways: each side reads the other's file")
    func bothWays() async throws {
        try await Self.scene(serve: { ["--oob-out", $0 + "/peripheral.json", "--oob-in", $0 + "/central.json"] }) { socket, folder, server in
            let (result, summary) = try await Self.pair(socket, folder, [
                "--method", "oob", "--oob-in", folder + "/peripheral.json", "--oob-out", folder + "/central.json",
            ])
            #expect(result.status == 0, "\(result.standardOutput) \(result.standardError)")
            await Self.expectOOB(summary, server)
            #expect(Self.events(server).contains { $0["event"] as? String == "oobDataRead" }, "\(server.output)")
        }
    }

    @Test("legacy OOB: the same --oob-key on both sides → OOB, legacy, authenticated")
    func legacySameKey() async throws {
        try await Self.scene(serve: { _ in ["--oob-key", Self.key] }) { socket, folder, server in
            let (result, summary) = try await Self.pair(socket, folder, ["--method", "legacy-oob", "--oob-key", Self.key.uppercased()])
            #expect(result.status == 0, "\(result.standardOutput) \(result.standardError)")
            await Self.expectOOB(summary, server, secureConnections: false)
        }
    }

    @Test("legacy OOB with different keys: Confirm Value Failed on both sides, exit 1")
    func legacyDifferentKeys() async throws {
        try await Self.scene(serve: { _ in ["--oob-key", Self.key] }) { socket, folder, server in
            let (result, _) = try await Self.pair(socket, folder, ["--method", "legacy-oob", "--oob-key", String(Self.key.reversed())])
            #expect(result.status == 1, "\(result.standardOutput) \(result.standardError)")
            let said = result.standardError.lowercased().replacingOccurrences(of: " ", with: "")
            #expect(said.contains("confirmvaluefailed"), "\(result.standardError)")
            #expect(await server.waitFor("pairingFailed"), "serve: \(server.output)")
            let failed = Self.events(server).first { $0["event"] as? String == "pairingFailed" }
            #expect((failed?["error"] as? String)?.lowercased().replacingOccurrences(of: " ", with: "").contains("confirmvaluefailed") == true,
                    "\(server.output)")
        }
    }

    @Test("a tampered confirm value: Confirm Value Failed on the pair side, exit 1, the reason printed")
    func mismatchedData() async throws {
        try await Self.scene(serve: { ["--oob-out", $0 + "/peripheral.json"] }) { socket, folder, server in
            var file = try #require(Self.jsonFile(folder + "/peripheral.json"))
            let confirm = try #require(file["confirm"] as? String)
            file["confirm"] = (confirm.first == "0" ? "1" : "0") + confirm.dropFirst()
            try JSONSerialization.data(withJSONObject: file).write(to: URL(fileURLWithPath: folder + "/tampered.json"))
            let (result, _) = try await Self.pair(socket, folder, ["--method", "oob", "--oob-in", folder + "/tampered.json"])
            #expect(result.status == 1, "\(result.standardOutput) \(result.standardError)")
            let said = result.standardError.lowercased().replacingOccurrences(of: " ", with: "")
            #expect(said.contains("confirmvaluefailed"), "\(result.standardError)")
            #expect(await server.waitFor("pairingFailed"), "serve: \(server.output)")
            #expect(!Self.events(server).contains { $0["event"] as? String == "paired" })
        }
    }

    @Test("an OOB method whose data the peer never got is refused, not paired as Just Works")
    func peerWithoutData() async throws {
        try await Self.scene(serve: { _ in [] }) { socket, folder, server in
            let (result, _) = try await Self.pair(socket, folder, ["--method", "oob", "--oob-out", folder + "/central.json"])
            #expect(result.status == 1, "\(result.standardOutput) \(result.standardError)")
            #expect(result.standardError.contains("Authentication Requirements") && result.standardError.contains("Just Works, not out of band"), "\(result.standardError)")
            #expect(!Self.events(server).contains { $0["event"] as? String == "paired" }, "\(server.output)")
        }
    }

    /// Runs `arguments` (no hub: reaching the transport would exit 69, not 64) and expects exit 64 with one line
    /// on standard error containing `expected`.
    static func expectUsage(_ arguments: [String], _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let result = try await BlueProcess.run(arguments + ["--hci", "air:/nonexistent/ocb-oob.sock"])
        #expect(result.status == 64, "\(arguments): \(result.status) \(result.standardError)", sourceLocation: sourceLocation)
        let lines = result.standardError.split(separator: "\n")
        #expect(lines.count == 1, "\(arguments): \(result.standardError)", sourceLocation: sourceLocation)
        #expect(lines.first?.hasPrefix("error: ") == true, "\(result.standardError)", sourceLocation: sourceLocation)
        #expect(result.standardError.contains(expected), "\(arguments): \(result.standardError)", sourceLocation: sourceLocation)
        #expect(result.standardOutput.isEmpty, "\(arguments): \(result.standardOutput)", sourceLocation: sourceLocation)
    }

    @Test("bad input: one line, exit 64, nothing written or started")
    func badInput() async throws {
        let folder = NSTemporaryDirectory() + "ocb-oob-bad-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let out = folder + "/out.json", missing = folder + "/missing.json"
        try Data("{\"address\": \"C0:00:00:00:00:01\", \"addressType\": \"random\"".utf8)
            .write(to: URL(fileURLWithPath: folder + "/truncated.json"))
        try Data("{\"address\": \"C0:00:00:00:00:01\", \"addressType\": \"random\", \"random\": \"0011\", \"confirm\": \"00112233445566778899aabbccddeeff\"}".utf8)
            .write(to: URL(fileURLWithPath: folder + "/short.json"))
        try Data("{\"address\": \"C0:00:00:00:00:01\", \"addressType\": \"other\", \"random\": \"00112233445566778899aabbccddeeff\", \"confirm\": \"00112233445566778899aabbccddeeff\"}".utf8)
            .write(to: URL(fileURLWithPath: folder + "/type.json"))
        let pair = ["pair", "blue heart rate", "--bonds", folder + "/bonds"]
        try await Self.expectUsage(pair + ["--method", "oob"], "--method oob needs --oob-in")
        try await Self.expectUsage(pair + ["--method", "legacy-oob"], "--method legacy-oob needs --oob-key")
        try await Self.expectUsage(pair + ["--method", "legacy-oob", "--oob-key", "0011223344"], "--oob-key must be 32 hex digits (16 octets), not 10")
        try await Self.expectUsage(pair + ["--method", "legacy-oob", "--oob-key", Self.key + "00"], "not 34")
        try await Self.expectUsage(pair + ["--method", "legacy-oob", "--oob-key", "zz" + Self.key.dropFirst(2)], "--oob-key must be 32 hex digits")
        try await Self.expectUsage(pair + ["--method", "jw", "--oob-key", Self.key], "need --method oob or --method legacy-oob")
        try await Self.expectUsage(pair + ["--method", "oob", "--oob-in", missing, "--oob-out", out], "--oob-in \(missing): no such file")
        try await Self.expectUsage(pair + ["--method", "oob", "--oob-in", folder + "/truncated.json", "--oob-out", out], "not JSON")
        try await Self.expectUsage(pair + ["--method", "oob", "--oob-in", folder + "/short.json", "--oob-out", out], "\"random\" must be 32 hex digits")
        try await Self.expectUsage(pair + ["--method", "oob", "--oob-in", folder + "/type.json"], "\"addressType\" must be")
        try await Self.expectUsage(pair + ["--method", "oob", "--oob-out", folder + "/no/such/folder/out.json"], "does not exist or is not writable")
        try await Self.expectUsage(["serve", "--profile", "heart-rate", "--oob-key", "00"], "--oob-key must be 32 hex digits")
        try await Self.expectUsage(["serve", "--profile", "heart-rate", "--oob-in", folder + "/short.json"], "\"random\" must be 32 hex digits")
        try await Self.expectUsage(["serve", "--profile", "heart-rate", "--oob-in", missing, "--oob-out", folder], "is a folder")
        // Nothing half-done: the --oob-out of the refused runs was not written, no bond folder made.
        #expect(!FileManager.default.fileExists(atPath: out))
        #expect(!FileManager.default.fileExists(atPath: folder + "/bonds"))
    }
}
