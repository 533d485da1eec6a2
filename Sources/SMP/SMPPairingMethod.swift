/// The association model chosen for a pairing, Core 5.4 Vol 3 Part H §2.3.5.1 (Tables 2.6, 2.7 and 2.8).
public enum SMPPairingMethod: Hashable, Sendable, CustomStringConvertible, Codable {
    /// Just Works (TK = 0 for legacy; no MITM protection).
    case justWorks
    /// Numeric Comparison (LE Secure Connections only): both sides show a six-digit value and the user confirms.
    case numericComparison
    /// Passkey Entry: who shows the passkey and who types it.
    case passkeyEntry(SMPPasskeyEntryRoles)
    /// Out of band data.
    case outOfBand

    /// Whether the method gives MITM protection (authenticated keys).
    public var isAuthenticated: Bool { self != .justWorks }

    public var description: String {
        switch self {
        case .justWorks: "Just Works"
        case .numericComparison: "Numeric Comparison"
        case .passkeyEntry(let roles): "Passkey Entry (\(roles))"
        case .outOfBand: "OOB"
        }
    }

    /// Selects the method from the two pairing feature PDUs (§2.3.5.1).
    ///
    /// Legacy pairing uses OOB when both devices have OOB data, LE Secure Connections when either has; otherwise Just
    /// Works when neither sets MITM; otherwise the IO capability table (Table 2.8), where LE Secure Connections turns
    /// the DisplayYesNo/KeyboardDisplay pairs into Numeric Comparison. Reserved IO capabilities are rejected
    /// earlier (Invalid Parameters); here they count as NoInputNoOutput.
    public static func select(
        initiator: SMPPairingParameters, responder: SMPPairingParameters, secureConnections: Bool
    ) -> SMPPairingMethod {
        let initiatorOOB = initiator.oobDataFlag == .present
        let responderOOB = responder.oobDataFlag == .present
        if secureConnections ? (initiatorOOB || responderOOB) : (initiatorOOB && responderOOB) {
            return .outOfBand
        }
        let mitm =
            initiator.authenticationRequirements.contains(.mitm) || responder.authenticationRequirements.contains(.mitm)
        guard mitm else { return .justWorks }
        return ioCapabilityMethod(
            initiator: initiator.ioCapability, responder: responder.ioCapability, secureConnections: secureConnections)
    }

    /// Table 2.8: the method from the two IO capabilities when MITM is wanted and there is no OOB data.
    public static func ioCapabilityMethod(
        initiator: SMPIOCapability, responder: SMPIOCapability, secureConnections: Bool
    ) -> SMPPairingMethod {
        let displayOnly = SMPIOCapability.displayOnly.rawValue
        let displayYesNo = SMPIOCapability.displayYesNo.rawValue
        let keyboardOnly = SMPIOCapability.keyboardOnly.rawValue
        let keyboardDisplay = SMPIOCapability.keyboardDisplay.rawValue
        let i = initiator.rawValue
        let r = responder.rawValue
        let known: ClosedRange<UInt8> = 0...4
        guard known.contains(i), known.contains(r), i != SMPIOCapability.noInputNoOutput.rawValue,
            r != SMPIOCapability.noInputNoOutput.rawValue
        else { return .justWorks }
        switch (i, r) {
        case (displayOnly, displayOnly), (displayOnly, displayYesNo), (displayYesNo, displayOnly):
            return .justWorks
        case (displayYesNo, displayYesNo):
            return secureConnections ? .numericComparison : .justWorks
        case (displayOnly, keyboardOnly), (displayOnly, keyboardDisplay), (displayYesNo, keyboardOnly),
            (keyboardDisplay, keyboardOnly):
            return .passkeyEntry(.initiatorDisplays)
        case (displayYesNo, keyboardDisplay):
            return secureConnections ? .numericComparison : .passkeyEntry(.initiatorDisplays)
        case (keyboardOnly, displayOnly), (keyboardOnly, displayYesNo), (keyboardOnly, keyboardDisplay),
            (keyboardDisplay, displayOnly):
            return .passkeyEntry(.responderDisplays)
        case (keyboardDisplay, displayYesNo), (keyboardDisplay, keyboardDisplay):
            return secureConnections ? .numericComparison : .passkeyEntry(.responderDisplays)
        case (keyboardOnly, keyboardOnly):
            return .passkeyEntry(.bothInput)
        default:
            return .justWorks
        }
    }
}

/// Who displays and who inputs the passkey (Core 5.4 Vol 3 Part H §2.3.5.1 Table 2.8).
public enum SMPPasskeyEntryRoles: Hashable, Sendable, CustomStringConvertible, Codable {
    /// The initiator (central) displays, the responder inputs.
    case initiatorDisplays
    /// The responder (peripheral) displays, the initiator inputs.
    case responderDisplays
    /// Both input the same passkey (KeyboardOnly on both sides).
    case bothInput

    public var description: String {
        switch self {
        case .initiatorDisplays: "initiator displays, responder inputs"
        case .responderDisplays: "responder displays, initiator inputs"
        case .bothInput: "both input"
        }
    }
}
