public import BluetoothCore

/// The security a link must have for one kind of access to an attribute (Core 5.4 Vol 3 Part F §3.2.5
/// "Attribute permissions", Vol 3 Part C §10.3 "Authorization, authentication and encryption").
public struct GATTSecurityRequirement: Hashable, Sendable, Codable {
    /// The link must be encrypted.
    public var encryption: Bool
    /// The link must be encrypted with an authenticated (MITM-protected) key.
    public var authentication: Bool
    /// The application must have authorized the client (``GATTLinkSecurity/authorized``, or a dynamic handler).
    public var authorization: Bool
    /// The smallest encryption key size accepted, 7...16 octets (checked when encryption or authentication is
    /// required, or when this is above 7).
    public var minimumKeySize: Int

    public init(encryption: Bool = false, authentication: Bool = false, authorization: Bool = false, minimumKeySize: Int = 7) {
        self.encryption = encryption
        self.authentication = authentication
        self.authorization = authorization
        self.minimumKeySize = min(max(minimumKeySize, 7), 16)
    }

    /// No requirement.
    public static let none = GATTSecurityRequirement()
    /// An encrypted link.
    public static let encrypted = GATTSecurityRequirement(encryption: true)
    /// An encrypted link with an authenticated key.
    public static let authenticated = GATTSecurityRequirement(encryption: true, authentication: true)
    /// Application authorization only.
    public static let authorized = GATTSecurityRequirement(authorization: true)

    /// The error the server answers when `link` does not meet the requirement, or nil when it does.
    ///
    /// Order: authentication (*Insufficient Authentication* 0x05), then encryption (*Insufficient Encryption*
    /// 0x0F), then key size (*Insufficient Encryption Key Size* 0x0C), then authorization (*Insufficient
    /// Authorization* 0x08): the client first fixes what needs pairing, authorization last since it is the
    /// application's decision.
    public func error(for link: GATTLinkSecurity) -> ATTErrorCode? {
        if authentication && !(link.encrypted && link.authenticated) { return .insufficientAuthentication }
        if encryption && !link.encrypted { return .insufficientEncryption }
        if encryption || authentication || minimumKeySize > 7 {
            if !link.encrypted { return .insufficientEncryption }
            if link.keySize < minimumKeySize { return .insufficientEncryptionKeySize }
        }
        if authorization && !link.authorized { return .insufficientAuthorization }
        return nil
    }
}

/// The access permissions of an attribute: whether it can be read and written at all, and the security each
/// access requires (Core 5.4 Vol 3 Part F §3.2.5). Not readable ⇒ *Read Not Permitted* (0x02); not writable ⇒
/// *Write Not Permitted* (0x03).
public struct GATTPermissions: Hashable, Sendable, Codable {
    public var readable: Bool
    public var writable: Bool
    public var read: GATTSecurityRequirement
    public var write: GATTSecurityRequirement

    public init(readable: Bool, writable: Bool, read: GATTSecurityRequirement = .none, write: GATTSecurityRequirement = .none) {
        self.readable = readable
        self.writable = writable
        self.read = read
        self.write = write
    }

    public static let readOnly = GATTPermissions(readable: true, writable: false)
    public static let writeOnly = GATTPermissions(readable: false, writable: true)
    public static let readWrite = GATTPermissions(readable: true, writable: true)
    public static let none = GATTPermissions(readable: false, writable: false)

    /// The error for a read over `link`, or nil when allowed.
    public func readError(for link: GATTLinkSecurity) -> ATTErrorCode? {
        guard readable else { return .readNotPermitted }
        return read.error(for: link)
    }

    /// The error for a write over `link`, or nil when allowed.
    public func writeError(for link: GATTLinkSecurity) -> ATTErrorCode? {
        guard writable else { return .writeNotPermitted }
        return write.error(for: link)
    }
}

/// The security state of one connection, as the owner (Host, SMP) knows it: the input to every permission check
/// (Core 5.4 Vol 3 Part C §10.3).
public struct GATTLinkSecurity: Hashable, Sendable, Codable {
    /// The link is encrypted.
    public var encrypted: Bool
    /// The key encrypting the link was authenticated (MITM protection).
    public var authenticated: Bool
    /// The encryption key size in octets (0 when not encrypted).
    public var keySize: Int
    /// The application authorized this client.
    public var authorized: Bool

    public init(encrypted: Bool = false, authenticated: Bool = false, keySize: Int = 0, authorized: Bool = false) {
        self.encrypted = encrypted
        self.authenticated = authenticated
        self.keySize = keySize
        self.authorized = authorized
    }

    /// A new, unencrypted, unauthorized link.
    public static let open = GATTLinkSecurity()
}
