// AdvertisingData — design note
//
// What: codecs for LE advertising and scan response data (Core 5.4 Vol 3 Part C §11, Core Specification
// Supplement Part A §1): the ordered list of AD structures `[length][AD type][data]`, a typed case per AD type
// (`ADStructure`), a builder that checks the 31-octet (legacy) or 1650-octet (extended) budget, the accessors a
// scanner needs (local name, service UUIDs, service data, manufacturer data, TX power, appearance, flags), and
// the two common beacon formats carried inside AD structures: Apple iBeacon (manufacturer data) and Google
// Eddystone (service data of 0xFEAA: UID, URL, TLM, EID).
//
// State: none. Every type here is a pure value (Sendable, Hashable); decoders take `[UInt8]` from an
// untrusted peer and throw `DecodeError` (never trap); encoders are total. Any thread, any executor.
//
// Decoding choices (documented once, here):
// - Framing is strict: a length octet that runs past the end of the buffer is a `DecodeError(.truncated)`, an
//   input longer than the caller's cap (31 legacy / 1650 extended) is `.invalidLength`.
// - A zero length octet ends the significant part (Vol 3 Part C §11: "early termination"); the octets after
//   it (normally zero padding to 31) are ignored and are not kept, so `encode()` returns only the significant
//   part.
// - Contents are strict by default (a 16-bit UUID list of odd length, a 2-octet TX power... throw). With
//   `lenient: true` a structure whose contents do not parse is kept as `.unknown(type, data)` instead, so a
//   scanner still sees the rest of a sloppy advertiser's data.
// - Unknown AD types decode as `.unknown(type, data)` and re-encode byte for byte. Local names and URIs keep
//   their raw octets, so invalid UTF-8 is neither a crash nor lost.
// - Re-encoding a decoded value reproduces the input octets, except for two non-canonical forms: a 4-octet
//   Advertising Interval - long whose value fits in 3 octets (re-encoded in 3), and the reserved bits of the
//   LE Bluetooth Device Address type octet (dropped).
