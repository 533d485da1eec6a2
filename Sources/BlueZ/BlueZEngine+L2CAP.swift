import BluetoothCore
import Dispatch
import SystemInterface
import DequeModule
package import L2CAP
package import BluetoothEngine

/// LE credit-based channels (Core 5.4 Vol 3 Part A §4.22) on bluetoothd's links: the kernel's L2CAP sockets,
/// a connecting socket to open one, a listening socket bound to the server's PSM to accept them
/// (``BlueZL2CAPListener``, kept by the engine). The kernel runs the credits and segmentation: one SOCK_SEQPACKET write is one SDU,
/// a full socket holds an SDU back until it drains (`canSend`). Channel identifiers are the engine's own (the kernel
/// does not give the CIDs); the peer's MTU is the socket's send MTU; MPS values are not known (0).
extension BlueZEngine {
    struct ChannelKey: Hashable {
        var connection: UInt16
        var channel: UInt16
    }

    /// An open channel and the SDUs waiting for room in its socket.
    struct OpenChannel {
        var backend: BlueZL2CAPChannel
        var info: L2CAPChannelInfo
        var waiting: Deque<(sdu: [UInt8], completion: (@Sendable (Result<Void, HostError>) -> Void)?)> = []
    }

    package func registerL2CAPServer(_ server: L2CAPChannelServer, requiresEncryption: Bool,
                             completion: (@Sendable (Result<Void, L2CAPLinkError>) -> Void)?) {
        onLoop { [self] in
            guard l2capServers[server.psm] == nil else {
                completion?(.failure(L2CAPLinkError(.psmInUse, "PSM \(server.psm) is already published")))
                return
            }
            // A listening kernel socket on the PSM (Core 5.4 Vol 3 Part A §4.22), encryption required when asked
            // (BT_SECURITY medium: the kernel refuses an unencrypted link).
            let refused = { (reason: String) -> Void in
                completion?(.failure(L2CAPLinkError(.psmInUse, "the kernel refused PSM \(server.psm): \(reason)")))
            }
            guard let local = BlueZL2CAPSocket.adapterAddress(session?.tree, session?.adapterPath) else {
                return refused("bluetoothd does not say the adapter's address")
            }
            let fd: Int32
            do throws(BlueZL2CAPSocket.Failure) {
                fd = try BlueZL2CAPSocket.open(local: local, psm: server.psm, encrypted: requiresEncryption)
            } catch {
                return refused(error.description)
            }
            guard let listener = BlueZL2CAPListener(fd: fd) else { return refused("cannot listen on an L2CAP socket") }
            l2capServers[server.psm] = server
            listeners[server.psm] = listener
            listener.start { [weak self] channel in
                guard let engine = self else { return channel.close() }
                engine.onLoop { engine.incomingChannel(channel) }
            }
            completion?(.success(()))
        }
    }

    package func unregisterL2CAPServer(psm: UInt16) {
        onLoop { [self] in
            guard l2capServers.removeValue(forKey: psm) != nil else { return }
            listeners.removeValue(forKey: psm)?.close()
        }
    }

    /// A kernel L2CAP socket from the adapter `local` connected to `peer`'s `psm` (blocking), as a channel.
    private static func connectChannel(local: BluetoothAddress, peer: BluetoothAddress, psm: UInt16) -> Result<BlueZL2CAPChannel, BlueZCallError> {
        do throws(BlueZL2CAPSocket.Failure) {
            let fd = try BlueZL2CAPSocket.open(local: local, psm: 0, encrypted: false)
            do throws(BlueZL2CAPSocket.Failure) {
                try BlueZL2CAPSocket.connect(fd, to: peer, psm: psm)
            } catch {
                POSIX.closeDescriptor(fd)
                throw error
            }
            guard let channel = BlueZL2CAPChannel(fd: fd, psm: psm, peer: peer) else {
                throw BlueZL2CAPSocket.Failure(description: "cannot make the channel's wake pipe")
            }
            return .success(channel)
        } catch {
            return .failure(.connectionFailed(error.description))
        }
    }

