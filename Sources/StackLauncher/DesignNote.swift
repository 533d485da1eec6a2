// StackLauncher: assembles stacks, from a stack's name to a running host stack.
//
// What it is: the one reader of a stack's name (`StackSpecification`: `--hci`, `OCB_HCI`, `BluetoothStack.open`;
// our host on an `HCITransportSpec` — virtual, in-process, air:PATH, tcp:HOST:PORT, unix:PATH, serial:..., hciN — or
// bluetoothd's `bluez[:hciN]`) and the one opener of either engine as an `OpenedStack`
// (`open(specification:options:)`): bluetoothd's is `BluetoothdStack` (the BlueZ module's `BlueZEngine`, started,
// its adapter's loss reported as a `StackLoss`); ours is the edge that turns a transport into a started
// `HostStack`: it opens the
// transport (Core 5.4 Vol 4 Part A H4 framing lives in HCITransport), taps it into a btsnoop file when asked
// (`SnoopingTransport`), creates the stack's `DispatchEventLoop`, runs the controller initialisation (Vol 4 Part E
// §4.4, §7.3, §7.8) and waits for it with a time limit. `virtual` is the shared air: it joins the air hub at the default socket,
// started first when none runs (`SharedAirHub`, the one place that starts the shared air: the `blue` tool spawns
// itself, a library spawns the `blue` it finds, else hosts the hub in its own process; OpenCoreBluetooth's
// `air:PATH` asks it too, where PATH's directory exists); `in-process` is an in-process air: of the stack's own
// here, the process's one (`InProcessAir.process`) for CoreBluetooth managers and async stacks, so that they meet.
// `VirtualControllerTransport` is the in-process HCI transport between a host and a `VirtualController`.
// `InProcessAir` puts N stacks on one private air (demo, benchmarks, tests). The launched stack's transport is
// wrapped (`LossWatchingTransport`) so that the end of the controller while the stack runs is one value,
// `StackLoss`, reported to the stack's and the process's observers (the `blue` tool ends every command with it).
//
// Who owns the state: each `LaunchedStack` owns its `HostStack`, its loop and its snoop sink; the host's state is
// confined to that loop (see Host's design note). The event-handler table is a `LockedValue` read on the loop.
// `InProcessAir` owns the `VirtualAir` and its controllers, confined to the air's own loop.
//
// Executors: `open` is async and waits for initialisation with a continuation resumed exactly once (completion or
// timer). Everything else runs on the stack's loop. No thread or task per packet.
