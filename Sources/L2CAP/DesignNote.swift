// L2CAP: design note.
//
// What this layer is: the codecs of the Logical Link Control and Adaptation Protocol as LE uses it
// (Core 5.4 Vol 3 Part A): basic frames (B-frames, §3.1) that carry ATT, SMP and signaling over fixed channels,
// the LE signaling channel's commands (§4, CID 0x0005: one command per C-frame on LE), and the segmentation and
// reassembly of SDUs over LE Credit Based Flow Control channels (K-frames, §3.4).
//
// Who owns state: the codecs are pure values (`L2CAPBasicFrame`, `L2CAPSignalingCommand`). `L2CAPSDUReassembler`
// is a small struct each credit-based channel of an `L2CAPLink` keeps (and a capture reader may keep, as
// BluetoothDissector does); it returns complete SDUs or a typed `L2CAPSDUError` naming the rule the peer broke
// (the link then closes the channel as a violation and disconnects it, as §3.4.3 requires).
//
// `L2CAPLink` is the one stateful part: the sans-I/O state machine of one LE ACL link (fixed channels, signaling
// identifiers and the RTX timeout, credit-based channel tables and credits, connection parameter update requests).
// Credit-based channels come in two modes (§3.4): LE Credit Based Flow Control (opened one at a time, §4.22) and
// Enhanced Credit Based Flow Control (`L2CAPLink+Enhanced.swift`: up to 5 channels per L2CAP Credit Based
// Connection Request, §4.25/§4.26, MTU/MPS at least 64, and the Credit Based Reconfigure procedure, §4.27/§4.28,
// in both roles). Both modes are the same channel value (`L2CAPCreditBasedChannel`, with a `mode`): K-frame
// segmentation, reassembly, credits and the violation rules exist once; only opening and reconfiguring differ.
// EATT (SPSM 0x0027) is an enhanced-mode server/client of the Host, not something this layer knows about.
// The Host owns one per connection on its EventLoop, feeds it reassembled frames and `now`, carries out the
// actions it returns, and arms one timer for its `nextDeadline`.
//
// Which executor: none of its own. Codecs are pure values with no state, usable on any thread; the reassembler
// and `L2CAPLink` are owned by the stack's serial executor like every other per-connection state machine.
//
// Decoding: every decoder reads through `ByteReader` and throws `DecodeError`; exact lengths per signaling
// command come from one table (`L2CAPSignalingCode.leLengthRule`). Value-range checks the specification
// answers with a protocol result rather than with a Command Reject (connection parameters, MTU/MPS minimums,
// credit counts) are in `validate()`, so the Host can still read the identifier and answer properly.
