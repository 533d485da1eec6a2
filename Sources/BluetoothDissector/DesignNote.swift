// BluetoothDissector — design note
//
// What: recognises which kind of packet a buffer holds (H4, bare HCI command or event, ACL, L2CAP basic frame,
// ATT, SMP, advertising data) and describes it field by field by asking the owning codec module for its
// `Dissectable.dissection`. It also descends: an H4 ACL packet is reassembled into its L2CAP frame, whose channel
// picks ATT, SMP or LE signaling; an LE Advertising Report's data is decoded as advertising data.
//
// State: `PacketDissector` is a namespace of pure functions over `[UInt8]` (one packet, no context: `blue decode`).
// A capture is read in order by a `CaptureDecoder`, one per host (the packets of one controller), owned by its
// caller (`SnoopFormatter` for `blue snoop show`, `blue monitor` one per device under its lock): it reassembles
// ACL fragments into L2CAP PDUs, learns the credit-based channels from the LE signaling (`L2CAPChannelTracker`:
// a channel end is (handle, direction, CID), since both devices number their own), reassembles K-frames into
// SDUs and decodes ATT on EATT bearers (SPSM 0x0027), and joins extended advertising data from command fragments
// and report pieces (`ExtendedReportAssembler`, the host scanner's own). All of it bounded, dropped per
// connection on Disconnection Complete or a new connection with the same handle. A link-layer capture (LINKTYPE
// 256/251, read by LinkLayer's `LinkLayerCaptureReader`) is read in order by a `LinkLayerSnoopFormatter`: advertising
// PDUs with their AdvData, auxiliary chains joined, LL control procedures in the spec's terms, and each data PDU fed
// to a `CaptureDecoder` as the ACL fragment it carries, so everything above the link layer reads as in an HCI capture.
//
// Recognition order (first decoder that consumes the whole buffer wins; `--as` bypasses it): H4 (type octet and
// length field match exactly), HCI event, HCI command, ACL, L2CAP basic frame, advertising data, ATT, SMP. The
// length fields of the framed formats make false positives rare; for the unframed ones (AD, ATT, SMP) the user
// can force a kind. When nothing matches, the error lists why each decoder refused, with offsets.
