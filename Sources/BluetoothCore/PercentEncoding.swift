/// Percent-encoded text (RFC 3986 §2.1: an octet as "%" and two hex digits), as D-Bus addresses and URLs carry it.
/// Foundation's `removingPercentEncoding` without Foundation.
public enum PercentEncoding {
    /// `text` with its escapes decoded; nil when an escape is malformed or the octets are not UTF-8.
    public static func decode(_ text: some StringProtocol) -> String? {
        var bytes: [UInt8] = []
        var rest = Array(text.utf8)[...]
        while let byte = rest.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            let digits = rest.prefix(2)
            guard digits.count == 2, digits.allSatisfy({ Character(UnicodeScalar($0)).isHexDigit }),
                  let value = UInt8(String(decoding: digits, as: UTF8.self), radix: 16) else { return nil }
            bytes.append(value)
            rest = rest.dropFirst(2)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
