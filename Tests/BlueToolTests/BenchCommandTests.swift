import Foundation
import Testing

/// `blue bench` end to end: the binary runs the GATT scenario on the in-process air and prints one JSON object
/// whose figures add up. Speed is never asserted (machines differ); correctness is (nothing lost, in order).
@Suite struct BenchCommandTests {
    private func object(_ output: String) throws -> [String: Any] {
        let line = try #require(output.split(separator: "\n").last)
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func notify200ValuesOf20OctetsArriveAllInOrder() async throws {
        let result = try await BlueProcess.run(["bench", "notify", "--count", "200", "--size", "20", "--json", "--quiet"])
        #expect(result.status == 0, "\(result.standardError)")
        // A debug build says so even with --quiet (its figures are not the stack's speed); the tests run the blue
        // built with them.
        #if DEBUG
        #expect(result.standardError.contains("this is a debug build"), "\(result.standardError)")
        #else
        #expect(!result.standardError.contains("debug build"))
        #endif
        let json = try object(result.standardOutput)
        #expect(json["benchmark"] as? String == "notify")
        #expect(json["stack"] as? String == "OpenCoreBluetooth")
        #expect(json["size"] as? Int == 20)
        #expect(json["count"] as? Int == 200)
        #expect(json["mtu"] as? Int == 247)
        #expect(json["dataLength"] as? Int == 251)
        #expect(json["sent"] as? Int == 200)
        #expect(json["received"] as? Int == 200)
        #expect(json["lost"] as? Int == 0)
        #expect(json["outOfOrder"] as? Int == 0)
        let seconds = try #require(json["seconds"] as? Double)
        let rate = try #require(json["packetsPerSecond"] as? Double)
        let bytes = try #require(json["bytesPerSecond"] as? Double)
        #expect(seconds > 0 && rate > 0)
        // The figures agree with each other: packets/s = received / seconds, bytes/s = packets/s × size.
        #expect(abs(rate * seconds - 200) < 1)
        #expect(abs(bytes - rate * 20) <= max(1, bytes * 1e-3))
        #expect(try #require(json["airSeconds"] as? Double) > 0)
    }

    @Test func writeWithoutAndWithResponseLoseNothing() async throws {
        for arguments in [["--count", "150"], ["--count", "40", "--with-response"]] {
            let result = try await BlueProcess.run(["bench", "write", "--size", "100", "--mtu", "185", "--json", "--quiet"] + arguments)
            #expect(result.status == 0, "\(result.standardError)")
            let json = try object(result.standardOutput)
            let count = Int(arguments[1]) ?? 0
            #expect(json["benchmark"] as? String == (arguments.count > 2 ? "write-with-response" : "write"))
            #expect(json["mtu"] as? Int == 185)
            #expect(json["sent"] as? Int == count)
            #expect(json["received"] as? Int == count)
            #expect(json["lost"] as? Int == 0)
            #expect(json["outOfOrder"] as? Int == 0)
        }
    }

    @Test func radioBenchmarksCountWhatTheyAskedFor() async throws {
        let air = try await BlueProcess.run(["bench", "air", "--reports", "300", "--json", "--quiet"])
        #expect(air.status == 0, "\(air.standardError)")
        let airJSON = try object(air.standardOutput)
        #expect(airJSON["benchmark"] as? String == "air")
        #expect(airJSON["received"] as? Int == 300)
        // 20 ms advertising interval plus 0-10 ms advDelay: 300 reports take 6 to 9 s of air time.
        let airSeconds = try #require(airJSON["airSeconds"] as? Double)
        #expect(airSeconds >= 5.9 && airSeconds <= 9.1, "\(airSeconds)")

        let acl = try await BlueProcess.run(["bench", "acl", "--count", "500", "--json", "--quiet"])
        #expect(acl.status == 0, "\(acl.standardError)")
        let aclJSON = try object(acl.standardOutput)
        #expect(aclJSON["benchmark"] as? String == "acl")
        #expect(aclJSON["received"] as? Int == 500)
        #expect(aclJSON["lost"] as? Int == 0)
        #expect(aclJSON["size"] as? Int == 251)
    }

    @Test func aSizeThatDoesNotFitTheMTUIsRefused() async throws {
        let result = try await BlueProcess.run(["bench", "notify", "--size", "245", "--count", "10", "--quiet"])
        #expect(result.status == 64)
        #expect(result.standardError.contains("--size"))
        #expect(result.standardOutput.isEmpty)
    }

    /// Issue 13 item 1: every advertiser is reported, each by its own address; the scan takes about one
    /// advertising interval of air time (they are spread over it).
    @Test func advertisersAreAllFound() async throws {
        let result = try await BlueProcess.run(["bench", "advertisers", "--count", "60", "--interval", "50", "--json", "--quiet"])
        #expect(result.status == 0, "\(result.standardError)")
        let json = try object(result.standardOutput)
        #expect(json["benchmark"] as? String == "advertisers")
        #expect(json["advertisers"] as? Int == 60)
        #expect(json["found"] as? Int == 60)
        #expect(try #require(json["reports"] as? Int) >= 60)
        let air = try #require(json["airSeconds"] as? Double)
        #expect(air > 0 && air < 0.2, "about one 50 ms interval, plus the scanner's window: \(air)")
        let bad = try await BlueProcess.run(["bench", "advertisers", "--count", "0", "--quiet"])
        #expect(bad.status == 64)
        #expect(bad.standardError.contains("blue bench advertisers: badOptions: --count must be 1...100000"), "\(bad.standardError)")
    }

    /// Issue 13 item 2: one central, several peripherals notifying at once: every link established and kept,
    /// every value received in order, memory figures present.
    @Test func connectionsCarryEveryNotification() async throws {
        let result = try await BlueProcess.run(["bench", "connections", "--count", "6", "--per-link", "40", "--json", "--quiet"])
        #expect(result.status == 0, "\(result.standardError)")
        let json = try object(result.standardOutput)
        #expect(json["benchmark"] as? String == "connections")
        #expect(json["links"] as? Int == 6)
        #expect(json["established"] as? Int == 6)
        #expect(json["lost"] as? Int == 0)
        #expect(json["sent"] as? Int == 240)
        #expect(json["received"] as? Int == 240)
        #expect(json["outOfOrder"] as? Int == 0)
        #expect(json["residentBytesPerLink"] is Int)
        // Under a sanitizer (Scripts/sanitizers.sh) malloc is the sanitizer's, which keeps no mallinfo2 figures: 0.
        let heapBytesPerLink = try #require(json["heapBytesPerLink"] as? Int)
        if ProcessInfo.processInfo.environment["OCB_SANITIZER"] == nil {
            #expect(heapBytesPerLink > 0, "the stack allocates something per link")
        }
        #expect(try #require(json["notificationsPerSecond"] as? Double) > 0)
    }

    /// More links than the host's reassembler used to hold partial PDUs for (64): 244-octet notifications at
    /// LE data length 27 keep every link in the middle of a PDU; none may be dropped (they were, past 64 links).
    @Test func seventyLinksOfLongNotificationsLoseNothing() async throws {
        let result = try await BlueProcess.run(["bench", "connections", "--count", "70", "--per-link", "10", "--size", "244",
                                                "--json", "--quiet"])
        #expect(result.status == 0, "\(result.standardError)")
        let json = try object(result.standardOutput)
        #expect(json["established"] as? Int == 70)
        #expect(json["lost"] as? Int == 0)
        #expect(json["received"] as? Int == 700)
        #expect(json["outOfOrder"] as? Int == 0)
    }

    /// Issue 31 item 5: links spread over several centrals (set up side by side, peripherals dealt in turn): every
    /// central's links carry every value, in order, and each value is counted by the central it belongs to.
    @Test func linksOnSeveralCentralsCarryEveryNotification() async throws {
        let result = try await BlueProcess.run(["bench", "connections", "--count", "25", "--per-central", "10",
                                                "--per-link", "8", "--json", "--quiet"])
        #expect(result.status == 0, "\(result.standardError)")
        let json = try object(result.standardOutput)
        #expect(json["centrals"] as? Int == 3)
        #expect(json["established"] as? Int == 25)
        #expect(json["lost"] as? Int == 0)
        #expect(json["received"] as? Int == 200)
        #expect(json["outOfOrder"] as? Int == 0)
        let refused = try await BlueProcess.run(["bench", "connections", "--count", "10001", "--quiet"])
        #expect(refused.status != 0)
        #expect(refused.standardError.contains("--count must be 1...10000"))
    }

    /// Issue 13 item 3: the steps from scanning to the first notification, each timed on both clocks; the air's
    /// timing gives each step at least some time (connection events every 7.5 ms), the total adds up.
    @Test func latencyTimesEveryStep() async throws {
        let result = try await BlueProcess.run(["bench", "latency", "--json", "--quiet"])
        #expect(result.status == 0, "\(result.standardError)")
        let json = try object(result.standardOutput)
        let steps = try #require(json["steps"] as? [String: [String: Double]])
        #expect(Set(steps.keys) == ["scan", "connect", "discover", "subscribe", "first notification", "total"])
        for name in ["connect", "discover", "subscribe"] {
            #expect(try #require(steps[name]?["airSeconds"]) >= 0.0075, "\(name) spans connection events")
        }
        let total = try #require(steps["total"]?["airSeconds"])
        let sum = steps.filter { $0.key != "total" }.values.compactMap { $0["airSeconds"] }.reduce(0, +)
        #expect(abs(total - sum) < 1e-5)
        #expect(try #require(json["airSeconds"] as? Double) == total)
    }
}
