// SMP: design note.
//
// What this layer is: the codecs of the Security Manager Protocol PDUs (Core 5.4 Vol 3 Part H §3), carried on
// the LE fixed channel 0x0006: pairing feature exchange, confirm/random values, public keys, DHKey checks,
// key distribution and keypress notifications, plus the field types they use (IO capability, AuthReq, key
// distribution bitfields).
//
// Who owns state: the PDU types are pure values. `SMPSession` is the pairing state machine of one link (both
// roles; method selection, LE SC and legacy exchanges, key distribution, the 30 s SMP timeout after which SMP
// is dead on that link), sans-I/O: the Host owns one per connection, feeds it PDUs, user answers, encryption
// changes and `now`, and performs the actions it returns. Its DocC comment is the detailed design note. The bond
// store belongs to the Host; the cryptographic toolbox (c1, s1, f4-f6, g2, ah) is in BluetoothCrypto.
//
// Which executor: none of its own. PDU values are usable on any thread; an `SMPSession` runs on the owner's loop.
//
// Byte order: every multi-octet field is kept in wire order (least significant octet first), including the
// 128-bit values (confirm, random, LTK, IRK, CSRK, DHKey check) and the P-256 coordinates, which are `[UInt8]`
// exactly as they appear in the PDU. The spec's sample data prints them most significant octet first; reverse
// before comparing with it.
//
// Decoding: one PDU per B-frame, so `SMPPDU(decoding:)` takes the whole payload; the code's exact length comes
// from `SMPCode.pduLengths`. Reserved codes decode as `.unknown` (the Host ignores them or answers
// Pairing Failed "Command Not Supported"); wrong lengths and out-of-range values throw `DecodeError`, which the
// Host answers with Pairing Failed "Invalid Parameters".
