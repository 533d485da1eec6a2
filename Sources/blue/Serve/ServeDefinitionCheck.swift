import Foundation

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
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw CLIFailure(.usage, "\(source): \(syntaxProblem(error, data))")
        }
        try check(object, as: .definition, at: "", source: source)
    }

    /// "line 3, column 21: not valid JSON (Invalid value)" from Foundation's "… around character 47."
    static func syntaxProblem(_ error: any Error, _ data: Data) -> String {
        let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
        guard let range = detail.range(of: "character "),
              let offset = Int(detail[range.upperBound...].prefix { $0.isNumber }) else {
            return "not valid JSON: \(detail)"
        }
        let (line, column) = position(of: offset, in: Array(data))
        let reason = detail.components(separatedBy: " around ").first ?? detail
        return "line \(line), column \(column): not valid JSON (\(reason))"
    }

    /// The 1-based line and column of a byte offset (columns count characters, not bytes).
    static func position(of offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        let end = min(max(offset, 0), bytes.count)
        var line = 1
        var lineStart = 0
        for index in 0..<end where bytes[index] == 0x0A {
            line += 1
            lineStart = index + 1
        }
        let column = String(decoding: bytes[lineStart..<end], as: UTF8.self).count + 1
        return (line, column)
    }

    private static func place(_ path: String) -> String { path.isEmpty ? "the top level" : path }

    private static func check(_ value: Any, as kind: Kind, at path: String, source: String) throws(CLIFailure) {
        guard let object = value as? [String: Any] else {
            throw CLIFailure(.usage, "\(source): \(place(path)): expected an object")
        }
        let keys = kind.keys
        for name in object.keys.sorted() {
            guard let expected = keys[name] else {
                let hint = suggestion(for: name, among: Array(keys.keys)).map { " (did you mean \"\($0)\"?)" } ?? ""
                throw CLIFailure(.usage, "\(source): unknown key \"\(name)\" in \(place(path))\(hint)")
            }
            try check(object[name] as Any, expected, at: path + "." + name, source: source)
        }
    }

    private static func check(_ value: Any, _ expected: Expected, at path: String, source: String) throws(CLIFailure) {
        func wrong(_ what: String) -> CLIFailure { CLIFailure(.usage, "\(source): \(path): expected \(what)") }
        switch expected {
        case .string:
            guard value is String else { throw wrong("a string") }
        case .bool:
            guard value is NSNumber || value is Bool else { throw wrong("true or false") }
        case .number:
            guard !(value is String), let number = value as? NSNumber, number.doubleValue.isFinite else { throw wrong("a number") }
        case .integer(let range):
            guard !(value is String), let number = value as? NSNumber else { throw wrong("an integer") }
            let double = number.doubleValue
            guard double.isFinite, double.rounded() == double else { throw wrong("an integer, not \(number)") }
            guard range.contains(double) else {
                throw CLIFailure(.usage, "\(source): \(path): \(number) is out of range "
                                 + "(\(Int64(range.lowerBound))...\(Int64(range.upperBound)))")
            }
        case .strings:
            guard let list = value as? [Any] else { throw wrong("a list of strings") }
            for (index, element) in list.enumerated() where !(element is String) {
                throw CLIFailure(.usage, "\(source): \(path)[\(index)]: expected a string")
            }
        case .stringMap:
            guard let map = value as? [String: Any] else { throw wrong("an object of strings") }
            for key in map.keys.sorted() where !(map[key] is String) {
                throw CLIFailure(.usage, "\(source): \(path).\(key): expected a string")
            }
        case .object(let kind):
            try check(value, as: kind, at: path, source: source)
        case .objects(let kind):
            guard let list = value as? [Any] else { throw wrong("a list") }
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
