// BluetoothLE: the modern async/await API on the OpenCoreBluetooth stack.
//
// What it is: `BluetoothStack` wraps one stack engine (BluetoothEngine's `StackEngine`, the seam under both APIs:
// the host operations it uses, with the host's signatures): our `HostStack` on any transport, or bluetoothd
// (the BlueZ module's `BlueZEngine`, on D-Bus directly, which turns bluetoothd's answers into the host's events so
// that nothing above the seam knows). BluetoothLE does not import OpenCoreBluetooth: the two APIs are siblings on
// the seam. What bluetoothd has no call for is refused through `BlueZEngine.refusal` (`HostError.notOffered`). It offers the GAP
// central and peripheral roles (Core 5.4 Vol 3 Part C §9), the GATT client and server (Vol 3 Part G) and LE
// credit-based L2CAP channels (Vol 3 Part A §4.22) with Swift concurrency: scanning, notifications, incoming centrals
// and channel SDUs are `AsyncSequence`s; connect, discovery, reads, writes, notify and channel sends are `async
// throws`; servers are declared with result builders (`Service { Characteristic(...) }`). Errors are `BluetoothLEError`
// (code, reason, ATT error, HCI status); cancellation throws `CancellationError`.
//
// Who owns the state: `StackCore`, confined to the engine's event loop (the `EventLoop` the `HostStack` was built
// on: `DispatchEventLoop` in production, `ManualEventLoop` in deterministic tests; the BlueZ engine's own
// `DispatchEventLoop`, where the backends' events and completions hop). It is touched only by the engine's event
// handler, engine completions, and jobs enqueued with `onLoop`. Objects handed to users
// (`Peripheral`, `Central`, `L2CAPChannel`, `Characteristic`) are `Sendable`: immutable identity plus small
// `LockedValue`s (MTU, disconnection signal, characteristic value and subscribers).
//
// Which executor runs it: the stack's loop runs the bookkeeping only. A suspended task is resumed through
// `PendingOperation` (one-shot, cancellation-aware); stream elements are yielded to `AsyncStream` continuations;
// `Characteristic.onWrite` handlers run on their own tasks. No user code runs on the loop. Local characteristics
// are value-backed by default (reads answered from the stored value by the host, writes stored then reported);
// with `onRead` / `onWriteRequest` the engine defers the request (`StackEngine.setGATTDeferral`), a task runs the
// async handler and `StackEngine.respondToGATTRequest` answers it (`DeferredRequests.swift`).
//
// Flow control: write-without-response and notify wait for the connection's send queue to have room
// (`StackEngine.isReadyToSend` / `HostEvent.readyToSend`, the same signal as CoreBluetooth's
// `canSendWriteWithoutResponse` and `peripheralManagerIsReady`), so a producer loop never floods the controller.
//
// Pairing: `BluetoothStack.setPairingDelegate(_:)` routes the Host's pairing interactions (numeric comparison,
// passkey display/entry, Just Works consent) to async delegate methods, one Task per interaction, never on the
// stack loop; `Peripheral.pair()` returns the outcome or throws `PairingError` with the SMP reason.
