import Foundation
import StackLauncher
import TestSupport
import Testing
@testable import blue

/// `blue serve FILE` with hostile files (issue 30 item 5: the serve definitions of this round, with their
/// `answer`, `echo` and 2902 descriptors for the platform personalities): thousands of mutations of the built-in
/// profiles and of the Android chat server's file, each taken as `blue serve` takes it (checked, decoded,
/// compiled, advertised, built into a GATT database under each personality). Each either serves or is refused
/// with one line naming the problem (a usage error); none crashes. Deterministic (a fixed seed per run of the
/// suite), in process, so a crash is this test's and its input is printed.
@Suite struct ServeDefinitionFuzzTests {
    @Test func hostileDefinitionsAreRefusedInOneLineAndNeverCrash() throws {
        var seeds: [Data] = try ServeProfile.allCases.flatMap { profile in
            [try JSONEncoder().encode(profile.definition), try JSONEncoder().encode(profile.definition.declaringClientConfigurations())]
        }
        let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Examples/Definitions")
        for file in try FileManager.default.contentsOfDirectory(atPath: examples.path) where file.hasSuffix(".json") {
            seeds.append(try Data(contentsOf: examples.appendingPathComponent(file)))
        }
        #expect(seeds.count >= 9)
        var generator = SeededGenerator(seed: 0x5E_12_0E)
        var served = 0, refused = 0
        for round in 0..<6_000 {
            let seed = seeds[round % seeds.count]
            let input = round % 3 == 0 ? Self.mutateBytes(seed, &generator) : Self.mutateStructure(seed, &generator)
            switch Self.serve(input) {
            case .success: served += 1
            case .failure(let failure):
                refused += 1
                #expect(failure.kind == .usage, "\(failure.kind) for \(String(decoding: input, as: UTF8.self))")
                #expect(!failure.message.isEmpty && !failure.message.contains("\n"),
                        "not one line: \(failure.message) for \(String(decoding: input, as: UTF8.self))")
            }
        }
        // Both outcomes are exercised: mutations that still serve, and refusals.
        #expect(served > 100 && refused > 100, "served \(served), refused \(refused)")
    }

    /// What `blue serve` does with a file before it opens a stack (Serve.serve()), under each personality.
    static func serve(_ data: Data) -> Result<Void, CLIFailure> {
        do throws(CLIFailure) {
            let definition = try ServeDefinition.decode(data, source: "fuzz.json")
            let compiled = try definition.compile()
            let advertised = try definition.advertisedUUIDs(compiled)
            let wanted = try definition.advertisingContent(name: definition.name ?? "blue serve", services: advertised)
            for personality in [nil] + PlatformPersonality.allCases.map(Optional.some) {
                if let personality { _ = try personality.legacyContent(wanted) }
                let server = GATTServeState(json: true, behaviour: personality?.serverBehaviour ?? ServeBehaviour())
                _ = try server.build(compiled, name: personality?.deviceName ?? "fuzz", appearance: definition.appearance ?? 0)
            }
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    /// A span of the text flipped, dropped, doubled or replaced with a JSON-ish token.
    static func mutateBytes(_ data: Data, _ generator: inout SeededGenerator) -> Data {
        var bytes = [UInt8](data)
        guard !bytes.isEmpty else { return data }
        let start = Int.random(in: 0..<bytes.count, using: &generator)
        let length = min(bytes.count - start, Int.random(in: 1...8, using: &generator))
        switch Int.random(in: 0..<4, using: &generator) {
        case 0: for index in start..<(start + length) { bytes[index] ^= UInt8.random(in: 1...255, using: &generator) }
        case 1: bytes.removeSubrange(start..<(start + length))
        case 2: bytes.insert(contentsOf: bytes[start..<(start + length)], at: start)
        default:
            let tokens = ["{", "}", "[", "]", ",", ":", "\"", "null", "-1", "1e309", "\"\\u0000\"", "99999999999999999999", "true"]
            bytes.replaceSubrange(start..<(start + length), with: Array(tokens.randomElement(using: &generator)!.utf8))
        }
        return Data(bytes)
    }

    /// One value somewhere in the definition replaced with another of any type, a key removed, or one added.
    static func mutateStructure(_ data: Data, _ generator: inout SeededGenerator) -> Data {
        guard let root = try? JSONSerialization.jsonObject(with: data) else { return data }
        let mutated = mutate(root, depth: 0, &generator)
        return (try? JSONSerialization.data(withJSONObject: mutated, options: .fragmentsAllowed)) ?? data
    }

    private static func mutate(_ value: Any, depth: Int, _ generator: inout SeededGenerator) -> Any {
        let here = Int.random(in: 0..<5, using: &generator) == 0 || depth > 6
        if var object = value as? [String: Any], !object.isEmpty, !here {
            let key = object.keys.sorted().randomElement(using: &generator)!
            switch Int.random(in: 0..<8, using: &generator) {
            case 0: object[key] = nil
            case 1: object[["answer", "echo", "descriptors", "uuid", "delay", "error", "value", "permissions"].randomElement(using: &generator)!] = randomValue(&generator)
            default: object[key] = mutate(object[key]!, depth: depth + 1, &generator)
            }
            return object
        }
        if var array = value as? [Any], !array.isEmpty, !here {
            let index = Int.random(in: 0..<array.count, using: &generator)
            switch Int.random(in: 0..<6, using: &generator) {
            case 0: array.remove(at: index)
            case 1: array.append(array[index])
            default: array[index] = mutate(array[index], depth: depth + 1, &generator)
            }
            return array
        }
        return randomValue(&generator)
    }

    private static func randomValue(_ generator: inout SeededGenerator) -> Any {
        let strings = ["", "2902", "180D", "2A37", "ZZZZ", "0cdbe648-eed0-11e6-bc64-92361f002671", "never", "notify", "read",
                       "write-encrypted", "counter", "heart-rate", "ff", "0x80", String(repeating: "a", count: 600)]
        switch Int.random(in: 0..<8, using: &generator) {
        case 0: return NSNull()
        case 1: return Bool.random(using: &generator)
        case 2: return [-1, 0, 1, 255, 256, 65535, 65536, Int.max, Int.min].randomElement(using: &generator)!
        case 3: return [-0.5, 2.5, 1e300, -1e300].randomElement(using: &generator)!
        case 4: return [strings.randomElement(using: &generator)!]
        case 5: return ["answer": ["delay": Double.random(in: -1...5, using: &generator), "error": Int.random(in: -5...300, using: &generator)]]
        default: return strings.randomElement(using: &generator)!
        }
    }
}
