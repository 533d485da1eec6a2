import FoundationEssentials

/// Checks a `blue serve` definition before it is decoded (Docs/serve-format.md), so that a mistake is one precise
/// line: a syntax error with its line and column, an unknown key anywhere named with where it is (and the known key
/// it most likely means: a misspelt `"permisions"` must not leave a characteristic readable without encryption),
/// a value of the wrong type, a number out of its range.
enum ServeDefinitionCheck {
    /// What a key holds.
    indirect enum Expected {
        case string
        case bool
        case number
        case integer(ClosedRange<Double>)
        case strings
        case stringMap
        case object(Kind)
        case objects(Kind)
    }

    /// The objects of the format and their keys.
    enum Kind: String {
        case definition, service, characteristic, descriptor, value, generator, answer, advertisingData, manufacturer, serviceData

        var keys: [String: Expected] {
            switch self {
            case .definition:
                ["name": .string, "appearance": .integer(0...65_535), "advertise": .strings, "services": .objects(.service),
                 "advertisingData": .object(.advertisingData)]
            case .advertisingData:
                ["manufacturer": .object(.manufacturer), "serviceData": .objects(.serviceData), "txPower": .integer(-127...127)]
            case .manufacturer:
                ["company": .integer(0...65_535), "hex": .string]
            case .serviceData:
                ["uuid": .string, "hex": .string]
            case .service:
                ["uuid": .string, "primary": .bool, "characteristics": .objects(.characteristic)]
            case .characteristic:
                ["uuid": .string, "properties": .strings, "permissions": .strings, "value": .object(.value),
                 "maxLength": .integer(0...512), "description": .string, "descriptors": .objects(.descriptor),
                 "notify": .object(.generator), "onSubscribe": .object(.value), "answer": .object(.answer), "echo": .string]
            case .descriptor:
                ["uuid": .string, "permissions": .strings, "value": .object(.value), "answer": .object(.answer)]
            case .answer:
                ["delay": .number, "error": .integer(1...255), "never": .bool]
            case .value:
                ["hex": .string, "text": .string, "uint8": .integer(0...255), "uint16": .integer(0...65_535),
                 "uint32": .integer(0...4_294_967_295), "plist": .stringMap]
            case .generator:
                ["generator": .string, "interval": .number, "start": .integer(0...4_294_967_295),
                 "step": .integer(0...4_294_967_295), "width": .integer(1...4), "values": .objects(.value)]
            }
        }
    }

    /// Parses `data` and checks it against the format; the failure names `source`, the place and the problem.
    static func check(_ data: Data, source: String) throws(CLIFailure) {
        let bytes = Array(data)
        let object: JSONValue
        do {
            object = try JSONReader.parse(bytes)
        } catch {
            throw CLIFailure(.usage, "\(source): \(syntaxProblem(error, bytes))")
        }
        try check(object, as: .definition, at: "", source: source)
    }

    /// "line 3, column 19: not valid JSON (Badly formed object: expected a name in quotes)".
    static func syntaxProblem(_ error: JSONSyntaxError, _ bytes: [UInt8]) -> String {
        let (line, column) = error.position(in: bytes)
        return "line \(line), column \(column): not valid JSON (\(error.reason))"
    }

    private static func place(_ path: String) -> String { path.isEmpty ? "the top level" : path }

    private static func check(_ value: JSONValue, as kind: Kind, at path: String, source: String) throws(CLIFailure) {
        guard case .object(let object) = value else {
            throw CLIFailure(.usage, "\(source): \(place(path)): expected an object")
        }
        let keys = kind.keys
        for name in object.keys.sorted() {
            guard let expected = keys[name] else {
                let hint = suggestion(for: name, among: Array(keys.keys)).map { " (did you mean \"\($0)\"?)" } ?? ""
                throw CLIFailure(.usage, "\(source): unknown key \"\(name)\" in \(place(path))\(hint)")
            }
            try check(object[name] ?? .null, expected, at: path + "." + name, source: source)
        }
    }

    private static func check(_ value: JSONValue, _ expected: Expected, at path: String, source: String) throws(CLIFailure) {
        func wrong(_ what: String) -> CLIFailure { CLIFailure(.usage, "\(source): \(path): expected \(what)") }
        switch expected {
        case .string:
            guard case .string = value else { throw wrong("a string") }
        case .bool:
            guard case .bool = value else { throw wrong("true or false") }
        case .number:
            guard let number = value.double, number.isFinite else { throw wrong("a number") }
        case .integer(let range):
            guard case .number(let text) = value, let double = value.double else { throw wrong("an integer") }
            guard double.isFinite, double.rounded() == double else { throw wrong("an integer, not \(text)") }
            guard range.contains(double) else {
                throw CLIFailure(.usage, "\(source): \(path): \(text) is out of range "
                                 + "(\(Int64(range.lowerBound))...\(Int64(range.upperBound)))")
            }
        case .strings:
            guard case .array(let list) = value else { throw wrong("a list of strings") }
            for (index, element) in list.enumerated() {
                guard case .string = element else { throw CLIFailure(.usage, "\(source): \(path)[\(index)]: expected a string") }
            }
        case .stringMap:
            guard case .object(let map) = value else { throw wrong("an object of strings") }
            for key in map.keys.sorted() {
                guard case .string = map[key] else { throw CLIFailure(.usage, "\(source): \(path).\(key): expected a string") }
            }
        case .object(let kind):
            try check(value, as: kind, at: path, source: source)
        case .objects(let kind):
            guard case .array(let list) = value else { throw wrong("a list") }
            for (index, element) in list.enumerated() { try check(element, as: kind, at: "\(path)[\(index)]", source: source) }
        }
    }

    /// The known key within two edits of `name` (the closest), if any.
    static func suggestion(for name: String, among keys: [String]) -> String? {
        var best: (key: String, distance: Int)?
        for key in keys.sorted() {
            let edits = distance(name.lowercased(), key.lowercased())
            if edits <= 2, edits < (best?.distance ?? Int.max) { best = (key, edits) }
        }
        return best?.key
    }

    /// Levenshtein distance.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
