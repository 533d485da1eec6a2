import Foundation
import TestSupport
import Testing

/// `blue serve FILE`: a definition mistake is one line naming where it is (issue 14 item 6): unknown keys anywhere
/// (a misspelt `permisions` would have left a characteristic readable without encryption), syntax errors with line
/// and column, numbers out of range, wrong types. Checked with `--print-definition` (no radio needed).
struct ServeDefinitionCheckTests {
    private func serve(_ json: String) async throws -> BlueProcess.Result {
        let path = testTemporaryPath("serve-\(UUID().uuidString.prefix(8)).json")
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try await BlueProcess.run(["serve", path, "--print-definition"], limit: .seconds(30))
    }

    private func expectOneLine(_ result: BlueProcess.Result, _ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == 64, "\(result.standardError)", sourceLocation: sourceLocation)
        #expect(result.standardError.contains(text), "\(result.standardError)", sourceLocation: sourceLocation)
        #expect(result.standardError.split(separator: "\n").count == 1, "\(result.standardError)", sourceLocation: sourceLocation)
        #expect(result.standardOutput.isEmpty, sourceLocation: sourceLocation)
    }

    @Test func anUnknownKeyAnywhereIsNamedWithAGuess() async throws {
        expectOneLine(try await serve("""
            {"services": [{"uuid": "180D", "characteristics": [
              {"uuid": "2A37", "properties": ["read"], "permisions": ["read-encrypted"]}]}]}
            """), #"unknown key "permisions" in .services[0].characteristics[0] (did you mean "permissions"?)"#)
        expectOneLine(try await serve(#"{"nmae": "x", "services": []}"#), #"unknown key "nmae" in the top level (did you mean "name"?)"#)
        expectOneLine(try await serve("""
            {"services": [{"uuid": "180D", "characteristics": [
              {"uuid": "2A37", "properties": ["notify"], "notify": {"generator": "counter", "every": 2}}]}]}
            """), #"unknown key "every" in .services[0].characteristics[0].notify"#)
        expectOneLine(try await serve("""
            {"services": [{"uuid": "180D", "characteristics": [{"uuid": "2A37", "properties": ["read"], "value": {"int8": 1}}]}]}
            """), #"unknown key "int8" in .services[0].characteristics[0].value (did you mean "uint8"?)"#)
        expectOneLine(try await serve(#"{"services": [], "advertisingData": {"manufacturer": {"compan": 1, "hex": ""}}}"#),
                      #"unknown key "compan" in .advertisingData.manufacturer (did you mean "company"?)"#)
        expectOneLine(try await serve(#"{"services": [], "advertisingData": {"txPower": -200}}"#),
                      ".advertisingData.txPower: -200 is out of range (-127...127)")
    }

    @Test func aSyntaxErrorHasItsLineAndColumn() async throws {
        expectOneLine(try await serve("{\"name\": \"x\",\n \"services\": [\n  {\"uuid\": \"180D\",, }\n ]\n}\n"),
                      "line 3, column 19: not valid JSON")
    }

    @Test func numbersOutOfRangeAndWrongTypesSaySo() async throws {
        expectOneLine(try await serve("""
            {"services": [{"uuid": "180D", "characteristics": [{"uuid": "2A37", "properties": ["read"], "value": {"uint8": 300}}]}]}
            """), ".services[0].characteristics[0].value.uint8: 300 is out of range (0...255)")
        expectOneLine(try await serve(#"{"appearance": 70000, "services": []}"#), ".appearance: 70000 is out of range (0...65535)")
        expectOneLine(try await serve("""
            {"services": [{"uuid": "180D", "characteristics": [{"uuid": "2A37", "properties": ["read"], "maxLength": 2.5}]}]}
            """), ".services[0].characteristics[0].maxLength: expected an integer, not 2.5")
        expectOneLine(try await serve(#"{"services": [{"uuid": 180}]}"#), ".services[0].uuid: expected a string")
    }

    @Test func everyBuiltInProfileStillLoads() async throws {
        for profile in ["heart-rate", "battery", "chat", "blueear"] {
            let printed = try await BlueProcess.run(["serve", "--profile", profile, "--print-definition"], limit: .seconds(30))
            #expect(printed.status == 0)
            let result = try await serve(printed.standardOutput)
            #expect(result.status == 0, "\(profile): \(result.standardError)")
        }
    }
}
