/// A JSON value (RFC 8259 §3) as a document held it: a number keeps the text it was written as (a message can quote
/// it: "not 2.5"), and `true` is never taken for `1`. Read by ``JSONReader``, written by ``JSONWriter``; also
/// `Decodable`, so that a property list can be shown as JSON.
enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    /// The number's text (RFC 8259 §6 grammar).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The number's value, nil for anything else.
    var double: Double? {
        if case .number(let text) = self { Double(text) } else { nil }
    }
}

extension JSONValue: Decodable {
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let integer = try? container.decode(Int64.self) {
            self = .number(String(integer))
        } else if let number = try? container.decode(Double.self) {
            self = .number(JSONWriter.text(of: number) ?? "null")
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let object = try? container.decode([String: JSONValue].self) {
            self = .object(object)
        } else {
            self = .array(try container.decode([JSONValue].self))
        }
    }
}
