// BluetoothCore — design note
//
// What: the value types every layer shares. `ByteReader`/`ByteWriter` (bounds-checked, little-endian by default,
// errors are `DecodeError` with a code, an offset and a reason naming the field); `BluetoothUUID` (Vol 3 Part B
// §2.5.1, normalised so that a base-UUID 128-bit value equals its 16-bit alias) and `BluetoothAddress` (Vol 6
// Part B §1.3); open code types (`OpenCode`: every raw value representable, known ones print the spec's name —
// HCI status, ATT error, SMP reason, L2CAP result, AD type, company identifier, appearance); the SIG assigned
// numbers, generated into Generated/ by Scripts/generate-assigned-numbers.py and committed; `Dissection`, the tree
// every codec describes its PDUs with; `StackInstant`, a point on a stack's timeline (nanoseconds from its loop's
// epoch), so that the sans-I/O layers (L2CAP, ATT, GATT, SMP) take time as a value and import no runtime.
// Also the few text and identity helpers the upper layers would otherwise take from Foundation: `PeerIdentifier`
// (a peer's stable identifier, a name-based UUID over `SHA1`, RFC 9562 §5.5; `CBPeerIdentifier` wraps it),
// `PercentEncoding` (RFC 3986 §2.1, decoding D-Bus addresses and the console's query strings) and
// `trimmingWhitespace()`.
//
// State: none. Everything here is a Sendable value; any thread may use it. No Foundation.
//
// Rule: nothing in this module may trap on input. Readers throw; `Hex`, `BluetoothUUID(string:)` and
// `BluetoothAddress(string:)` take user text and throw `DecodeError(.malformedText)` with the character offset.
