// StackLauncher: from a `--hci` text to a running host stack.
//
// What it is: the edge that turns a transport specification (DESIGN.md "Transports", `HCITransportSpec`:
// virtual, in-process, air:PATH, tcp:HOST:PORT, unix:PATH, serial:..., hciN) into a started `HostStack`: it opens the
// transport (Core 5.4 Vol 4 Part A H4 framing lives in HCITransport), taps it into a btsnoop file when asked
// (`SnoopingTransport`), creates the stack's `DispatchEventLoop`, runs the controller initialisation (Vol 4 Part E
// §4.4, §7.3, §7.8) and waits for it with a time limit. `virtual` is the shared air: it joins the air hub at the default socket,
// started first when none runs (`SharedAirHub`: the `blue` tool spawns itself, a library spawns the `blue` it
// finds, else hosts the hub in its own process); `in-process` is an air of the process's own.
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
