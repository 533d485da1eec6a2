import FoundationEssentials
import SharedAir

/// Why a request body was refused: one line for the 400 answer.
struct ConsoleBodyError: Error {
    let reason: String
}

/// A JSON value as the body held it (JSONDecoder tells `true` from `1`, which JSONSerialization does not on Linux).
enum ConsoleJSONValue: Decodable {
    case flag(Bool)
    case number(Double)
    case text(String)
    case null
    case list([ConsoleJSONValue])
    case object([String: ConsoleJSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .flag(flag)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let text = try? container.decode(String.self) {
            self = .text(text)
        } else if let object = try? container.decode([String: ConsoleJSONValue].self) {
            self = .object(object)
        } else {
            self = .list(try container.decode([ConsoleJSONValue].self))
        }
    }
}

/// A request's JSON object body, read strictly: an object, only the names a route allows, each of the type its
/// schema says (a number is not a flag, a flag not a number), finite numbers within their bounds.
struct ConsoleBody {
    private let object: [String: ConsoleJSONValue]

    init(_ bytes: [UInt8], allowed: Set<String>, emptyAllowed: Bool = false) throws(ConsoleBodyError) {
        let expected = allowed.sorted().joined(separator: ", ")
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            guard emptyAllowed else { throw ConsoleBodyError(reason: "expected a JSON object body with \(expected)") }
            object = [:]
            return
        }
        guard let parsed = try? JSONDecoder().decode(ConsoleJSONValue.self, from: Data(bytes)) else {
            throw ConsoleBodyError(reason: "the body is not JSON")
        }
        guard case .object(let object) = parsed else { throw ConsoleBodyError(reason: "expected a JSON object") }
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw ConsoleBodyError(reason: "unknown field \"\(unknown)\" (expected \(expected))")
        }
        self.object = object
    }

    func has(_ name: String) -> Bool { object[name] != nil }

    /// A JSON number (not true/false, not a string), finite.
    private func number(_ name: String) throws(ConsoleBodyError) -> Double {
        guard let value = object[name] else { throw ConsoleBodyError(reason: "missing field \"\(name)\"") }
        guard case .number(let number) = value, number.isFinite else { throw ConsoleBodyError(reason: "\"\(name)\" must be a number") }
        return number
    }

    func coordinate(_ name: String) throws(ConsoleBodyError) -> Double {
        let value = try number(name)
        guard abs(value) <= AirHubFault.coordinateLimit else {
            throw ConsoleBodyError(reason: "\"\(name)\" must be within ±\(Int(AirHubFault.coordinateLimit)) metres")
        }
        return value
    }

    func percent(_ name: String) throws(ConsoleBodyError) -> Double {
        let value = try number(name)
        guard value >= 0, value <= 100 else { throw ConsoleBodyError(reason: "\"\(name)\" must be from 0 to 100") }
        return value
    }

    func deviceNumber(_ name: String) throws(ConsoleBodyError) -> Int {
        let value = try number(name)
        guard value.rounded() == value, value >= 1, value <= 65_535 else {
            throw ConsoleBodyError(reason: "\"\(name)\" must be a device number (an integer from 1)")
        }
        return Int(value)
    }

    /// A JSON string.
    func string(_ name: String) throws(ConsoleBodyError) -> String {
        guard let value = object[name] else { throw ConsoleBodyError(reason: "missing field \"\(name)\"") }
        guard case .text(let text) = value else { throw ConsoleBodyError(reason: "\"\(name)\" must be a string") }
        return text
    }

    func flag(_ name: String) throws(ConsoleBodyError) -> Bool {
        guard let value = object[name] else { throw ConsoleBodyError(reason: "missing field \"\(name)\"") }
        guard case .flag(let flag) = value else { throw ConsoleBodyError(reason: "\"\(name)\" must be true or false") }
        return flag
    }
}
