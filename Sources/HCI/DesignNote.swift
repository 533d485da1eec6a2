// HCI — the Host Controller Interface as packets (Core 5.4 Vol 4 Part E; H4 framing Vol 4 Part A).
//
// What this layer is: pure codecs, both directions. The host encodes `HCICommand` and decodes `HCIEvent`;
// the virtual controller decodes `HCICommand` and encodes `HCIEvent`. `HCICommand.table` lists every command
// this build knows (name, exact parameter length, Command Complete return length) and drives validation;
// `HCIReturnParameters` types the return parameters of Command Complete by opcode. Framing/ACL (Framing/) adds
// the H4 packet indicator, ACL data packets, fragmentation/reassembly and btsnoop files.
//
// Extended advertising, scanning and initiating (Bluetooth 5, §7.8.52–§7.8.66, §7.7.65.17–19): in the table
// (five of them variable-length: `Info.isVariableLength`, `parameterLength` is then the fixed part), decoded field
// by field into `HCICommand.extended(HCIExtendedCommand)` and `HCILEMetaEvent.extended(HCIExtendedLEMetaEvent)`
// (kept in their own enums: one concept per file, and the host and controller handle them in their own files).
//
// State: none. Every type here is an immutable value (Sendable, Hashable); decoders take untrusted bytes through
// `BluetoothCore.ByteReader` and throw `DecodeError`, never trap. Connection handles are masked to 12 bits and
// checked against 0x0EFF. Credits, pending commands and the connection table belong to Host (or to the
// VirtualController), which drives these codecs on its own serial executor.
//
// Executor: any thread; nothing here is isolated.
//
// Framing (Sources/HCI/Framing): pure values as well. `H4Framer` is owned by a transport's single ordered reader
// and holds at most one partial frame; after an unknown packet type or an over-long length the stream is poisoned
// until `reset()`. `ACLFragmenter` and `ACLReassembler` belong to the host's ACL path on the stack executor; the
// reassembler keeps one partial L2CAP PDU per handle, capped in size and in handles, and forgets a handle on
// Disconnection Complete. The btsnoop writer and reader work on bytes; the caller does the file I/O. The reader
// takes datalinks 1001, 1002 and 2001 (btmon's: each record an `HCIMonitorPacket`, the packet format the kernel's
// monitor channel gives too). `ExtendedReportAssembler` joins extended advertising report pieces, bounded, for the
// host's scanner and for capture readers alike.
