// SharedAir — design note
//
// What: the shared air's server (`blue air`, started on demand by StackLauncher): one `VirtualAir` on one
// DispatchEventLoop, with a VirtualController for each host that joins over its UNIX socket, and around it the
// control socket (`SOCKET.control`, faults and moves: `AirHubFault`, `blue fault`), the monitor socket
// (`SOCKET.monitor`, every controller's HCI traffic for `blue monitor`), H4 on TCP (`--h4-tcp`, a controller for an
// external host such as Bumble), /dev/vhci (`--vhci`, a controller for the Linux kernel), the recorder and replay
// (`AirRecorder`, `AirReplay`: `--record`, `--replay`) and the link-layer sniffer (`LinkLayerSniffer`, `--sniff`).
// `AirHubLauncher` starts a hub as a child process and waits for its socket.
//
// Trust (issue 30): the socket's folder is created 0700 and checked before the hub listens and before any client
// probes, connects or spawns a hub there (`AirHub.prepareSocketFolder`, `AirHub.checkTrust`, SystemInterface's
// `PrivateDirectory`): the default folders must be private to the user, a folder the user named must be the user's
// or root's and not writable by others unless sticky. Every socket is bound 0600; a client also checks that the
// socket file and the hub's SO_PEERCRED uid are the user's or root's, and the control and monitor sockets refuse
// peers of another uid (the monitor carries keys). TCP listeners bind loopback unless told otherwise; any local
// user can reach them.
//
// Who owns the state: the air and its controllers are confined to the hub's loop (VirtualController's note). Each
// host connection has one reader thread (HCITransport's descriptor transports) that hops frames onto the loop, and
// one bounded outbox (`AirHubOutbox`) drained off the loop, everything waiting written as one batch (one system call
// and one wake-up of the host per connection event, not per packet), so a host that stops reading is disconnected
// when it overflows rather than stalling the air. Faults are applied on the loop, as steps (so they are recorded and
// replayed). The recorder and the sniffer append under their own locks to buffered files (`BufferedOutputFile`);
// the recording and the capture are ended in one job on the loop, so no step falls between them.
//
// Replay: a recording is the air's seed and configuration and its steps with their times; `AirReplay` runs them on a
// ManualEventLoop with the air's timer driven by the recorded firings and compares each controller's digest of the
// frames it sent its host (`FrameDigest`) with the recorded one.
//
// Memory over hours: the hub keeps nothing per host once the host has left (its controller, outbox and reader
// thread go with it), and its statistics carry the process's heap in use (glibc's mallinfo2), so that a soak tells
// memory the hub holds from its resident size, which also counts what the allocator keeps for reuse and the pages
// of thread stacks (Scripts/soak.py judges both).
