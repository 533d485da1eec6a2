import ATT
import BluetoothCore
import BluetoothCrypto
import GATT

/// Data signing for Signed Write Command (Core 5.4 Vol 3 Part H §2.4.5 data signing, Vol 3 Part F §3.4.5.4
/// Signed Write Command, Vol 3 Part G §4.9.2 Signed Write Without Response, Vol 3 Part C §10.4 data signing).
///
/// Installed by the security layer, on the host's event loop, whenever a connection's peer is bonded (link up
/// with a known bond, or pairing that stored one):
/// - the connection's GATT client gets a signer using OUR CSRK (``Bond/localSignatureKey``) and the bond's
///   ``Bond/localSignCounter``, incremented and persisted on each signed write;
/// - the local GATT server gets a verifier (once, unless one is already set) that checks a Signed Write Command
///   against the PEER's CSRK (``Bond/peerSignatureKey``) and accepts it only when its SignCounter is greater than
///   the last one accepted (``Bond/peerSignCounter``, persisted). A bad MAC or a replayed counter makes the
///   server drop the command silently (it is a command: no response, §3.4.5.4).
///
/// Both closures run on the loop (the client signs when the procedure starts, the server verifies while handling
/// the command); they hold the stack weakly.
extension HostStack {
    /// Sets the connection's signer and the server's verifier when its peer is bonded (called on the loop).
    func installSigning(_ handle: UInt16) {
        guard let identity = connections[handle]?.session?.securityLink?.identity,
              let bond = securityState.bonds[identity] else { return }
        if bond.localSignatureKey != nil {
            withBearer(handle, .fixed) {
                $0.client.signer = { [weak self] message in self?.signWithBond(identity: identity, message: message) }
            }
        }
        if bond.peerSignatureKey != nil, gattServer.signatureVerifier == nil {
            gattServer.signatureVerifier = { [weak self] connection, message, signature in
                self?.verifySignedWrite(connection: connection, message: message, signature: signature) ?? .rejected(.noVerifier)
            }
        }
    }

    /// Signs `message` with our CSRK and the bond's next SignCounter, then counts it (persisted). Nil without a
    /// CSRK or once the counter is exhausted (Vol 3 Part H §2.4.5: a counter value is never reused).
    func signWithBond(identity: BluetoothAddress, message: [UInt8]) -> ATTAuthenticationSignature? {
        guard var bond = securityState.bonds[identity], let csrk = bond.localSignatureKey,
              bond.localSignCounter < UInt32.max else { return nil }
        let counter = bond.localSignCounter
        guard let bytes = try? DataSigning.sign(message: message, signCounter: counter, csrk: csrk),
              let signature = ATTAuthenticationSignature(bytes: bytes) else { return nil }
        bond.localSignCounter = counter + 1
        securityState.bonds[identity] = bond
        persist(bond)
        return signature
    }

    /// Checks a Signed Write Command from `connection` against its bonded peer's CSRK; a valid one whose counter
    /// is greater than the last accepted is accepted, and its counter stored (persisted). Rejected as
    /// ``GATTSignedWriteRejection/badSignature`` when the peer is not bonded with a CSRK or the MAC is wrong, as
    /// ``GATTSignedWriteRejection/replayedCounter`` when the MAC is right but the counter does not increase.
    func verifySignedWrite(connection: GATTConnectionID, message: [UInt8], signature: ATTAuthenticationSignature) -> GATTSignatureVerdict {
        guard let identity = connections[connection.rawValue]?.session?.securityLink?.identity,
              var bond = securityState.bonds[identity], let csrk = bond.peerSignatureKey,
              let counter = try? DataSigning.verify(message: message, signature: signature.bytes, csrk: csrk) else {
            return .rejected(.badSignature)
        }
        if let last = bond.peerSignCounter, counter <= last { return .rejected(.replayedCounter) }
        bond.peerSignCounter = counter
        securityState.bonds[identity] = bond
        persist(bond)
        return .accepted
    }
}
