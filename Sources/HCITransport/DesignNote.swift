// HCITransport: the pipes between a host and a controller (Core 5.4 Vol 4 Part A §2, H4 framing of the HCI
// packets of Vol 4 Part E §5.4).
//
// What it is: implementations of the `HCITransport` protocol — `InProcessHCITransport.makePair()` (host and a
// virtual controller in one process), `SocketH4Transport` (H4 over TCP or a UNIX stream socket, client side or
// accepted from an `H4Listener`), `SerialH4Transport` (H4 over a raw tty), `HCIUserChannelTransport` (the Linux HCI
// user channel: our host on a kernel controller), `VHCIControllerTransport` (the controller end of /dev/vhci: a
// controller of ours under the kernel, `blue air --vhci`; both proven on Linux 6.1 by Scripts/vm-test.sh), and
// `SnoopingTransport` (a btsnoop tap around any of them, written through `BTSnoopFileSink`).
// `HCITransportSpec` is the grammar of transports and opens those that need no virtual controller; StackLauncher's
// `StackSpecification` is the one reader of a stack's name and hands transports to it.
//
// Who owns the state: each transport owns its descriptor, its `H4Framer` and its callbacks. Shared mutable state
// (started/closing flags, callbacks) sits behind `LockedValue`; writes are serialized by a per-transport lock.
// The descriptor is closed exactly once, by the reader thread as it ends (after any write in progress), so no
// write ever reaches a closed or reused descriptor.
//
// Which executor runs it: none of the stack's. Each descriptor transport has ONE reader thread (a detached pthread
// doing poll + blocking read; a stream socket is read directly, since `close()` shuts it down) that deframes and
// calls `onFrame` in order (or `onFrames` once with every frame one read brought: the host's one hop per read), then
// `onClose` exactly once; `send(frames:)` writes a batch with one system call on a byte stream (one per packet on
// the HCI user channel, where each write is one packet); the in-process pair delivers from one serial DispatchQueue
// per side. Owners hop to their `EventLoop` from these callbacks (`loop.execute { ... }`; the host uses
// `executeHandingOver`, with which a `DispatchEventLoop` lets the reader thread run the job itself: no second thread
// woken per batch). `send` is callable from any thread. `close()` never blocks: it
// shuts the socket down and wakes the reader through its wake channel; `onClose(nil)` follows on the reader thread.
//
// Descriptor ownership (who closes, when; issue 10):
// - A descriptor transport owns its descriptor from `init` (it takes it over even when `init` throws). It is closed
//   exactly once: by the reader thread as it ends, under the write lock (so no write reaches a closed or reused
//   number), or by `close()`/`deinit` when the transport never started. `close()` only shuts the socket down and
//   pokes the wake channel; it never closes what another thread may be polling.
// - `H4Listener` owns its listening socket the same way: closed by its accept thread as it ends. Each accepted
//   descriptor is handed over to a `SocketH4Transport` at once.
// - Every descriptor is close-on-exec from birth (SOCK_CLOEXEC, O_CLOEXEC, accept4, a socket pair for the wake
//   channel): a child spawned by any thread of the process never holds our connections open after we close them.
// - Nothing here is registered with Dispatch. Readers are plain threads blocked in `poll` or `read`. The project has no
//   descriptor-based Dispatch source at all (no `readabilityHandler`, `DispatchSource.makeReadSource`,
//   `DispatchIO`): corelibs-libdispatch on Linux loses events and corrupts its epoll bookkeeping when such sources
//   are set up and torn down from many threads (swift-corelibs-libdispatch#949; measured here, see
//   `DescriptorOwnershipTests`), which crashed a whole test run in `_dispatch_event_loop_drain`. No Dispatch signal
//   source either: they lose a signal that arrives before libdispatch registered them (blue's ProcessSignals uses
//   a sigaction handler and a self-pipe instead).
//
// Failure model: peer EOF / ECONNRESET -> `.closedByPeer`; a poisoned H4 stream -> `.framingError` naming the
// stream offset (frames completed before it are delivered first); other I/O errors -> `.ioError`; opening errors
// -> `.openFailed` with the errno text and what to do.
