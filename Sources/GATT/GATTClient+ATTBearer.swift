public import ATT

extension GATTClient {
    /// Feeds what the ``ATTBearer`` reported for the request this client sent (its
    /// ``ATTBearerAction/response(_:_:)`` result), Core 5.4 Vol 3 Part F §3.3:
    /// - a response PDU: as ``receive(response:)``;
    /// - an Error Response (``ATTBearerError/Code/errorResponse``): as the Error Response naming the outstanding
    ///   request, with the peer's code and handle;
    /// - a transaction timeout or a closed bearer: ``bearerFailed(_:)`` (every procedure fails);
    /// - a request the bearer would not send (``ATTBearerError/Code/exceedsMTU``,
    ///   ``ATTBearerError/Code/invalidOperation``): the current procedure fails with
    ///   ``GATTClientError/requestRefused(_:)`` and the next one starts.
    ///
    /// The owner routes to this method only the results of requests it enqueued on the bearer for this client
    /// (it keeps the ``ATTBearerRequestID`` of each ``GATTClientAction/sendRequest(_:)``), not those of its own
    /// Exchange MTU Request.
    public mutating func receive(bearerResult: Result<ATTPDU, ATTBearerError>) -> [GATTClientAction] {
        switch bearerResult {
        case .success(let pdu):
            return receive(response: pdu)
        case .failure(let error):
            switch error.code {
            case .errorResponse:
                guard let request = outstandingRequest else { return receive(response: .writeResponse) }
                return receive(response: .errorResponse(requestOpcode: request.opcode, handle: error.handle, error: error.attError ?? .unlikelyError))
            case .transactionTimeout:
                return bearerFailed(.transactionTimeout)
            case .bearerClosed:
                return bearerFailed(.other(error.reason))
            case .exceedsMTU, .invalidOperation:
                return failOutstandingRequest(.requestRefused(error.description))
            }
        }
    }

    /// Feeds the held answer of the outstanding request (an Error Response with Insufficient Authentication /
    /// Encryption / Encryption Key Size) after the owner tried to secure the link for a retry and failed
    /// (Core 5.4 Vol 3 Part C §10.3.2): as ``receive(bearerResult:)``, except that the procedure failing with that
    /// ATT error fails with ``GATTClientError/securityFailed(_:handle:_:)`` instead, carrying `failure`.
    public mutating func receive(bearerResult: Result<ATTPDU, ATTBearerError>,
                                 securityFailure failure: GATTSecurityFailure) -> [GATTClientAction] {
        receive(bearerResult: bearerResult).map { action in
            guard case .complete(let id, .failure(.attError(let code, let handle))) = action else { return action }
            return .complete(id, .failure(.securityFailed(code, handle: handle, failure)))
        }
    }

    /// Handles the bearer actions meant for a GATT client: notifications and indications (passed on as
    /// ``GATTClientAction/notification(handle:value:)`` / ``GATTClientAction/indication(handle:value:)``), and
    /// ``ATTBearerAction/mtuChanged(_:)`` (sets ``mtu``). Returns nil for every other action, which the owner
    /// handles itself (``ATTBearerAction/response(_:_:)`` goes to ``receive(bearerResult:)`` once the owner has
    /// matched its identifier).
    public mutating func handle(bearerAction action: ATTBearerAction) -> [GATTClientAction]? {
        switch action {
        case .notification(let pdu), .indication(let pdu):
            return receive(serverPDU: pdu)
        case .mtuChanged(let newMTU):
            mtu = newMTU
            return []
        default:
            return nil
        }
    }
}