    package func openChannel(connectionHandle handle: UInt16, psm: UInt16, mtu: UInt16,
                     completion: @escaping @Sendable (Result<L2CAPChannelInfo, HostError>) -> Void) {
        onLoop { [self] in
            guard let link = links[handle] else {
                return completion(.failure(HostError(.unknownConnection, "no connection has handle \(Dissection.hex16(handle))")))
            }
            guard link.connection.role == .central else {
                return completion(.failure(HostError(.unsupported, "through bluetoothd a channel is opened from the central's side")))
            }
            guard let local = BlueZL2CAPSocket.adapterAddress(session?.tree, session?.adapterPath) else {
                return completion(.failure(HostError(.commandFailed, "no channel on PSM \(psm): bluetoothd does not say the adapter's address")))
            }
            // The kernel carries the channel on the link bluetoothd made; its connect blocks until the peer answers or
            // the kernel's L2CAP timeout, so it runs off the loop.
            let peer = link.connection.peer
            DispatchQueue.global().async { [self] in
                let result = Self.connectChannel(local: local, peer: peer, psm: psm)
                onLoop { [self] in
                    switch result {
                    case .success(let backend):
                        guard links[handle] != nil else {
                            backend.close()
                            return completion(.failure(HostError(.disconnected, "the link ended while the channel opened")))
                        }
                        completion(.success(adopt(backend, on: handle, psm: psm, localMTU: mtu, initiator: true)))
                    case .failure(let error):
                        completion(.failure(HostError(.commandFailed, "no channel on PSM \(psm): \(error)")))
                    }
                }
            }
        }
    }

    /// A central opened a channel on a published PSM (on the loop).
    func incomingChannel(_ backend: BlueZL2CAPChannel) {
        guard let server = l2capServers[backend.psm] else { return backend.close() }
        let handle = link(backend.peer, role: .peripheral)
        _ = adopt(backend, on: handle, psm: backend.psm, localMTU: server.mtu, initiator: false)
    }

    /// Names a new channel, listens to it and reports it open.
    private func adopt(_ backend: BlueZL2CAPChannel, on handle: UInt16, psm: UInt16, localMTU: UInt16,
                       initiator: Bool) -> L2CAPChannelInfo {
        while channels.keys.contains(where: { $0.channel == nextChannelID }) {
            nextChannelID = nextChannelID >= 0x00FF ? 0x0040 : nextChannelID + 1
        }
        let cid = nextChannelID
        nextChannelID = nextChannelID >= 0x00FF ? 0x0040 : nextChannelID + 1
        let peerMTU = backend.peerMTU
        let info = L2CAPChannelInfo(localCID: L2CAPChannelIdentifier(cid), remoteCID: L2CAPChannelIdentifier(cid), psm: psm,
                                    localMTU: localMTU, localMPS: 0, remoteMTU: UInt16(clamping: peerMTU), remoteMPS: 0,
                                    isInitiator: initiator)
        let key = ChannelKey(connection: handle, channel: cid)
        channels[key] = OpenChannel(backend: backend, info: info)
        emit(.l2capChannelOpened(handle: handle, info))
        backend.start { [weak self] event in
            guard let engine = self else { return }
            engine.onLoop { engine.channelEvent(key, event) }
        }
        return info
    }

    private func channelEvent(_ key: ChannelKey, _ event: BlueZL2CAPChannel.Event) {
        guard channels[key] != nil else { return }
        switch event {
        case .received(let sdu):
            emit(.l2capSDU(handle: key.connection, channel: L2CAPChannelIdentifier(key.channel), sdu: sdu))
        case .canSend:
            flush(key)
        case .closed:
            guard let channel = channels.removeValue(forKey: key) else { return }
            for waiting in channel.waiting { waiting.completion?(.failure(HostError(.disconnected, "the channel closed"))) }
            emit(.l2capChannelClosed(handle: key.connection, channel: L2CAPChannelIdentifier(key.channel), .peerRequest))
        }
    }

    package func sendL2CAPSDU(connectionHandle handle: UInt16, channel: L2CAPChannelIdentifier, _ sdu: [UInt8],
                      completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        onLoop { [self] in
            let key = ChannelKey(connection: handle, channel: channel.rawValue)
            guard let open = channels[key] else {
                completion?(.failure(HostError(.invalidParameters, "no open channel \(channel.rawValue) on \(Dissection.hex16(handle))")))
                return
            }
            guard !sdu.isEmpty, sdu.count <= Int(open.info.remoteMTU) else {
                completion?(.failure(HostError(.invalidParameters, "an SDU of \(sdu.count) octets (the peer takes 1 to \(open.info.remoteMTU))")))
                return
            }
            channels[key]?.waiting.append((sdu, completion))
            flush(key)
        }
    }

    /// Writes the waiting SDUs while the socket takes them.
    private func flush(_ key: ChannelKey) {
        while let channel = channels[key], let first = channel.waiting.first {
            let written = channel.backend.send(first.sdu)
            if written == 0 { return }
            channels[key]?.waiting.removeFirst()
            if written == first.sdu.count {
                first.completion?(.success(()))
            } else {
                first.completion?(.failure(HostError(.protocolError, "the kernel took \(written) of \(first.sdu.count) octets of one SDU")))
            }
        }
    }

    package func closeL2CAPChannel(connectionHandle handle: UInt16, channel: L2CAPChannelIdentifier,
                           completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        onLoop { [self] in
            channels[ChannelKey(connection: handle, channel: channel.rawValue)]?.backend.close()
            completion?(.success(()))
        }
    }
}
