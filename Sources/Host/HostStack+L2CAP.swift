import BluetoothCore
public import L2CAP
public import BluetoothEngine

/// The L2CAP API of the host (Core 5.4 Vol 3 Part A): LE credit-based connection-oriented channels (§4.22–§4.24,
/// §10.1) and the Connection Parameter Update procedure (§4.20, §4.21). Callable from any thread; completions and
/// events run on the host's loop. Channels are named by (connection handle, local CID).
extension HostStack {
    // MARK: Servers

    /// Accepts LE Credit Based Connection Requests on `server.psm` on every connection, present and future.
    /// Incoming channels are reported as ``HostEvent/l2capChannelOpened(handle:_:)``. With `requiresEncryption`,
    /// a request on a link that is not encrypted is refused before the server's own policy is asked (Core 5.4
    /// Vol 3 Part A §4.23): Insufficient Encryption (0x0008) when the peer is bonded (it can encrypt and ask
    /// again), else Insufficient Authentication (0x0005: pair first), as Linux's l2cap_le_connect_req does.
    public func registerL2CAPServer(_ server: L2CAPChannelServer, requiresEncryption: Bool = false,
                                    completion: (@Sendable (Result<Void, L2CAPLinkError>) -> Void)? = nil) {
        onLoop { [self] in
            do throws(L2CAPLinkError) {
                var probe = L2CAPLink(role: .central)
                try probe.registerServer(server)
                guard channelServers[server.psm] == nil else {
                    throw L2CAPLinkError(.psmInUse, "a server is already registered on PSM \(server.psm)")
                }
                guard server.psm != Self.enhancedATTPSM || configuration.enhancedATTBearerCount == 0 else {
                    throw L2CAPLinkError(.psmInUse, "PSM 0x0027 carries the host's Enhanced ATT bearers")
                }
            } catch {
                completion?(.failure(error))
                return
            }
            channelServers[server.psm] = server
            if requiresEncryption { encryptedChannelServers.insert(server.psm) } else { encryptedChannelServers.remove(server.psm) }
            for handle in connections.keys {
                try? connections[handle]?.session?.link.registerServer(serverOnLink(server, handle))
            }
            completion?(.success(()))
        }
    }

    /// Stops accepting on `psm` (open channels stay open).
    public func unregisterL2CAPServer(psm: UInt16) {
        onLoop { [self] in
            channelServers[psm] = nil
            encryptedChannelServers.remove(psm)
            for handle in connections.keys { connections[handle]?.session?.link.unregisterServer(psm: psm) }
        }
    }

    /// `server` as registered on connection `handle`'s link: its accept policy behind the encryption check when
    /// the server requires an encrypted link. On the loop (the policy runs there, synchronously).
    func serverOnLink(_ server: L2CAPChannelServer, _ handle: UInt16) -> L2CAPChannelServer {
        guard encryptedChannelServers.contains(server.psm) else { return server }
        var guarded = server
        let policy = server.acceptPolicy
        guarded.acceptPolicy = .decide { [unowned self] request in
            guard let connection = connections[handle]?.connection, connection.isEncrypted else {
                let bonded = connections[handle]?.session?.securityLink?.identity.flatMap { securityState.bonds[$0] } != nil
                return bonded ? .allConnectionsRefusedInsufficientEncryption : .allConnectionsRefusedInsufficientAuthentication
            }
            switch policy {
            case .acceptAll: return .successful
            case .refuseAll(let result): return result
            case .decide(let decide): return decide(request)
            }
        }
        return guarded
    }

    // MARK: Channels

    /// Opens a credit-based channel to `psm` on the connection (LE Credit Based Connection Request). Completes
    /// with the channel once the peer accepted (``HostEvent/l2capChannelOpened(handle:_:)`` is also emitted), or
    /// fails: refused, timed out (30 s), invalid parameters, disconnected.
    public func openL2CAPChannel(connectionHandle handle: UInt16, psm: UInt16, mtu: UInt16 = 2048, mps: UInt16 = 247,
                                 initialCredits: UInt16 = 16, creditPolicy: L2CAPChannelCreditPolicy = .automatic(),
                                 completion: @escaping @Sendable (Result<L2CAPChannelInfo, HostError>) -> Void) {
        onLoop { [self] in
            guard connections[handle]?.session != nil else { return completion(.failure(unknownConnection(handle))) }
            let opened: (channel: L2CAPChannelIdentifier, actions: [L2CAPLinkAction])?
            do {
                opened = try connections[handle]?.session?.link.connect(
                    psm: psm, mtu: mtu, mps: mps, initialCredits: initialCredits, creditPolicy: creditPolicy,
                    now: eventLoop.now)
            } catch {
                return completion(.failure(HostError(.invalidParameters, "\(error)")))
            }
            guard let opened else { return completion(.failure(unknownConnection(handle))) }
            connections[handle]?.session?.channelOpens[opened.channel] = completion
            performLink(opened.actions, handle)
            armTimer()
        }
    }

