/// How many value octets fit in each ATT PDU for a given ATT_MTU (Core 5.4 Vol 3 Part F §3.2.8, §3.2.9 and the
/// parameter tables of §3.4). Pure functions; an `mtu` below the LE minimum of 23 is treated as 23.
public enum ATTMTU {
    /// ATT_MTU before any exchange on the LE fixed channel (§3.2.8, "ATT_MTU default value").
    public static let leDefault = 23
    /// The longest attribute value (§3.2.9).
    public static let maximumAttributeValueLength = 512
    /// The largest value octets of a Read By Type Response element (the Length octet holds handle + value).
    public static let maximumReadByTypeElementValue = 253
    /// The largest value octets of a Read By Group Type Response element.
    public static let maximumReadByGroupTypeElementValue = 251

    /// `mtu`, raised to the LE default when smaller.
    public static func clamped(_ mtu: Int) -> Int { max(mtu, leDefault) }

    /// The ATT_MTU both sides use after an Exchange MTU: the smaller Rx MTU, at least 23 (§3.4.2.2).
    public static func negotiated(clientRxMTU: UInt16, serverRxMTU: UInt16) -> Int {
        clamped(Int(min(clientRxMTU, serverRxMTU)))
    }

    /// Handle Value Notification / Indication value: ATT_MTU − 3.
    public static func maximumNotificationValueLength(mtu: Int) -> Int { clamped(mtu) - 3 }
    /// Handle Value Indication value: ATT_MTU − 3.
    public static func maximumIndicationValueLength(mtu: Int) -> Int { clamped(mtu) - 3 }
    /// Write Request / Write Command value: ATT_MTU − 3.
    public static func maximumWriteValueLength(mtu: Int) -> Int { clamped(mtu) - 3 }
    /// Signed Write Command value: ATT_MTU − 15 (handle and 12-octet signature).
    public static func maximumSignedWriteValueLength(mtu: Int) -> Int { clamped(mtu) - 15 }
    /// Prepare Write Request / Response part value: ATT_MTU − 5.
    public static func maximumPrepareWriteValueLength(mtu: Int) -> Int { clamped(mtu) - 5 }
    /// Read Response / Read Blob Response value: ATT_MTU − 1.
    public static func maximumReadResponseValueLength(mtu: Int) -> Int { clamped(mtu) - 1 }
    /// Read Multiple Response set of values: ATT_MTU − 1.
    public static func maximumReadMultipleResponseLength(mtu: Int) -> Int { clamped(mtu) - 1 }
    /// Find By Type Value Request attribute value: ATT_MTU − 7.
    public static func maximumFindByTypeValueLength(mtu: Int) -> Int { clamped(mtu) - 7 }
    /// Read By Type Response element value: min(ATT_MTU − 4, 253).
    public static func maximumReadByTypeElementValueLength(mtu: Int) -> Int {
        min(clamped(mtu) - 4, maximumReadByTypeElementValue)
    }
    /// Read By Group Type Response element value: min(ATT_MTU − 6, 251).
    public static func maximumReadByGroupTypeElementValueLength(mtu: Int) -> Int {
        min(clamped(mtu) - 6, maximumReadByGroupTypeElementValue)
    }
    /// Find By Type Value Response: how many 4-octet handles-information entries fit, (ATT_MTU − 1) / 4.
    public static func maximumHandlesInformationCount(mtu: Int) -> Int { (clamped(mtu) - 1) / 4 }
    /// Read Multiple / Read Multiple Variable Request: how many handles fit, (ATT_MTU − 1) / 2.
    public static func maximumReadMultipleHandleCount(mtu: Int) -> Int { (clamped(mtu) - 1) / 2 }

    /// A Read Response value for an attribute value read from `offset` (0 for Read, the offset for Read Blob):
    /// the octets from `offset`, cut to ATT_MTU − 1. Nil when `offset` is past the end of the value (the server
    /// answers *Invalid Offset*).
    public static func readResponseValue(_ value: [UInt8], offset: Int = 0, mtu: Int) -> [UInt8]? {
        guard offset >= 0, offset <= value.count else { return nil }
        return Array(value[offset...].prefix(maximumReadResponseValueLength(mtu: mtu)))
    }

    /// The Handles Information List a server sends for `found` with `mtu`: as many entries as fit.
    public static func packingHandlesInformation(_ found: some Sequence<ATTHandlesInformation>, mtu: Int) -> [ATTHandlesInformation] {
        Array(found.prefix(maximumHandlesInformationCount(mtu: mtu)))
    }
}
