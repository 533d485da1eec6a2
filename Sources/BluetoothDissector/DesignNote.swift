// BluetoothDissector — design note
//
// What: recognises which kind of packet a buffer holds (H4, bare HCI command or event, ACL, L2CAP basic frame,
// ATT, SMP, advertising data) and describes it field by field by asking the owning codec module for its
// `Dissectable.dissection`. It also descends: an H4 ACL packet is reassembled into its L2CAP frame, whose channel
// picks ATT, SMP or LE signaling; an LE Advertising Report's data is decoded as advertising data.
//
// State: none. `PacketDissector` is a namespace of pure functions over `[UInt8]`; `SnoopFormatter` keeps only the
// first timestamp of a capture. Any thread may call it.
//
// Recognition order (first decoder that consumes the whole buffer wins; `--as` bypasses it): H4 (type octet and
// length field match exactly), HCI event, HCI command, ACL, L2CAP basic frame, advertising data, ATT, SMP. The
// length fields of the framed formats make false positives rare; for the unframed ones (AD, ATT, SMP) the user
// can force a kind. When nothing matches, the error lists why each decoder refused, with offsets.
