/// Hexadecimal text, as users type it and as `blue` prints it.
public enum Hex {
    private static let digits: [Character] = Array("0123456789abcdef")

    /// `[0x01, 0xab]` → `"01ab"`, or `"01 ab"` with a separator.
    public static func encode(_ bytes: some Sequence<UInt8>, separator: String = "", uppercase: Bool = false) -> String {
        var out = ""
        var first = true
        for byte in bytes {
            if !first { out += separator }
            first = false
            let high = digits[Int(byte >> 4)]
            let low = digits[Int(byte & 0x0F)]
            out.append(uppercase ? Character(high.uppercased()) : high)
            out.append(uppercase ? Character(low.uppercased()) : low)
        }
        return out
    }

    /// Parses hexadecimal text. Whitespace, `:` `-` `_` separators and a leading `0x` are accepted; anything else
    /// gets a ``DecodeError`` naming the offending character's offset in the text.
    public static func decode(_ text: String) throws(DecodeError) -> [UInt8] {
        var bytes: [UInt8] = []
        var pending: UInt8? = nil
        var scalars = Array(text.unicodeScalars)
        var start = 0
        while start < scalars.count, scalars[start].properties.isWhitespace { start += 1 }
        if scalars.count >= start + 2, scalars[start] == "0", scalars[start + 1] == "x" || scalars[start + 1] == "X" {
            start += 2
        }
        scalars = Array(scalars[start...])
        for (index, scalar) in scalars.enumerated() {
            let nibble: UInt8
            switch scalar {
            case "0"..."9": nibble = UInt8(scalar.value - 48)
            case "a"..."f": nibble = UInt8(scalar.value - 87)
            case "A"..."F": nibble = UInt8(scalar.value - 55)
            case " ", "\t", "\n", "\r", ":", "-", "_":
                guard pending == nil else {
                    throw DecodeError(.malformedText, at: start + index, "separator inside a byte (odd digit before it)")
                }
                continue
            default:
                throw DecodeError(.malformedText, at: start + index, "expected a hex digit, found '\(scalar)'")
            }
            if let high = pending {
                bytes.append(high << 4 | nibble)
                pending = nil
            } else {
                pending = nibble
            }
        }
        guard pending == nil else {
            throw DecodeError(.malformedText, at: start + scalars.count, "odd number of hex digits")
        }
        return bytes
    }
}
