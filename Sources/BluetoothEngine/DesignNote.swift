// BluetoothEngine — design note
//
// What: the seam between the APIs (BluetoothLE's `BluetoothStack`, and in time OpenCoreBluetooth's CB* classes) and
// the stacks that do the work. `StackEngine` is what an API asks of a stack: GAP (scan, connect, advertise), the
// GATT client (one `GATTProcedure` at a time, on a `GATTClientLane` when order matters), the GATT server (publish,
// deferred requests, values to subscribers), L2CAP credit-based channels and pairing, with one event stream
// (`HostEvent`). Beside it, the vocabulary every engine speaks: `ScanReport`, `Connection`, `ScanOptions` /
// `ConnectOptions` / `AdvertisingOptions` / `AdvertisingContent`, `ControllerInfo`, `LinkInfo`, `HostError` (a code,
// a reason, the HCI status and the security failure), `PairingOptions` / `PairingOutcome` / `PairingInteraction` /
// `PairingAnswer`, `BondStoreError`.
//
// Engines: our host (Host's `HostStack` conforms as it is, HostStack+Engine.swift) over any HCI transport that
// StackLauncher opens; bluetoothd over D-Bus (the BlueZ module's `BlueZEngine`). Host-only events (`longTermKeyRequest`,
// `securityManagerPDU`, `enhancedATTBearerOpened`…) are part of the stream; another engine never emits them.
//
// Contract (the host's): every method may be called from any thread and hops onto the engine's `eventLoop`;
// completions and events run on that loop, in order; each completion is called once (also when the link ends).
// Connection handles name links in both roles; attribute handles name the local server's and each peer's
// attributes.
//
// State: none here; types are Sendable values. Depends on the sans-I/O layers' types (HCI, L2CAP, ATT, GATT, SMP,
// AdvertisingData) and on BluetoothRuntime for `EventLoop` only.