    /// Sends one SDU on an open channel: segmented into K-frames sent as credits allow (the rest wait in the
    /// channel). Completes once its last K-frame left the channel's queue for the controller (at once when the
    /// peer's credits covered it, else when credits drained the queue), so a sender that awaits each completion
    /// holds at most one SDU in the host; fails at once for an unknown or closed channel or an SDU larger than the
    /// peer's MTU, and later when the channel or the link ends before the SDU went out.
    public func sendL2CAPSDU(connectionHandle handle: UInt16, channel: L2CAPChannelIdentifier, _ sdu: [UInt8],
                             completion: (@Sendable (Result<Void, HostError>) -> Void)? = nil) {
        onLoop { [self] in
            guard connections[handle]?.session != nil else {
                completion?(.failure(unknownConnection(handle)))
                return
            }
            do {
                guard let actions = try connections[handle]?.session?.link.send(sdu: sdu, on: channel) else { return }
                performLink(actions, handle)
                guard let completion else { return }
                if connections[handle]?.session?.link.queuedFrameCount(on: channel) ?? 0 > 0 {
                    connections[handle]?.session?.channelSends[channel, default: []].append(completion)
                } else {
                    completion(.success(()))
                }
            } catch {
                completion?(.failure(HostError(.invalidParameters, "\(error)")))
            }
        }
    }

    /// Gives the peer more credits on a channel with the manual credit policy (Flow Control Credit Indication).
    public func giveL2CAPCredits(connectionHandle handle: UInt16, channel: L2CAPChannelIdentifier, _ credits: UInt16,
                                 completion: (@Sendable (Result<Void, HostError>) -> Void)? = nil) {
        onLoop { [self] in
            do {
                guard let actions = try connections[handle]?.session?.link.giveCredits(credits, on: channel) else {
                    completion?(.failure(unknownConnection(handle)))
                    return
                }
                performLink(actions, handle)
                completion?(.success(()))
            } catch {
                completion?(.failure(HostError(.invalidParameters, "\(error)")))
            }
        }
    }

    /// Closes a channel (Disconnection Request); completes when the peer answered (or after the 30 s signaling
    /// timeout, the channel closed anyway). ``HostEvent/l2capChannelClosed(handle:channel:_:)`` is also emitted.
    public func closeL2CAPChannel(connectionHandle handle: UInt16, channel: L2CAPChannelIdentifier,
                                  completion: (@Sendable (Result<Void, HostError>) -> Void)? = nil) {
        onLoop { [self] in
            do {
                guard let actions = try connections[handle]?.session?.link.disconnect(channel: channel, now: eventLoop.now) else {
                    completion?(.failure(unknownConnection(handle)))
                    return
                }
                if let completion { connections[handle]?.session?.channelCloses[channel, default: []].append(completion) }
                performLink(actions, handle)
                armTimer()
            } catch {
                completion?(.failure(HostError(.invalidParameters, "\(error)")))
            }
        }
    }

    /// What the link knows of an open channel (read on the loop).
    public func l2capChannel(connectionHandle handle: UInt16, channel: L2CAPChannelIdentifier) -> L2CAPChannelInfo? {
        connections[handle]?.session?.link.channelInfo(channel)
    }

    // MARK: Connection parameters (Peripheral → Central)

    /// Peripheral: asks the central for new connection parameters over L2CAP (Connection Parameter Update
    /// Request, §4.20). Completes with whether the central accepted; the new parameters then arrive as
    /// ``HostEvent/connectionUpdated(_:)``. (The central's side is automatic: it issues LE Connection Update when
    /// ``HostConfiguration/acceptsConnectionParameterRequests`` and answers accepted if the controller took it.)
    public func requestConnectionParameterUpdate(connectionHandle handle: UInt16,
                                                 _ request: L2CAPConnectionParameterUpdateRequest,
                                                 completion: (@Sendable (Result<Bool, HostError>) -> Void)? = nil) {
        onLoop { [self] in
            do {
                guard let actions = try connections[handle]?.session?.link.requestConnectionParameterUpdate(request, now: eventLoop.now)
                else {
                    completion?(.failure(unknownConnection(handle)))
                    return
                }
                connections[handle]?.session?.parameterUpdates.append { completion?($0) }
                performLink(actions, handle)
                armTimer()
            } catch {
                completion?(.failure(HostError(.invalidParameters, "\(error)")))
            }
        }
    }
}
