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
// Hello, calls with a time limit, signals, exported object paths).
//
// Who owns the state, which executor runs it: a DBusConnection owns its socket; one reader thread per connection
// reads frames with poll (woken by a pipe to stop) and dispatches replies, signals and incoming calls on it; the
// state (pending replies by serial, handlers) sits behind a lock. Writes are whole messages under a write lock.
// Every wait on the bus is bounded: the authentication exchange (its own limit), each call (`timeout`, 25 s by
// default as libdbus), and the reader ends every pending call with `.disconnected` when the bus goes away.
