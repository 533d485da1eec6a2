/// Why the bond store could not read or write a bond. `path` names the file when there is one.
public struct BondStoreError: Error, Hashable, Sendable, CustomStringConvertible, Codable {
    public enum Code: String, Hashable, Sendable, Codable {
        /// A stored bond does not parse; the file is left as it is.
        case corrupt
        /// Reading, writing, renaming or creating the directory failed.
        case ioFailed
        /// No bond for that identity.
        case notFound
    }

    public var code: Code
    public var reason: String
    public var path: String?

    public init(_ code: Code, _ reason: String, path: String? = nil) {
        self.code = code
        self.reason = reason
        self.path = path
    }

    public var description: String { "\(code.rawValue): \(path.map { "\($0): " } ?? "")\(reason)" }
}
