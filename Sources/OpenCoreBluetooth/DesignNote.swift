// OpenCoreBluetooth — design note
//
// What: Apple's CoreBluetooth API (CB* classes, delegate protocols, option keys, errors) with Apple's Swift
// spellings and semantics (../shared/reference/corebluetooth-api.md §1-§2, cb-shape-notes.md), so an app builds
// on Linux by swapping `import CoreBluetooth` for `import OpenCoreBluetooth`.
//
// Shape: a façade over a backend seam (CBBackend.swift). `CBCentralBackend` / `CBPeripheralBackend` /
// `CBL2CAPChannelBackend` are callback-based, typed and Sendable; they speak handles, addresses and bytes
// (GAP, Core 5.4 Vol 3 Part C; GATT, Vol 3 Part G; L2CAP CoC, Vol 3 Part A §10). The façade owns everything
// Apple-specific: object identity (one CBPeripheral per peer while alive, held weakly), identifiers
// (CBPeerIdentifier: name-based UUID of the identity address), scan filtering and coalescing, the misuse rules,
// request batches and respond-once, flow-control bookkeeping, advertisement dictionaries, error mapping (ATT codes
// → CBATTError, the rest → CBError). A backend is chosen when a manager is created (CBBackendRegistry:
// task-local provider, else the process default; none → `.unsupported`).
//
// Who owns the state, which executor runs it: the backend runs on its own event loop and calls back from it; the
// façade re-queues every event and completion, in order, on the manager's DispatchQueue (the app's, or main),
// through the manager's DeliveryGate (which holds them, in order, while the simulated iOS app receives no events:
// OCBApplication, below), and
// mutates its object graph (services, values, subscriptions) only there, so user code never runs on the stack's
// executor and delegate callbacks arrive in order on the queue given at init. Flags the app may read from any
// thread (state, isScanning, isAdvertising, canSendWriteWithoutResponse, peripheral state, request batches) sit
// behind locks (LockedValue). Commands never block: they call the backend, which hops onto its loop.
//
// Linux specifics: no authorization prompt (`.allowedAlways`); `queue: nil` is the main queue, which runs only under
// dispatchMain(), RunLoop.main.run() or an async main. L2CAP streams deliver their delegate events on the run loops
// and modes they are scheduled in, as CFStream does (CBL2CAPChannel.swift, StreamRunLoopEvents: a one-shot Timer per
// wake-up, because RunLoop.perform does not wake a sleeping run loop on Linux, and a keep-alive timer per scheduled
// mode); unscheduled streams keep their events pending.
//
// The backend (Engine*Backend.swift, HostBackend.swift): one stack per manager, each over its own controller, opened
// by StackLauncher as an `OpenedStack` and called only through the engine seam (BluetoothEngine's `StackEngine`):
// our host (a `LaunchedStack`) or bluetoothd (`OCB_HCI=bluez[:hciN]`: a `BluetoothdStack`, the BlueZ module's
// BlueZEngine), with the same code on both; what bluetoothd decides itself is the engine's to refuse or to say
// (README "BlueZ backend"). A central and a peripheral manager of one process meet over the air like two devices
// (seed 001 in `blue demo`);
// a released manager's device leaves the air (on an in-process air its controller is powered off: the peers'
// links time out, as when a program on the hub ends), so no ghost keeps advertising its services.
// The air: OCB_HCI unset/`virtual` (or `virtual-hub`, its former name) → the shared air, as two apps on two
// devices meet: the `blue air` hub at its default socket; `air:PATH` → the hub at PATH; either started in the
// background when none runs (`blue air --socket PATH` with the `blue` of OCB_BLUE, beside the program or on PATH,
// as the `blue` commands start it; it outlives the program), else hosted by this process until it exits
// (StackLauncher.SharedAirHub, the one starter); names are read by StackLauncher.StackSpecification; `in-process` → the process's own air (StackLauncher.InProcessAir, public addresses
// 0A:1C:00:00:00:nn in creation order, hence identifiers stable across runs: `blue demo`, tests); any other text →
// a `--hci` specification (tcp:, unix:, serial:, hciN). Each backend's
// state sits in a LockedValue changed on its stack's loop; the stack opens asynchronously and the first state
// (`.poweredOn`, or `.unsupported` when it cannot open) follows; a stack whose controller goes away (hub stopped
// or killed, TCP peer closed, adapter unplugged: StackLauncher's StackLoss) takes its manager to `.poweredOff`,
// with one error logged, as iOS does when Bluetooth is turned off. The library never writes to stderr itself: its
// diagnostics are swift-log messages (`Log`: label opencorebluetooth.corebluetooth, LogLabel), routed
// by the program (`blue` and the examples bootstrap BluetoothRuntime's StandardErrorLogHandler; an app that does
// not bootstrap gets swift-log's default, standard output from info up). The peripheral side serves cached values from the
// GATT database and defers every other read/write to the app through the GATT server's deferred requests
// (GATTDeferral, Core 5.4 Vol 3 Part F §3.4.4–§3.4.6), answered by `respond(to:withResult:)`. The central side runs
// its GATT procedures in one `GATTClientLane` per manager: with Enhanced ATT bearers they still complete in the
// order the app asked (as CoreBluetooth keeps each app on one bearer), not in whatever order parallel bearers answer.
//
// Security, as on iOS: attributes published with `.readEncryptionRequired`/`.writeEncryptionRequired` (and the
// encrypted notify/indicate properties) require an encrypted link; a central touching one pairs (the Host's
// automatic pairing and single retry) and the app sees the answer. iOS's pairing dialogs are an `OCBPairingAgent`
// here (OCB_PAIRING_AGENT or the provider's): with one, the stacks pair as an iPhone (KeyboardDisplay, MITM) and
// each prompt goes to it; without one, NoInputNoOutput, Numeric Comparison and Just Works accepted, a passkey to
// type cancelled (`OCBPairingAgent.accepting`). A manager of an app not allowed Bluetooth (OCBApplication's
// authorization) opens no stack and is `.unauthorized`. A lost stack on the shared air's hub is `.resetting` while
// the backend opens it again (EngineBackendStack.reopen), then `.poweredOn` or `.poweredOff`. Each provider carries
// the system's Bluetooth switch (OCBSystemBluetooth), which every EngineBackendStack of its managers observes: off
// takes the stack down (`.poweredOff`; a peripheral backend keeps its services and publishes them on the next
// stack), on opens a new one, reset is `.resetting` then a new stack (services cleared); a controller that answers
// no command within the host's command timeout (HostEvent.controllerError, unresponsiveController) is reset the same
// way, as bluetoothd and the Linux kernel reset a hung chip. Bonds live
// in memory for the process, or in files with a persistent local identity when OCB_BONDS is set (a directory path,
// or any other value for the default directory). A peer that removed its bond surfaces as
// `CBError.peerRemovedPairingInformation`; an SMP timeout as `.encryptionTimedOut`.
//
// Known peers, as on Apple platforms: a CBCentralManager remembers the peers it discovered or connected
// (KnownPeersStore: identifier → identity address, address type, last known name) across runs, in
// `$XDG_DATA_HOME/opencorebluetooth/known-peers.json` (else `~/.local/share/opencorebluetooth/known-peers.json`);
// OCB_KNOWN_PEERS=/path/file.json names another file, OCB_KNOWN_PEERS=off keeps them in memory. The file is read
// when the manager is created and written whole (temporary file, mode 0600, rename) at once on connect and
// debounced on discovery; private addresses are not kept; a corrupt file is logged once (warning) and never
// overwritten. `retrievePeripherals(withIdentifiers:)` answers from it (disconnected, stored name, order asked)
// and `connect` reaches such a peer by its stored address without scanning (LE Create Connection).
//
// State restoration, as for an iOS app relaunched after termination (StateRestoration*.swift): a manager created
// with a restore identifier writes what the system would keep whenever it changes (central: the identity
// addresses of the peripherals connected or connecting, the scan's services and options; peripheral manager: the
// published services as handed to the backend, the advertising data), one file per role and identifier in
// `$XDG_STATE_HOME/opencorebluetooth/restoration` (else `~/.local/state/...`; OCB_RESTORATION=DIR or `off`),
// written whole (temporary file 0600, rename), removed when empty, a corrupt one reported once and ignored. A new
// manager with the same identifier queues `willRestoreState` before starting its backend (so it precedes the first
// state update, on the delegate queue), then at the first `.poweredOn`, before `…DidUpdateState`, connects to the
// restored peripherals again (the links ended with the process: they are restored `.connecting`), scans again,
// publishes the services again and advertises again. Leaving `.poweredOn` forgets what ended with it.
// On the Bluetooth service (a manager with a restore identifier on an air hub asks its backend to keep the stack,
// `keepStack`; OCB_RESTORE_ID gives one to a program's managers without their own) the links did not end: the
// backend tells what the stack taken back holds before its first state (central: `.restoredLinks`, the
// peripherals restored `.connected` with what was discovered; peripheral manager: `.restoredCentrals`, placed on
// the restored characteristics' `subscribedCentrals`), and the manager waits for it before `willRestoreState`. A
// peripheral manager's backend installs nothing until the app's first `.poweredOn` callback returns
// (`restoredStateSettled`): the database published by then is compared with the kept one, the same one adopted
// (centrals and subscriptions kept, the requests and Write Commands of the absence delivered), another one installed
// with Service Changed.
//
// The system and the app (one per CBBackendProvider; the process's default provider for a program): the
// provider's SystemConnections is "the system" of iOS for connection events and retrieveConnectedPeripherals (every
// manager posts its links, PostedLinks, and what it learnt of peers' services); its OCBApplication is the app's
// state, foreground unless OCB_APP_STATE / OCB_BACKGROUND_MODES or `enter(_:)` say otherwise. Out of the foreground
// the managers apply Apple's background rules: the gate closes without the role's background mode (and always when
// suspended), a scan needs service UUIDs, coalesces duplicates and runs at a low duty cycle, advertising drops the
// name and moves the services to the overflow area (AdvertisingData.ServiceOverflowArea), which the central side
// decodes against the UUIDs it scans for.
//
// On bluetoothd (BluetoothdStack): the engine turns bluetoothd's D-Bus objects into the host's events and its
// GATT application into the façade's database (GATTDatabase's definitions, every value answered by the engine or
// deferred to the app); bluetoothd keeps the GAP and GATT services, the bonds and the known devices
// (`retrievePeripherals` also finds its paired devices), reads the peer's name (didUpdateName) and exchanges the
// MTU as it connects. With OCB_BLUEZ_AGENT the engine registers a BlueZAgent as bluetoothd's default agent
// (BlueZPairingAgent: prompts answered, each value logged at notice); otherwise bluetoothd's own default agent
// answers, as iOS's system prompts do.
