/// The external appearance of a device (Core Specification Supplement Part A §1.12; values from the SIG's
/// appearance_values.yaml): a 10-bit category and a 6-bit sub-category.
public struct Appearance: RawRepresentable, Hashable, Sendable, CustomStringConvertible, Codable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// Bits 15...6.
    public var category: UInt16 { rawValue >> 6 }
    /// Bits 5...0.
    public var subcategory: UInt8 { UInt8(rawValue & 0x3F) }

    /// "Watch: Sports Watch", "Phone", or nil when the category is not assigned.
    public var name: String? {
        guard let categoryName = AssignedNumbers.appearanceCategoryNames[category] else { return nil }
        if subcategory == 0 { return categoryName }
        let subName = AssignedNumbers.appearanceSubcategoryNames[rawValue] ?? "sub-category \(subcategory)"
        return "\(categoryName): \(subName)"
    }

    public var description: String {
        let digits = String(rawValue, radix: 16, uppercase: true)
        let hex = "0x" + String(repeating: "0", count: 4 - digits.count) + digits
        return name.map { "\($0) (\(hex))" } ?? "Unknown appearance (\(hex))"
    }

    public static let unknown = Appearance(0x0000)
    public static let genericHeartRateSensor = Appearance(0x0340)
}
