import BluetoothCore

/// What a server does with the bytes of one PDU received from a client: decode, check the table and the handle
/// rules, and say whether to process it, answer it with an Error Response, or drop it
/// (Core 5.4 Vol 3 Part F §3.3 and §3.4.1.1).
public enum ATTServerInput: Hashable, Sendable {
    /// A well-formed PDU for the server to process.
    case process(ATTPDU)
    /// A request the server must refuse: send this Error Response (Request Not Supported, Invalid PDU or
    /// Invalid Handle).
    case respond(ATTPDU)
    /// Nothing is sent: a malformed or unknown command, or a malformed PDU that is not a request.
    case ignore(reason: String)

    /// Classifies `bytes` received on the ATT bearer by a server.
    public init(classifying bytes: [UInt8]) {
        self.init(classifying: bytes[...])
    }

    /// Classifies `bytes` received on the ATT bearer by a server (a slice of the frame that carried them).
    public init(classifying bytes: ArraySlice<UInt8>) {
        let pdu: ATTPDU
        do {
            pdu = try ATTPDU(decoding: bytes)
        } catch {
            if let answer = ATTPDU.errorResponse(answeringUndecodable: bytes) {
                self = .respond(answer)
            } else {
                self = .ignore(reason: error.description)
            }
            return
        }
        do {
            try pdu.validate()
            self = .process(pdu)
        } catch {
            if let answer = error.errorResponse {
                self = .respond(answer)
            } else {
                self = .ignore(reason: error.description)
            }
        }
    }
}
