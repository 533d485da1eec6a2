// LinkLayer — design note
//
// What: the packets of the LE link layer (Core 5.4 Vol 6 Part B §2), as values with codecs, for whoever makes or
// reads them: the virtual controller (VirtualController), the air's sniffer (SharedAir) and the capture reader of
// `blue snoop show` (BluetoothDissector). `AdvertisingChannelPDU` (§2.3: ADV_*, SCAN_REQ/RSP, CONNECT_IND with its
// LLData), `ExtendedAdvertisingPayload` (§2.3.4, the Common Extended Advertising Payload Format: AdvA, TargetA, ADI,
// AuxPtr, SyncInfo, TxPower, ACAD), `LinkLayerDataHeader` and `LinkLayerControlPDU` (§2.4, the LL control PDUs the
// procedures of §5.1 exchange), `LinkLayerCRC` (§3.1.1) and `LinkLayerCaptureReader` (pcap files of
// LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR and LINKTYPE_BLUETOOTH_LE_LL, as sniffers write them).
//
// State: none; Sendable values. Rule: as everywhere, decoders take hostile bytes (a sniffer's file, a peer's PDU)
// and throw `DecodeError`, never trap; exact lengths where the specification fixes them; unknown opcodes are kept.
