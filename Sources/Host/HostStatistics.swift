/// Counters of what the host tolerated or dropped (Core 5.4 Vol 4 Part E: ACL for unknown handles, unmatched
/// command answers, surplus Number Of Completed Packets). For tests and diagnostics; read on the loop.
public struct HostStatistics: Hashable, Sendable {
    /// ACL packets for a handle that is not (or no longer) in the connection table, dropped.
    public var droppedACLPackets = 0
    /// ACL packets that did not decode.
    public var malformedACLPackets = 0
    /// Reassembly errors (continuation without start, longer than announced...), the PDU dropped.
    public var reassemblyErrors = 0
    /// Complete L2CAP PDUs delivered to the L2CAP handler.
    public var receivedL2CAPPDUs = 0
    /// ACL packets handed to the controller.
    public var sentACLPackets = 0
    /// Events that did not decode.
    public var undecodableEvents = 0
    /// Command Complete / Status for opcodes with no command in flight.
    public var unmatchedCommandResponses = 0
    /// Number Of Completed Packets entries above what was in flight.
    public var unexpectedCompletedPackets = 0
    /// Events for handles not in the connection table.
    public var unknownHandleEvents = 0
    /// Events and frames the host has no use for.
    public var ignoredEvents = 0
    public var ignoredFrames = 0
    /// ATT commands (Write Command, Signed Write Command) the bearer refused to send (too long, bearer closed).
    public var refusedATTCommands = 0
    /// LE Create Connection sent again after Connection Failed to be Established (0x3E).
    public var connectRetries = 0

    public init() {}
}

/// What the host holds right now: the leak check of tests ("nothing left") and a diagnostic. Read on the loop.
public struct HostResources: Hashable, Sendable, CustomStringConvertible {
    public var pendingCommands: Int
    public var queuedACLPackets: Int
    public var inFlightACLPackets: Int
    public var connections: Int
    /// Connects, parameter updates and disconnects waiting for their event.
    public var pendingOperations: Int
    public var reassemblyBufferedBytes: Int
    public var scanCacheEntries: Int
    public var timerArmed: Bool
    /// ATT requests and indications in flight or queued (both directions) and GATT client procedures.
    public var pendingATTTransactions: Int = 0
    /// L2CAP credit-based channels in any state (connecting, open, disconnecting).
    public var l2capChannels: Int = 0
    /// L2CAP signaling requests awaiting a response, and received ones not yet answered.
    public var l2capSignalingRequests: Int = 0
    /// Prepared writes queued in the GATT server.
    public var preparedWrites: Int = 0

    /// Nothing pending, queued, buffered or armed (connections and open L2CAP channels aside).
    public var isQuiescent: Bool {
        pendingCommands == 0 && queuedACLPackets == 0 && inFlightACLPackets == 0 && pendingOperations == 0
            && reassemblyBufferedBytes == 0 && scanCacheEntries == 0 && !timerArmed && pendingATTTransactions == 0
            && l2capSignalingRequests == 0 && preparedWrites == 0
    }

    public var description: String {
        "commands \(pendingCommands), ACL queued \(queuedACLPackets) in flight \(inFlightACLPackets), "
            + "connections \(connections), operations \(pendingOperations), reassembly \(reassemblyBufferedBytes) B, "
            + "scan cache \(scanCacheEntries), timer \(timerArmed ? "armed" : "none"), ATT \(pendingATTTransactions), "
            + "L2CAP channels \(l2capChannels) requests \(l2capSignalingRequests), prepared writes \(preparedWrites)"
    }
}
