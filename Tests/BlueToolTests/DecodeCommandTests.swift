import Foundation
import TestSupport
import Testing

/// `blue decode` end to end: the binary, its output and its exit codes.
@Suite struct DecodeCommandTests {
    @Test func decodesAnH4CommandComplete() async throws {
        let result = try await BlueProcess.run(["decode", "04 0e 04 01 03 0c 00"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("Command Complete"))
        #expect(result.standardOutput.contains("Reset"))
    }

    @Test func decodesABareATTPDUWithSIGNames() async throws {
        let result = try await BlueProcess.run(["decode", "--as", "att", "100100ffff0028"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("Read By Group Type Request"))
        #expect(result.standardOutput.contains("Primary Service"))
    }

    @Test func decodesAdvertisingDataWithCompanyNames() async throws {
        let result = try await BlueProcess.run(["decode", "--as", "ad", "0201061aff4c0002154142434445464748494041424344454600010002f8"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("Apple, Inc."))
        #expect(result.standardOutput.contains("iBeacon"))
    }

    @Test func jsonOutputIsOneObjectPerPacket() async throws {
        let result = try await BlueProcess.run(["decode", "-", "--json", "--as", "att"], input: "0a0300\n# comment\n\n1203000100\n")
        #expect(result.status == 0, "\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n")
        #expect(lines.count == 2)
        for line in lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["kind"] as? String == "att")
            #expect(object?["bytes"] as? String == object?["reencoded"] as? String)
        }
    }

    /// Text that is not hex is bad input: exit 64, as the README promises (issue 10 item 6: it was 1).
    @Test func badHexNamesTheOffsetAndExits64() async throws {
        let result = try await BlueProcess.run(["decode", "0a03zz"])
        #expect(result.status == 64)
        #expect(result.standardError.contains("character 4"))
        #expect(result.standardOutput.isEmpty)
        let zz = try await BlueProcess.run(["decode", "zz"])
        #expect(zz.status == 64, "\(zz.standardError)")
        #expect(zz.standardError.hasPrefix("error: not hex"), "\(zz.standardError)")
        #expect(zz.standardError.split(separator: "\n").count == 1)
    }

    @Test func truncatedPacketNamesTheOffsetAndExitsOne() async throws {
        let result = try await BlueProcess.run(["decode", "--as", "att", "0c0300"])  // Read Blob Request without offset
        #expect(result.status == 1)
        #expect(result.standardError.contains("offset 3"), "\(result.standardError)")
    }

    @Test func unrecognisedBytesListEveryAttempt() async throws {
        let result = try await BlueProcess.run(["decode", "ee"])
        #expect(result.status == 1)
        #expect(result.standardError.contains("not recognised"))
        #expect(result.standardError.contains("att:"))
    }

    @Test func stdinReportsTheFailingLineAndKeepsGoing() async throws {
        let result = try await BlueProcess.run(["decode", "-", "--as", "att"], input: "0a0300\nzz\n1e\n")
        #expect(result.status == 64)
        #expect(result.standardError.contains("line 2"))
        #expect(result.standardOutput.contains("Read Request"))
        #expect(result.standardOutput.contains("Handle Value Confirmation"))
        let undecodable = try await BlueProcess.run(["decode", "-", "--as", "att"], input: "0a0300\n0c0300\n")
        #expect(undecodable.status == 1, "hex that does not decode is a failed decode, not bad input: \(undecodable.standardError)")
    }

    @Test func hostileInputNeverCrashes() async throws {
        var generator = SeededGenerator(seed: 0xB1_0E)
        var lines: [String] = []
        for _ in 0..<300 {
            let count = Int.random(in: 1...40, using: &generator)
            lines.append((0..<count).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined())
        }
        let result = try await BlueProcess.run(["decode", "-"], input: lines.joined(separator: "\n"))
        #expect(result.status == 0 || result.status == 1, "crashed with \(result.status): \(result.standardError.suffix(400))")
    }
}
