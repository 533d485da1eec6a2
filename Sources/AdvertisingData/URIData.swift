import BluetoothCore

/// The URI AD type (Core Specification Supplement Part A §1.18): a URI whose scheme is replaced by a code point
/// from the SIG's "URI Scheme Name String Mapping" (Assigned Numbers §2.7), written as one UTF-8 character
/// (0x16 → "http:", 0x17 → "https:"); the code 0x01 means "no scheme, the URI follows as is".
///
/// The octets are kept as received, so unknown scheme codes and invalid UTF-8 survive a round trip.
public struct URIData: Hashable, Sendable, CustomStringConvertible {
    /// The octets on the air (scheme code character, then the rest of the URI).
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Encodes a URI, replacing its scheme by the SIG code when the scheme is in the table (longest match),
    /// or prefixing the code 0x01 ("empty scheme name") otherwise.
    public init(_ uri: String) {
        var best: (code: UInt32, prefix: String)? = nil
        for (code, prefix) in Self.schemes where code != 0x01 && uri.hasPrefix(prefix) {
            if best == nil || prefix.count > (best?.prefix.count ?? 0) { best = (code, prefix) }
        }
        let code = best?.code ?? 0x01
        let rest = uri.utf8.dropFirst(best?.prefix.utf8.count ?? 0)
        var bytes: [UInt8] = []
        if let scalar = Unicode.Scalar(code) { bytes.append(contentsOf: String(scalar).utf8) }
        bytes.append(contentsOf: rest)
        self.bytes = bytes
    }

    /// The scheme code point (the first UTF-8 character), or nil when the octets do not start with one.
    public var schemeCode: UInt32? {
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        return text.unicodeScalars.first?.value
    }

    /// The scheme the code stands for ("https:"), "" for 0x01, nil when unknown.
    public var scheme: String? { schemeCode.flatMap { Self.schemes[$0] } }

    /// The full URI ("https://example.com"), or nil when the octets are not UTF-8 or the scheme code is unknown.
    public var uri: String? {
        guard let text = String(validating: bytes, as: UTF8.self), let first = text.unicodeScalars.first,
              let scheme = Self.schemes[first.value]
        else { return nil }
        return scheme + String(text.unicodeScalars.dropFirst())
    }

    /// The URI, or what is known of it: "unknown scheme 0x0099, rest \"//x\"".
    public var description: String {
        if let uri { return uri }
        guard let text = String(validating: bytes, as: UTF8.self), let first = text.unicodeScalars.first else {
            return "invalid URI data: \(Dissection.bytes(bytes))"
        }
        let digits = String(first.value, radix: 16, uppercase: true)
        let code = "0x" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        return "unknown scheme \(code), rest \"\(String(text.unicodeScalars.dropFirst()))\""
    }

    /// The URI scheme name string mapping (Assigned Numbers, URI schemes), first entries.
    public static let schemes: [UInt32: String] = [
        0x01: "",
        0x02: "aaa:", 0x03: "aaas:", 0x04: "about:", 0x05: "acap:", 0x06: "acct:", 0x07: "cap:", 0x08: "cid:",
        0x09: "coap:", 0x0A: "coaps:", 0x0B: "crid:", 0x0C: "data:", 0x0D: "dav:", 0x0E: "dict:", 0x0F: "dns:",
        0x10: "file:", 0x11: "ftp:", 0x12: "geo:", 0x13: "go:", 0x14: "gopher:", 0x15: "h323:", 0x16: "http:",
        0x17: "https:",
    ]
}
