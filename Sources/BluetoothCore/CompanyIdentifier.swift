/// A company identifier, as carried in manufacturer specific data and the LL/LMP version (Bluetooth SIG assigned
/// numbers, company_identifiers.yaml). `CompanyIdentifier(0x004C)` prints "Apple, Inc. (0x004C)".
public struct CompanyIdentifier: OpenCode, Codable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }
    public static let codeKind = "company"
    public static var names: [UInt16: String] { AssignedNumbers.companyNames }

    public static let apple = CompanyIdentifier(0x004C)
    public static let google = CompanyIdentifier(0x00E0)
    public static let microsoft = CompanyIdentifier(0x0006)
    public static let nordicSemiconductor = CompanyIdentifier(0x0059)
    /// Reserved for testing (Bluetooth SIG).
    public static let testing = CompanyIdentifier(0xFFFF)
}
