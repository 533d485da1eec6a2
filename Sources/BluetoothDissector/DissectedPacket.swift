public import BluetoothCore

/// A recognised packet: its kind, its field-by-field description, and the bytes our encoder produces for the
/// decoded value (equal to the input for every well-formed packet; interop checks compare them).
public struct DissectedPacket: Sendable, Hashable {
    public var kind: PacketKind
    public var bytes: [UInt8]
    public var dissection: Dissection
    /// The decoded value encoded again, when the codec has an encoder for it.
    public var reencoded: [UInt8]?

    public init(kind: PacketKind, bytes: [UInt8], dissection: Dissection, reencoded: [UInt8]?) {
        self.kind = kind
        self.bytes = bytes
        self.dissection = dissection
        self.reencoded = reencoded
    }

    /// `{"kind": "att", "bytes": "0a0300", "reencoded": "0a0300", "dissection": {...}}`.
    public func renderJSON() -> String {
        var out = "{\"kind\":" + Dissection.jsonString(kind.rawValue)
        out += ",\"bytes\":" + Dissection.jsonString(Hex.encode(bytes))
        if let reencoded { out += ",\"reencoded\":" + Dissection.jsonString(Hex.encode(reencoded)) }
        out += ",\"dissection\":" + dissection.renderJSON() + "}"
        return out
    }
}
