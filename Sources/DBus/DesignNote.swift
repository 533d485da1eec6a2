// DBus — design note
//
// What: a client of the D-Bus message bus in Swift, written from the D-Bus Specification (version 0.43: "Message
// Protocol": type system, marshaling, message format; "Authentication Protocol": SASL EXTERNAL; "Message Bus
// Specification": Hello, match rules), so that the BlueZ backend (issue 16) talks to bluetoothd over the system bus
// with nothing but the C library: no libdbus, GLib or sd-bus at build or run time, and `swift run blue demo` on a
// fresh machine needs nothing more. Why our own: the Swift D-Bus packages we could use wrap libdbus (a system
// library to install and a C callback model to bridge) or are not in the offline package set; the wire protocol is
// small, fully specified, and checked here against a real dbus-daemon and GLib's gdbus (Tests/DBusTests).
//
// Layers: DBusType (signatures, validated: depth, dict entries, length) → DBusValue (a typed value tree) →
// DBusWriter / DBusReader (marshaling with the spec's alignment, both byte orders read, little-endian written;
// every length, depth, UTF-8 string and boolean of hostile input checked, DBusError.decode naming the offset) →
// DBusMessage (header fields, framing, the 128 MiB limit) → DBusConnection (a UNIX stream socket, SASL EXTERNAL,
// Hello, calls with a time limit, signals, exported object paths; DBusSocket/DBusInbox: recvmsg/sendmsg with the
// file descriptors that travel with the octets).
//
// Who owns the state, which executor runs it: a DBusConnection owns its socket; one reader thread per connection
// reads frames with poll (woken by a pipe to stop) and dispatches replies, signals and incoming calls on it; the
// state (pending replies by serial, handlers) sits behind a lock. Writes are whole messages under a write lock.
// Every wait on the bus is bounded: the authentication exchange (its own limit), each call (`timeout`, 25 s by
// default as libdbus), and the reader ends every pending call with `.disconnected` when the bus goes away.
//
// File descriptors (type 'h', header field UNIX_FDS; for bluetoothd's AcquireWrite/AcquireNotify): negotiated after
// `OK` with NEGOTIATE_UNIX_FD (`canPassUnixFDs`; an ERROR answer only means none pass), sent as SCM_RIGHTS with a
// message's first octets, received close-on-exec into the reader's queue (in arrival order), from which a decoded
// message takes as many as its header announces (`DBusMessage.fileDescriptors`; `.unixFD(i)` values index it).
// Who owns them: a sender keeps its own (the kernel passes copies); a reply delivered to a call belongs to the
// caller (close them or hand them on); a call to an exported object and a signal only lend theirs to the handlers,
// and the connection closes them once the handlers returned; a reply a handler returns is handed to the
// connection, which closes its descriptors once sent. Everything else is closed, never leaked: descriptors no
// message announced (left when every octet received is decoded), those of a message nobody takes (an unknown
// object, an error reply, a reply after its time limit), those the reader holds when the connection ends. Hostile
// input ends the connection like an undecodable frame: a message announcing more than arrived or more than 64,
// more than 64 at once (MSG_CTRUNC: the kernel dropped some, so the queue no longer matches the messages), more
// than 256 waiting.
