import BluetoothCore
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Turns characteristic and descriptor values into words: the SIG formats blue knows (GATT Specification
/// Supplement: Battery Level, Heart Rate Measurement, Body Sensor Location, Temperature, Humidity, Appearance; Core
/// 5.4 Vol 3 Part G §3.3.3 descriptors), UTF-8 text when the bytes are printable, binary property lists (the
/// seed apps' payloads), else nothing (the hex stands alone).
enum ValueDecoding {
    /// A short description of `value` read from an attribute of type `uuid`, or nil when there is nothing to say
    /// beyond the hex.
    static func describe(_ value: [UInt8], uuid: BluetoothUUID) -> String? {
        if let short = uuid.uuid16, let known = describeKnown(value, uuid16: short) { return known }
        if let plist = propertyList(value) { return plist }
        if let text = printableText(value) { return "\"\(text)\"" }
        return nil
    }

    /// The bytes as text when they are non-empty UTF-8 with no control characters (tab and newline allowed).
    static func printableText(_ value: [UInt8]) -> String? {
        guard !value.isEmpty, let text = String(validating: value, as: UTF8.self) else { return nil }
        let printable = text.unicodeScalars.allSatisfy { scalar in
            scalar == "\t" || scalar == "\n" || (scalar.value >= 0x20 && scalar.value != 0x7F)
        }
        return printable ? text : nil
    }

    /// Space-separated lowercase hex ("01 02 ff"); "(empty)" for no bytes.
    static func hex(_ value: [UInt8]) -> String {
        value.isEmpty ? "(empty)" : value.map { Hex.encode([$0]) }.joined(separator: " ")
    }

    /// A binary property list (`bplist00`), shown as JSON when it converts ({"Hello":"Darkness"}).
    static func propertyList(_ value: [UInt8]) -> String? {
        guard value.count > 8, value.starts(with: Array("bplist00".utf8)) else { return nil }
        // Decoded as JSON's values: a property list holding data or dates does not convert, and is shown as bytes.
        guard let object = try? PropertyListDecoder().decode(JSONValue.self, from: Data(value)),
              let text = JSONWriter.text(object, escapingSlashes: true) else {
            return nil
        }
        return "plist " + text
    }

    private static func uint16(_ value: [UInt8], at index: Int) -> UInt16? {
        guard index >= 0, index + 1 < value.count else { return nil }
        return UInt16(value[index]) | UInt16(value[index + 1]) << 8
    }

    static let bodySensorLocations = ["Other", "Chest", "Wrist", "Finger", "Hand", "Ear Lobe", "Foot"]

    private static func describeKnown(_ value: [UInt8], uuid16: UInt16) -> String? {
        switch uuid16 {
        case 0x2A19:  // Battery Level
            guard value.count == 1 else { return nil }
            return "\(value[0]) %"
        case 0x2A37:
            return heartRateMeasurement(value)
        case 0x2A38:  // Body Sensor Location
            guard value.count == 1 else { return nil }
            let index = Int(value[0])
            return index < bodySensorLocations.count ? bodySensorLocations[index] : "Reserved (\(value[0]))"
        case 0x2A01:  // Appearance
            guard let raw = uint16(value, at: 0), value.count == 2 else { return nil }
            return Appearance(rawValue: raw).description
        case 0x2A6E:  // Temperature, sint16 in 0.01 °C
            guard let raw = uint16(value, at: 0), value.count == 2 else { return nil }
            return TextFormat.printf("%.2f °C", Double(Int16(bitPattern: raw)) / 100)
        case 0x2A6F:  // Humidity, uint16 in 0.01 %
            guard let raw = uint16(value, at: 0), value.count == 2 else { return nil }
            return TextFormat.printf("%.2f %%", Double(raw) / 100)
        case 0x2902:  // Client Characteristic Configuration
            guard let raw = uint16(value, at: 0), value.count == 2 else { return nil }
            var parts: [String] = []
            if raw & 1 != 0 { parts.append("notifications") }
            if raw & 2 != 0 { parts.append("indications") }
            return parts.isEmpty ? "off" : parts.joined(separator: " + ")
        case 0x2900:  // Characteristic Extended Properties
            guard let raw = uint16(value, at: 0), value.count == 2 else { return nil }
            var parts: [String] = []
            if raw & 1 != 0 { parts.append("reliable write") }
            if raw & 2 != 0 { parts.append("writable auxiliaries") }
            return parts.isEmpty ? "none" : parts.joined(separator: ", ")
        case 0x2A05:  // Service Changed
            guard let start = uint16(value, at: 0), let end = uint16(value, at: 2), value.count == 4 else { return nil }
            return "handles \(Dissection.hex16(start))...\(Dissection.hex16(end))"
        default:
            return nil
        }
    }

    /// Heart Rate Measurement (GATT Specification Supplement §3.113): flags, 8- or 16-bit rate, sensor contact,
    /// energy expended, RR intervals (1/1024 s).
    static func heartRateMeasurement(_ value: [UInt8]) -> String? {
        guard let flags = value.first else { return nil }
        var index = 1
        let rate: Int
        if flags & 0x01 != 0 {
            guard let raw = uint16(value, at: index) else { return nil }
            rate = Int(raw)
            index += 2
        } else {
            guard index < value.count else { return nil }
            rate = Int(value[index])
            index += 1
        }
        var parts = ["\(rate) bpm"]
        switch (flags >> 1) & 0x03 {
        case 0x02: parts.append("no contact")
        case 0x03: parts.append("contact")
        default: break
        }
        if flags & 0x08 != 0 {
            guard let energy = uint16(value, at: index) else { return nil }
            parts.append("\(energy) kJ")
            index += 2
        }
        if flags & 0x10 != 0 {
            var intervals: [String] = []
            while let raw = uint16(value, at: index) {
                intervals.append(TextFormat.printf("%.3f s", Double(raw) / 1024))
                index += 2
            }
            if !intervals.isEmpty { parts.append("RR " + intervals.joined(separator: ", ")) }
        }
        guard index <= value.count else { return nil }
        return parts.joined(separator: ", ")
    }

    /// "2A37 Heart Rate Measurement", or the UUID alone when it has no SIG name.
    static func label(_ uuid: BluetoothUUID) -> String {
        if let name = uuid.assignedName { return "\(uuid.uuidString) \(name)" }
        return uuid.uuidString
    }

    /// Parses a value given on the command line: hex (spaces, colons and a 0x prefix allowed), or text.
    static func parseValue(_ text: String, asText: Bool) throws(CLIFailure) -> [UInt8] {
        if asText { return Array(text.utf8) }
        var cleaned = text
        if cleaned.hasPrefix("0x") || cleaned.hasPrefix("0X") { cleaned.removeFirst(2) }
        do {
            return try Hex.decode(cleaned)
        } catch {
            throw CLIFailure(.usage, "\"\(text)\" is not a hex value: \(error.reason) (use --text to write text)")
        }
    }
}
