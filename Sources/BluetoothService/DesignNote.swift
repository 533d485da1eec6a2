// BluetoothService: the per-user Bluetooth service (`blue service`), which runs our host for the programs that ask
// it to and keeps their stacks when they die, as iOS's bluetoothd does for its apps.
//
// What it is: `BluetoothService` listens on a UNIX socket in the shared air's private folder (mode 0600, clients of
// another user refused by SO_PEERCRED: the hub's side-socket listener), takes a hello per connection (protocol
// version, the stack by StackLauncher's name, the restore identifier, the relaunch registration), opens the stack
// with StackLauncher (identity and bonds in a private folder per identifier, so a kept program is the same device
// from one stack to the next) and runs the program's calls on it (`KeptStack+Calls`). The wire protocol and the
// program's side are ServiceEngine's.
//
// Who owns the state: the service keeps its stacks by identifier (and the anonymous ones by session) under one lock.
// Each `KeptStack` owns, under its own lock, the program attached (or none), the queue of what the program would
// have heard while none is (bounded, oldest dropped and counted), the links and the clients' subscriptions (for the
// welcome of a program taking it back), the last values the program sent or answered (reads answered while it is
// gone), the deferral (the program's own plus its dynamic values), the database it last installed (an equal one is
// not installed again, so subscriptions survive a restored peripheral publishing its services again) and the
// relaunch registration, and the program's last advertising (started again after a connection while the program is
// gone, as the program's backend would). Sending only queues (ServiceConnection), so it happens under the lock: the welcome, the
// queue and the live events reach a program in one order.
//
// The lifecycle: a connection that ends with a goodbye, or without an identifier, ends its stack (each link
// terminated first, so peers see it at once); one that ends otherwise (SIGKILL, a crash, a cut-off client) detaches
// it. A hello with the identifier of a detached stack takes it back; with the identifier of an attached one it is
// refused. The stack's controller lost: the program hears it, the stack is forgotten. While detached, the first
// event iOS would relaunch an app for starts the registered command once (its own session, output to a log in the
// identifier's folder, reaped by a thread of its own).
//
// Executors: each client's messages arrive on its connection's reader thread; opening a stack is async (a task per
// hello); the stack's events arrive on its own loop; ending a stack blocks (up to a second for the terminations),
// so it runs on a thread of its own. No thread per packet: one reader per connection, one writer queue per
// connection, the stack's loop.
