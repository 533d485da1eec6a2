// SystemInterface — design note
//
// What: the few operating-system calls that the HCI transports, the D-Bus client and the air hub share, so that none
// of them depends on another for them: `POSIX` (errno text, full writes with or without SIGPIPE, close-on-exec pipes
// and socket pairs, closing once), `SocketAddress` (UNIX, IPv4 and IPv6 socket addresses, sockets made
// close-on-exec, connect with EINTR handled, UNIX sockets bound 0600), `PeerProcess` and `PeerCredentials` (who is at
// the other end of a UNIX socket: SO_PEERCRED and /proc/PID/comm), and `PrivateDirectory` / `SocketOwnership` (folders
// and sockets only this user controls, checked as OpenSSH and tmux check theirs: issue 30). Also what the libraries
// took from Foundation before they moved to FoundationEssentials (issue 31: a program that serves or scans maps no
// Foundation and no ICU): `DetachedThread` (a named, detached pthread: every reader, accept loop and driver thread),
// `ConditionLock` (mutex and condition variable, timed waits on the monotonic clock), `PathComponents`, and
// `POSIX.readFile` (bounded) / `fileSize` / `describe(_:)` (a FileManager error's reason in one line).
//
// State: none but a `ConditionLock`'s own mutex. Every call is a thin, synchronous wrapper; descriptors belong to
// their callers (HCITransport's design note says who closes what). Only `POSIX.describe` imports FoundationEssentials
// (for its error types); the rest is libc.
//
// Rule: nothing Bluetooth here, nothing registered with Dispatch (HCITransport's note says why).
