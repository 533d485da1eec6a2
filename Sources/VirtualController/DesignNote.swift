// VirtualController — design note
//
// What: a software LE controller (the controller side of HCI, Core 5.4 Vol 4 Part E; the link layer, Vol 6
// Part B) and the virtual air it shares with other controllers. A host we did not write must run on it unchanged.
// It speaks HCI frames in and out (`receiveFromHost`, `toHost`) and knows no transport: StackLauncher's
// `VirtualControllerTransport` puts a host in the same process on it, SharedAir's hub puts hosts in other processes.
//
// - `VirtualAir` (VirtualAir.swift) is the radio medium and the only scheduler: advertising events at the
//   advertising interval plus a seeded 0-10 ms advDelay (§4.4.2.2), connection events at the connection interval
//   (§4.5.1). It arms ONE timer on its EventLoop for the earliest task, kept in a heap (`AirSchedule`, on
//   HeapModule; a task scheduled again or cancelled leaves a stale entry, dropped when it reaches the top or when
//   stale entries outnumber the current ones). Each entry carries its controller or link, which keeps the sequence
//   number of its task's current entry, so taking an event costs no hashing and no look-up of the device (at
//   100,000 advertisers those were a quarter of the air's time, issue 31); an advertising event
//   visits only the listeners (controllers scanning or initiating tell the air when that changes): a thousand
//   devices on one air cost linear time (issue 13, `blue bench advertisers`). Propagation: RSSI = txPower − (reference
//   loss at 1 m + 10·n·log10(d)), optional uniform jitter; below the sensitivity nothing is heard; a heard packet
//   is lost with the configured probability. All randomness (advDelay, loss, jitter, LE Rand, SKD/IV) comes from
//   one SplitMix64 seeded at init and drawn in loop order: same seed + same scenario => same packets and events.
//   Devices are kept by identifier (a device joining or leaving costs O(1); identifiers grow in join order, which
//   is the order snapshots list them in) and nothing iterates a Dictionary where order matters.
// - `VirtualController` (VirtualController*.swift) decodes HCI commands with the HCI module's codecs and answers
//   with Command Complete / Command Status (1 credit each), applies the event masks, and drives the advertising,
//   scanning and initiating state. Host ACL packets are buffered (251 octets x 8) and enter the link layer as
//   data PDUs of at most the negotiated connMaxTxOctets; Number Of Completed Packets is sent only when the peer's
//   link layer acknowledged the last PDU of a host packet. Data to the host goes out per received PDU, with
//   PB 0b10 (start) / 0b01 (continuation), split to the host's ACL length (Host Buffer Size).
// - `LinkLayerConnection` is the sans-I/O state machine of one connection end: SN/NESN acknowledgement and
//   retransmission (§4.5.9), control procedures (§5.1: connection update and PHY update with instants, feature
//   and version exchange, data length update, encryption start and pause/refresh, termination). PDUs are sealed
//   with AES-CCM (BluetoothCrypto LinkLayerEncryptionSession) when they enter the transmit queue, so
//   retransmissions resend the same ciphertext; the receiver checks SN before decrypting (duplicates are dropped
//   without touching the packet counter).
//
// Time model: advertising and scanning events are instants. Connection events come in two models
// (AirConfiguration.realRadioTiming). By default they are instants too: the central sends its head PDU (or an
// empty PDU); if the peripheral hears it, it answers with its own head; up to `maximumExchangesPerEvent` exchanges
// while either side has more data. With real radio timing each exchange takes its two packets' air time on their
// PHYs plus two T_IFS (AirTime), one exchange per scheduled task (`.connectionExchange`), so the hosts refill the
// controllers between exchanges (Number Of Completed Packets after each); the event goes on while either side has
// more data and another exchange as long as the last fits before the next anchor. The PHY of each direction
// (1M, 2M, Coded S=8, LL_PHY_REQ/UPDATE_IND) sets its packets' air time and moves the receiver's sensitivity
// (+12 dB Coded, −3 dB 2M). A lost
// packet closes the event; the unacknowledged PDU is resent at the next event (so loss delays but never loses or
// reorders data above HCI). Peripheral latency is not used (the peripheral listens at every event). Supervision
// timeout: an end that heard nothing for connSupervisionTimeout reports Disconnection Complete 0x08. A MIC failure
// ends both sides with 0x3D at once (a real central would see its own MIC failure or a timeout). Scanning hears
// one PDU per advertising event (not one per channel); active scanners send SCAN_REQ on every scannable PDU (no
// backoff). Power-off and HCI_Reset leave the air silently: peers see a supervision timeout.
// HCI_Disconnect: ACL data already buffered (at most 8 x 251 octets) is sent before LL_TERMINATE_IND and completed
// with Number Of Completed Packets; data sent after the command is not; T_Terminate (the supervision timeout) ends
// the procedure if the peer never acknowledges (§5.1.6). `VirtualAir.detach` takes a controller off the air for good
// (the shared air's hub uses it when a host leaves). Faults change the air at run time on its loop (`jamLinks`, a
// link on which nothing is heard: both ends time out; `radioOn`, a radio silenced while the controller still answers
// its host, unlike power-off; `move`); the hub in SharedAir applies them on demand.
//
// Extended advertising (VirtualController+ExtendedAdvertising.swift, AdvertisingSet, AuxiliaryChain): up to 16
// advertising sets, each an `.advertisingSet(device, handle)` task of the air on its own interval, with legacy PDUs or
// ADV_EXT_IND on the primary PHY (1M/Coded) followed by AUX_ADV_IND and AUX_CHAIN_INDs on the secondary PHY, the data
// cut as the Common Extended Advertising Payload Format's header sizes allow (AuxiliaryChain.capacity). A listener
// hears each PDU on its own (loss and range per PDU and PHY) and a chain stops at its first lost PDU: the scanner
// reports what it heard with data status "truncated". AUX_SCAN_REQ/RSP (with its chain) and AUX_CONNECT_REQ/RSP are
// exchanged on the secondary PHY, and such a connection starts on it. The chain's PDUs are instants like the rest
// of advertising (no AuxPtr offsets in time). Extended scanning listens per primary PHY with that PHY's window;
// Duration, Period and the sets' Duration use one `.controllerTimer(device)` task at the controller's
// `nextDeadline`. The legacy and extended command families exclude each other until Reset (Vol 4 Part E §3.1.1).
// Link-layer privacy: VirtualController+Privacy.swift (resolving list, RPAs made and resolved; LE feature bit 6).
//
// Not implemented: periodic advertising, LE Secure Connections P-256 commands (the host does them), Connection
// Parameters Request procedure, controller-to-host flow control (accepted, not enforced), LE Channel Selection
// Algorithm #2.
//
// Steps and replay: everything the air does happens in a step — a device joins or leaves, a host's frame reaches its
// controller, the air's timer fires, a fault changes the air — and within a step the air's clock (`VirtualAir.now`)
// stands still. With the seeded generator drawn in step order, the air is a function of its seed, its radio model
// and its steps. The air tells an `AirStepRecording` (set as `VirtualAir.recorder`) every step and every frame to a
// host; SharedAir's `AirRecorder` writes them and its `AirReplay` takes them again (`blue air --record/--replay`).
//
// What a sniffer sees: the air's observer gets every PDU as it goes on the air (`AirPacket`: header and payload,
// channel index, PHY, access address, CRC_INIT, and for a sealed data PDU its plaintext as the sender had it), built
// only when an observer is set (`AdvertisingChannelPDU` for the advertising channels, `AirLinkRadio` for a
// connection's access address, CRC_INIT and Channel Selection Algorithm #1 channel, derived from the link's
// identifier so that observing draws nothing from the generator). The PDUs of an advertising event are delivered at once but
// stamped where they would be (T_IFS, AuxPtr offsets); a connection event's are stamped at the event (at each
// exchange under real radio timing). SharedAir's `LinkLayerSniffer` writes them as a pcap of
// LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR (`blue air --sniff FILE`).
//
// State: all of it is confined to the air's EventLoop (ManualEventLoop in tests, DispatchEventLoop otherwise).
// `receiveFromHost` hops onto the loop; `toHost`, `position` and the air's configuration are lock-protected, so a
// link's exchange reads the configuration and both ends' positions (the path loss, the same both ways) once for
// its two packets rather than once per packet heard.
//
// Exclusivity: the air's and the controllers' per-packet state (the schedule, links, connection records, settings)
// skips the run-time exclusivity check in release builds (`#if !DEBUG` `@exclusivity(unchecked)`), as the host's
// does (Host's design note): loop-confined, never accessed overlapping, checked in debug builds and so in every test.
