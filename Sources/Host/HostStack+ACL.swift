import BluetoothCore
import HCI
public import BluetoothEngine

/// ACL data both ways (Core 5.4 Vol 4 Part E §5.4.2, §4.1.1 flow control; Vol 3 Part A §7.2 fragmentation and
/// recombination of L2CAP PDUs).
extension HostStack {
    /// Sends one L2CAP PDU (basic header included) on a connection: fragmented to the controller's LE ACL data
    /// length, queued per connection and sent as controller buffers free up. The completion (on the loop) comes
    /// when the last fragment is handed to the controller, or with ``HostError/Code/disconnected`` if the
    /// connection ends first.
    public func sendL2CAP(connectionHandle: UInt16, pdu: [UInt8],
                          completion: (@Sendable (Result<Void, HostError>) -> Void)? = nil) {
        onLoop { [self] in enqueueL2CAP(handle: connectionHandle, pdu: pdu, completion: completion) }
    }

    /// ``sendL2CAP(connectionHandle:pdu:completion:)`` on the loop.
    func enqueueL2CAP(handle connectionHandle: UInt16, pdu: [UInt8], completion: ((Result<Void, HostError>) -> Void)?) {
        if lifecycle == .ready, connections[connectionHandle] == nil {
            completion?(.failure(HostError(.unknownConnection, "no connection has handle \(Dissection.hex16(connectionHandle))")))
            return
        }
        enqueueL2CAP(pdu, openConnection: connectionHandle, completion: completion)
    }

    /// Fragments and queues `pdu` on `connectionHandle`, which the caller knows is in the table (its session is
    /// open).
    func enqueueL2CAP(_ pdu: [UInt8], openConnection connectionHandle: UInt16,
                      completion: ((Result<Void, HostError>) -> Void)?) {
        guard lifecycle == .ready, let fragmenter else {
            completion?(.failure(HostError(.notReady, "the host stack is not running")))
            return
        }
        let fragments: [HCIACLDataPacket]
        do {
            fragments = try fragmenter.fragment(pdu, handle: connectionHandle)
        } catch {
            completion?(.failure(HostError(.invalidParameters, "cannot fragment the PDU: \(error)")))
            return
        }
        logL2CAP(pdu, handle: connectionHandle, sent: true)
        outbound.enqueue(fragments, handle: connectionHandle, completion: completion)
        pumpACL()
    }

    /// Sends what the controller has room for. Runs after every enqueue and after Number Of Completed Packets
    /// (Vol 4 Part E §7.7.19), which is also when a pairing waiting for its last SMP PDUs to be acknowledged is
    /// announced (``announceDeliveredPairings()``).
    func pumpACL() {
        guard lifecycle == .ready else { return }
        let (packets, completed) = outbound.takeSendable()
        stats.sentACLPackets += packets.count
        for packet in packets {
            let frame = packet.frame
            logACL(frame, sent: true)
            sendFrame(frame)
        }
        for completion in completed { completion(.success(())) }
        if !packets.isEmpty { reportSendRoom() }
        announceDeliveredPairings()
    }

    func receiveACL(_ frame: H4Frame) {
        let packet: HCIACLDataPacket
        do {
            packet = try HCIACLDataPacket(frame: frame)
        } catch {
            stats.malformedACLPackets += 1
            return
        }
        guard let record = connections[packet.handle] else {
            stats.droppedACLPackets += 1
            return
        }
        let output = reassembler.receive(packet)
        if output.error != nil { stats.reassemblyErrors += 1 }
        guard let pdu = output.pdu else { return }
        stats.receivedL2CAPPDUs += 1
        logL2CAP(pdu.bytes, handle: packet.handle, sent: false)
        if let l2capHandler {
            l2capHandler(record.connection, pdu.bytes)
        } else if let session = record.session {
            receiveL2CAP(pdu.bytes, session: session)
        }
    }

    /// Counters of what was tolerated or dropped (read on the loop).
    public var statistics: HostStatistics { stats }

    /// What the host holds right now (read on the loop): the leak check.
    public var resources: HostResources {
        HostResources(
            pendingCommands: pipe.pendingCount, queuedACLPackets: outbound.queuedPacketCount,
            inFlightACLPackets: outbound.inFlightPacketCount, connections: connections.count,
            pendingOperations: max(connectRequests.count, pendingConnect == nil ? 0 : 1)
                + connections.values.reduce(0) {
                    $0 + $1.pendingUpdates.count + $1.pendingDisconnects.count + ($1.session?.pendingOperationCount ?? 0)
                },
            reassemblyBufferedBytes: reassembler.bufferedByteCount, scanCacheEntries: scanMerger.deviceCount,
            timerArmed: timer.map { !$0.isCancelled } ?? false,
            pendingATTTransactions: connections.values.reduce(0) { total, record in
                guard let session = record.session else { return total }
                return total + session.bearers.reduce(0) {
                    $0 + $1.bearer.pendingRequestCount + $1.bearer.pendingIndicationCount
                        + $1.bearer.pendingIncomingRequestCount + $1.client.pendingProcedureCount
                }
            },
            l2capChannels: connections.values.reduce(0) { $0 + ($1.session?.link.channelCount ?? 0) },
            l2capSignalingRequests: connections.values.reduce(0) {
                $0 + ($1.session?.link.outstandingRequestCount ?? 0) + ($1.session?.link.unansweredParameterUpdateCount ?? 0)
            },
            preparedWrites: gattServer.pendingPreparedWriteCount)
    }

    /// The controller's free LE ACL buffers (read on the loop).
    public var freeACLBuffers: Int { outbound.freeBuffers }
}
