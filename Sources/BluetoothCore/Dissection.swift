/// A decoded packet described field by field, the way `blue decode` and `blue snoop` print it: each node has a
/// label (the specification's field name), an optional value as text, and children for nested structures.
///
/// Every codec module makes its PDUs ``Dissectable``; the dissector only recognises which decoder applies.
public struct Dissection: Hashable, Sendable {
    /// The field name, e.g. "Opcode" or "ATT Read By Type Response".
    public var label: String
    /// The value as text, e.g. "0x0003" or "Heart Rate Measurement (0x2A37)"; nil for pure groupings.
    public var value: String?
    /// Nested fields.
    public var children: [Dissection]

    public init(_ label: String, _ value: String? = nil, _ children: [Dissection] = []) {
        self.label = label
        self.value = value
        self.children = children
    }

    /// Renders as indented text, one field per line.
    public func renderText(indent: Int = 0) -> String {
        var lines: [String] = []
        appendLines(into: &lines, depth: indent)
        return lines.joined(separator: "\n")
    }

    private func appendLines(into lines: inout [String], depth: Int) {
        let pad = String(repeating: "  ", count: depth)
        if let value {
            lines.append("\(pad)\(label): \(value)")
        } else {
            lines.append("\(pad)\(label)")
        }
        for child in children { child.appendLines(into: &lines, depth: depth + 1) }
    }

    /// Renders as JSON: `{"label": ..., "value": ..., "children": [...]}` (value and children omitted when empty).
    public func renderJSON() -> String {
        var out = "{\"label\":" + Self.jsonString(label)
        if let value { out += ",\"value\":" + Self.jsonString(value) }
        if !children.isEmpty {
            out += ",\"children\":[" + children.map { $0.renderJSON() }.joined(separator: ",") + "]"
        }
        return out + "}"
    }

    /// A JSON string literal with the escapes RFC 8259 requires.
    public static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// Something that can describe itself field by field.
public protocol Dissectable {
    /// The packet as a tree of named fields, spec names first.
    var dissection: Dissection { get }
}

extension Dissection {
    /// "0x002A" style text for handles and other 16-bit fields.
    public static func hex16(_ value: UInt16) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: 4 - digits.count) + digits
    }

    /// "0x2A" style text for 8-bit fields.
    public static func hex8(_ value: UInt8) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return "0x" + (digits.count == 1 ? "0" : "") + digits
    }

    /// Bytes as spaced hex with their count: "01 02 03 (3 bytes)".
    public static func bytes(_ bytes: [UInt8]) -> String {
        bytes.isEmpty ? "(empty)" : "\(Hex.encode(bytes, separator: " ")) (\(bytes.count) byte\(bytes.count == 1 ? "" : "s"))"
    }

    /// A UUID with its SIG name when it has one: "Heart Rate (0x180D)".
    public static func uuid(_ uuid: BluetoothUUID) -> String {
        if let name = uuid.assignedName, let short = uuid.uuid16 { return "\(name) (\(hex16(short)))" }
        return uuid.uuidString
    }
}

extension Dissection {
    /// The packet on one line, for logs: the label, then each field as `Label=value` (nested groups by their label),
    /// the opcode, code and length fields left out and long values cut at `maximumValueLength` characters with "…".
    /// "ATT Read Request Handle=0x0003".
    public func renderLine(maximumValueLength: Int = 48) -> String {
        var line = label + (value.map { " (\($0))" } ?? "")
        for child in children { child.appendFields(to: &line, maximumValueLength: maximumValueLength) }
        return line
    }

    /// Fields the label already says (the opcode, the event code, the packet type).
    private static let lineOmits: Set<String> = ["Opcode", "Code", "Event_Code", "Subevent_Code", "Packet Type"]

    private func appendFields(to line: inout String, maximumValueLength: Int) {
        if children.isEmpty {
            guard let value, !Self.lineOmits.contains(label), !label.hasSuffix("Length") else { return }
            let shown = value.count > maximumValueLength ? value.prefix(maximumValueLength) + "…" : Substring(value)
            line += " \(label.replacingSpaces)=\(shown)"
        } else {
            line += " " + label + (value.map { " (\($0))" } ?? "")
            for child in children { child.appendFields(to: &line, maximumValueLength: maximumValueLength) }
        }
    }
}

private extension String {
    var replacingSpaces: String { String(map { $0 == " " ? "_" : $0 }) }
}
