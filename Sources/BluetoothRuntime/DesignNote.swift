// BluetoothRuntime — design note
//
// What: an event loop, timers and logging for every stateful part of the stack (Host, VirtualController, the air);
// nothing Bluetooth.
//
// - Time is `StackInstant` (BluetoothCore: a point on the stack's own timeline, in nanoseconds, so the sans-I/O
//   layers use it without importing a runtime) and the standard library's `Duration`.
// - `EventLoop` is a serial executor with a clock: jobs run one at a time, in the order they were enqueued;
//   timers run on the same loop, in deadline order (ties in scheduling order). Protocol state machines are plain
//   structs driven synchronously by jobs on one loop; they never await in the middle of a transition.
// - `DispatchEventLoop` is production: a DispatchQueue and the continuous clock. It is also a Swift concurrency
//   `SerialExecutor`, so an actor can run on the stack's loop (`unownedExecutor`).
// - `ManualEventLoop` is for tests and deterministic simulation: nothing runs until the test says so
//   (`run()`, `advance(by:)`), and time only moves when the test moves it. A 30 s ATT timeout is a call to
//   `advance(by: .seconds(30))`, not a sleep. `pendingWorkDescription` lists what is left (the leak check). Its
//   timers are a heap (deadline, then scheduling order), so ten thousand stacks on one loop cost log n per timer.
//   Taking the next job (or due timer, moving the clock to it) and marking the loop running is one lock; jobs are
//   kept wrapped in a struct, since a closure kept as a generic element came back through a new thunk each time.
// - `SharedTime` is one clock for several DispatchEventLoops (a test kit's world: its air and every stack): the
//   loops put their timers in its heap and count their queued jobs (and callers count work they hand on, such as a
//   delegate call); a driver thread fires what is due and, while someone waits, jumps to the next timer whenever
//   nothing is counted (bounded by the waiter's horizon and a pace, 10x the wall clock by default); without a waiter it
//   follows the wall clock. Loops without one keep their own continuous clock and pay nothing for it.
// - One timer per owner: a layer reports its next deadline; the owner keeps one `ScheduledJob` armed for the
//   earliest and asks each layer again when it fires (NimBLE's one timer asking each layer for its next deadline).
//
// State: each loop owns its queue of jobs and timers behind a lock; everything else is confined to the loop.
// `LoopBound` carries loop-confined values across the Sendable boundary, checked in debug builds.
