// OpenCoreBluetoothTesting: the test kit, the world around a CoreBluetooth app declared from its tests.
//
// What this layer is: a `SimulatedWorld` owns one `InProcessAir` (StackLauncher) with spacing 0, so every device
// the app's managers open stands at the origin, and a `CBBackendProvider` on that air that `run` binds to the task
// (CBBackendRegistry's task-local provider): the managers the app creates inside `run` get a host stack on a new
// controller of this air, nothing else changes in the app. Declared peripherals (`PeripheralSpec`) are
// `SimulatedPeripheral`s: one `LaunchedStack` each on a controller placed at their proximity from the origin, a
// GATT database built from the declaration whose every value handle and CCCD is deferred (GATTDeferral), so each
// request becomes a call of the test's `SimulatedPeripheralDelegate` and its `SimulatedResponse` is carried out
// (answer, ATT error, delay on the stack's loop, no answer, disconnect). A spec's personality (PlatformPersonality,
// StackLauncher, shared with `blue serve --personality`) sets the host's ATT_MTU, data length and pairing, Android's
// server rules (no automatic CCCD, one value in flight) and Linux's connection parameter request. Declared centrals
// (`CentralSpec`) are `SimulatedCentral`s: one `LaunchedStack` each, wrapped in BluetoothLE's `BluetoothStack`, whose
// async GATT client the test drives step by step (the kit translates UUIDs and errors to CoreBluetooth's words).
//
// The app's own Bluetooth: the world's provider carries an `OCBSystemBluetooth` switch (OpenCoreBluetooth) that every
// backend's EngineBackendStack observes; the kit turns it (off, on, reset). A hung app controller is a controller
// powered off without its host knowing: the host's next command times out, and EngineBackendStack resets.
//
// Who owns the state: each peripheral its own (values by UUID, handles, connections, subscriptions) behind a lock;
// the world the lists of peripherals and centrals and the exchange log. Which executor runs it: the peripheral's stack loop for
// everything the host reports (the deferral handler, events); the delegate is called on the peripheral's own
// DispatchQueue, one request at a time, never inside the GATT server's request handling, so it may call the
// peripheral's `simulate…` methods; answers go back to the stack's loop. World-level faults use the air's own
// operations (`VirtualController.position`, `setRadio`, `dropLinks`, the air's packet loss).
//
// Time: virtual by default (`.wallClock` on request): one `SharedTime` (BluetoothRuntime) for the world: the air's loop and every stack's (InProcessAir
// hands it to each stack it makes) schedule their timers in its heap and count their jobs; the CoreBluetooth
// managers' DeliveryGate counts each delegate call, EngineBackendStack the opening of a stack, and a declared
// peripheral each hop to its delegate's queue. While the test waits (`eventually`, `advance`) the clock jumps to the
// next timer when nothing is counted, capped by the wait's horizon and a pace of 100× the wall clock; otherwise it
// follows the wall clock. `eventually` checks its condition from a thread of its own and takes the world's time
// before each check: a check answered late (a test process whose cooperative pool is starved) is followed by one
// more, and the wait ends as soon as the condition holds — what once let the world run ahead of the app under a
// loaded full test run. `.wallClock` worlds keep DispatchEventLoop's own continuous clock.
