// Host — design note
//
// What: the host side of HCI over one controller (Core 5.4 Vol 4 Part E) and GAP on top of it (Vol 3 Part C §9).
//
// - `HostStack` (final class) owns the controller side: the command pipe, controller info, the connection table,
//   ACL in and out, the scan merge state, the pending connects, one timer; each connection's protocol state is its
//   `ConnectionSession` (below). It is driven by an `HCITransport` (frames in
//   via `onFrames`, one hop onto the loop per read of the transport, in order) and by its owner's calls (any
//   thread, hopped onto the loop). What a batch of received frames makes the host send (credits refilled, the
//   notifications a readiness event lets out, ATT answers) is held in `ReceiveBatch` and leaves in one
//   `send(frames:)` after the batch's last frame; a send outside a batch (an owner's call, a timer) leaves at once.
//   The one timer is re-armed once at the end of a batch too, not after every action within it.
//   Across processes this is one read, one hop and one write per connection event instead of per packet (issue 31;
//   Benchmarks/README.md has the figures).
// - `CommandPipe` (struct, sans-I/O): queue + credits from the latest Command Complete / Command Status
//   (Num_HCI_Command_Packets, §4.4, starting at 1), answers matched by opcode to the oldest command in flight
//   (Command Complete vs Command Status per `HCICommand.table[...].answeredByCommandStatus`), a per-command timeout
//   reported as an unresponsive controller after which the pipe continues with one credit. A command that is
//   never sent has the same bound: credit starvation (no credit, nothing in flight, something waiting, as after a
//   Command Complete with Num_HCI_Command_Packets = 0 for a command never sent) that lasts the command timeout
//   fails every waiting command as an unresponsive controller ("granted no command credit"), reported once, and
//   the pipe continues with one credit. So every command ends, and `shutdown` paths that queue one (stop
//   scanning or advertising, disconnect) end within about one timeout on any controller.
// - `ACLOutbound` (struct, sans-I/O): LE ACL buffer flow control (§4.1.1) with Number Of Completed Packets,
//   fragments from `ACLFragmenter` to LE_ACL_Data_Packet_Length, per-connection queues served round-robin.
//   Inbound ACL goes through `ACLReassembler`; complete L2CAP PDUs go to the L2CAP handler (`setL2CAPHandler`),
//   ACL for a handle not in the table (unknown, just closed) is dropped and counted.
// - Connections are created synchronously when LE (Enhanced) Connection Complete is handled, before the next
//   frame; Disconnection Complete removes one and fails everything of it (queued sends, reassembly state,
//   pending parameter updates), giving its controller buffers back (§4.3).
// - Connecting (`HostStack+Connecting.swift`): any number of connects pending, one per peer (`ConnectRequest`, in
//   the order asked, each with its own time limit or none), and the controller's ONE initiation (`PendingConnect`):
//   directed to the peer when one is pending; to the oldest pending, as many as the Filter Accept List holds, with
//   initiator filter policy 1 when more are (the list read once, cleared, then rewritten one command at a time
//   between initiations, since it cannot change while one uses it, Vol 4 Part E §7.8.16). A connect asked or ended
//   during an initiation that covers another set cancels it; the next starts when the controller has ended it. A
//   connection goes to the connect of its peer; a controller failure the host did not cause fails the connects the
//   initiation covered; a controller that refuses the list gets the connects one at a time.
// - `ScanReportMerger`: advertising report + scan response per device → `ScanReport` (decoded AD, RSSI,
//   connectable, legacy or extended PDUs, PHYs, SID); LE Extended Advertising Reports are first joined from their
//   pieces (`ExtendedReportAssembler`, bounded; truncated ones dropped). `AdvertisingContent` lays out legacy
//   advertising data / scan response with `AdvertisingDataBuilder`, or one block of extended data, and refuses,
//   naming the structure, what does not fit.
// - Legacy or extended GAP (`HostStack+ExtendedGAP.swift`): decided once at initialisation
//   (`ControllerInfo.usesExtendedAdvertising`: LE Extended Advertising in the features and its commands in
//   Supported_Commands, and `HostConfiguration.usesExtendedAdvertising`), since a controller refuses the other
//   family until Reset (Vol 4 Part E §3.1.1). Extended: advertising set 0 with legacy PDUs while the data fits them
//   (every scanner sees those), extended PDUs beyond, data in 251-octet fragments; extended scanning on 1M (+Coded);
//   LE Extended Create Connection with a block per PHY the controller has; LE Read PHY after such a connection (it
//   may start on 2M or Coded without a PHY Update event).
// - Privacy (`HostStack+ControllerPrivacy.swift`): when privacy is asked for and the controller offers LL Privacy,
//   the controller makes, rotates and resolves addresses: the host keeps its resolving list (an all-zero identity
//   entry with our IRK for unbonded peers, one per bonded peer), changes it only while nothing advertises, scans or
//   initiates (a change waits, retried each second on the host's timer), uses Own_Address_Type 0x03, and gives SMP
//   the addresses of the air from LE Enhanced Connection Complete. Otherwise the host rotates its RPA itself with
//   LE Set Random Address (postponed while advertising) and resolves peers' RPAs with the bonds' IRKs.
// - Robustness against controllers we did not write (Bumble: ignored LE Set PHY / LE Encrypt / P-256 commands,
//   Unknown Command for Read RSSI and LE Set Data Length, Reset doing nothing, no event after Create Connection
//   Cancel): timeouts fail the one command, Unknown Command is remembered per opcode, init steps after Reset are
//   optional with warnings, data length falls back to 27, a cancelled connect completes on the Cancel's success.
// - Nothing a controller withholds is waited for without a bound (issue 10; the hostile-controller fuzz in
//   Fuzz/HostileController): a command never answered, or never sent because no credit comes, fails after the
//   command timeout; a connect whose Cancel fails (but for Command Disallowed) is abandoned, one whose Cancel was
//   refused gets a command timeout for its Connection Complete; a Disconnect whose Disconnection Complete does not
//   come ends the connection locally after the supervision timeout plus a command timeout.
//
// - Logging (`HostStack+Logging.swift`, swift-log): one logger per layer (`HostLoggers`, labels in LogLabel, made by
//   `HostConfiguration.makeLogger`); every command and event, and every L2CAP PDU by its channel's protocol (ATT,
//   SMP, L2CAP), at debug with the connection handle and peer as metadata; ACL fragments at trace; link events at
//   debug. Keys never reach a log (the commands that carry one and SMP key distribution are named only). A
//   disabled level costs one check: messages are autoclosures.
//
// State: all of it is confined to the host's `EventLoop` (ManualEventLoop in tests, DispatchEventLoop in
// production); no locks, no tasks. Completions and handlers run on that loop. Time comes only from the loop;
// one `ScheduledJob` is armed for the earliest deadline (command timeouts, a credit starvation, a connect's own time
// limit, overdue Disconnection Completes, sessions' and security timers). The sessions' deadlines are not asked
// of every connection after every packet: a session reports changes of its link, bearer or Security Manager to
// `SessionDeadlines`, which asks only those again and keeps each one's earliest in a heap (issue 13: a hundred
// links cost a hundred times one link, `blue bench connections`).
//
// L2CAP / ATT / GATT wiring (`HostStack+Wiring.swift`, Core 5.4 Vol 3 Parts A, F, G): each connection gets a
// `ConnectionSession` in its record, created synchronously on Connection Complete: an `L2CAPLink` (role from the
// connection; the stack's registered PSM servers), ONE table of ATT bearers (`ATTBearerTable`, keyed by
// `ATTBearerKey`) and its Security Manager (`SecurityLink`); the connection's state in the ONE `GATTServer` of
// the stack (connect / setMTU / setSecurity / disconnect). The table starts with the bearer on CID 0x0004
// (`.fixed`: an `ATTBearer`, preferred MTU from the configuration, 517 by default); Enhanced ATT bearers
// (`.enhanced(cid)`, below) are more entries of the same kind. Each entry (`SessionBearer`) holds its
// `ATTBearer`, its own `GATTClient`, that client's bearer requests and procedure completions, and whether we
// opened its channel. Complete L2CAP PDUs from ACL → link; link `.send` → ACL out; `.deliverFixed(ATT)` and an
// EATT channel's `.sdu` → that bearer. ONE `performBearer` and ONE `performClient`, given the key, serve every
// bearer: bearer `.send` → link (`carry`: `sendFixed` for the fixed key, `send(sdu:on:)` for an enhanced one);
// bearer `.request` / `.command` → server (told the bearer), the reply → that bearer's `respond`; bearer
// `.response` → its client through the bridge (`receive(bearerResult:)`), except our own Exchange MTU (fixed
// bearer only); notifications / indications → client → `HostEvent`s, indications confirmed right after the event;
// `.mtuChanged` → client and server (`attMTUChanged` for the fixed bearer, the connection's ATT_MTU);
// `.disconnectLink` (`bearerBroken`) → on the fixed bearer HCI Disconnect (Remote User Terminated, the only allowed
// reason that fits; our side then sees Connection Terminated By Local Host 0x16, which is what pending operations
// fail with), on an EATT bearer the close of its channel. Entries change in place (`withBearer`: an `inout` on
// the array element, in a table of a class: nothing copied per packet; a lookup is a search of a handful of
// keys). As central the host sends Exchange MTU right after the connection is reported. Disconnection Complete
// ends the link and every bearer and client (every pending GATT, channel, MTU and parameter-update operation
// fails, GATT ones with `bearerFailed(.disconnected(reason:))`) and drops the server's state of the connection.
// The single timer covers the command pipe, the pending connect and every link's and bearer's deadline. Every
// action is carried out in order on the `ConnectionSession` it came from, which is asked before each one whether
// it is still open (`isOpen`, cleared the moment its record leaves the table) and still has the bearer, since a
// completion may end them. The connection is looked up by handle once, where work enters (a received PDU, a value
// sent, a caller's request); the wiring's variants taking a handle are for callers that hold nothing else.
//
// Enhanced ATT (`HostStack+EATT.swift`, Vol 3 Part F §3.2.11, Part G §7.2/§7.4): bearers on L2CAP enhanced
// credit-based channels of SPSM 0x0027 (the link's EATT server, registered on every session, accepts them only on
// an encrypted link), each an `ATTBearer(enhancedMTU:)` with its own `GATTClient`, entered in the session's bearer
// table when its channel opens and removed when it closes; no second code path carries their actions. After
// Encryption Change the client reads the peer's Server Supported Features and, when bit 0 is set, writes Client
// Supported Features and opens `enhancedATTBearerCount` bearers in one request. Their SDUs go to the bearer instead
// of `l2capSDU` events. What differs from the fixed bearer is decided in one place each: `gatt(...)` procedures go
// to the least busy bearer we opened (`bearerForProcedure`: writes without response stay on the fixed bearer,
// those of one `GATTClientLane` go to its bearer while any runs, call order kept; the session's `lanes` table,
// emptied as they complete); the server answers on the request's bearer and notifies on the first bearer the peer
// opened (the GATT server chooses, told at `openBearer(notifications:)`; the host sends on the bearer it names);
// a bearer's ATT timeout closes its channel, not the link (`bearerBroken`); a closed bearer fails its running
// procedure and hands its queued ones to the other bearers; reconfiguration raises ATT_MTU. The security layer's
// hold-and-retry of Insufficient Encryption/Authentication answers works on every bearer: the held request
// remembers its bearer's key and is retried there once the link is secured.
//
// Raw mode: when an owner sets `setL2CAPHandler`, complete PDUs go to it instead and no session is created (the
// scripted-controller tests of the HCI layer, or an external L2CAP implementation).
//
// Security (`HostStack+Security.swift`, Vol 3 Part H): each session holds a `SecurityLink` with the connection's
// `SMPSession`, fed SMP payloads from the fixed channel 0x0006, Encryption Change and Key Refresh; the host turns its
// actions into SMP PDUs, LE Enable Encryption (central) and LE Long Term Key Request replies (peripheral, from the
// session while pairing or from the bond store after), stores bonds (`BondStore`, `FileBondStore`) and holds GATT
// requests answered with Insufficient Encryption/Authentication until the link is secured, then retries them once.
// `HostEvent.securityManagerPDU` and the LTK request / encryption events are still emitted for observers.
//
// Events (`HostEventHandlers`): the host fans its `HostEvent`s out to any number of owners, in the order they were
// added (`addEventHandler`, from any thread), after the one `setEventHandler` sets. The events and the other types an
// owner sees (ScanReport, Connection, the options, HostError, the pairing types) live in BluetoothEngine, the seam the
// APIs stand on; `HostStack` is an engine there (`StackEngine`, HostStack+Engine.swift).
//
// Exclusivity: the host's hot state (the stack's tables and queues, each connection's record and session) is marked
// `@exclusivity(unchecked)` in release builds only (`#if !DEBUG`). It is confined to the loop and each access is
// short, so the run-time check (`swift_beginAccess`: an access set in thread-local storage, ~100 instructions)
// finds nothing there, and it was a fifth of the instructions per notification in process (issue 31 item 3,
// Benchmarks/README.md). Debug builds, and so every test run, keep the check: an overlapping access still traps there.
// The optimiser hoists some reads to the start of a function (the unknown-opcode set, a session's pending EATT
// channels), so a property touched only on a rare path can still cost a check per call: those are unchecked too.
// A machine's non-mutating query on a struct stored in this class works on a copy of it unless it is called
// through an inout access (`inPlace`, BluetoothCore): the GATT server's `notify` and the link's `sendFixed` are.
