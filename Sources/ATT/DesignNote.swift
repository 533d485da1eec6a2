// ATT: the Attribute Protocol's PDUs (Core 5.4 Vol 3 Part F §3.4).
//
// What this layer is: the PDU codecs and the bearer state machine (`ATTBearer`, below). `ATTOpcode` is the open opcode set (bit 6 command flag, bit 7 authentication
// signature flag); `ATTOpcodeTable` says, for every opcode the specification defines, its kind (request, response,
// command, notification, indication, confirmation), the response that answers a request, and the length rule a
// PDU must satisfy. `ATTPDU` is one enum case per PDU, decoded from and encoded to the bytes of one L2CAP
// basic-frame payload on the ATT fixed channel (CID 0x0004).
//
// Decoding order: opcode octet -> table lookup (unknown opcode: DecodeError.unknownType) -> length rule
// (DecodeError.invalidLength) -> field decoding (truncated / trailingBytes / invalidLength / invalidValue).
// Handles of 0x0000 and inverted handle ranges decode fine on purpose, so that the server can answer them with
// Invalid Handle (and the right handle) instead of Invalid PDU: `ATTPDU.validate()` finds them. When decoding
// fails, `ATTPDU.errorResponse(answeringUndecodable:)` says what a server answers (Request Not Supported
// for unknown requests, Invalid PDU for malformed ones, nothing for commands and non-requests).
// `ATTServerInput(classifying:)` does all of it at once: process / respond with this Error Response / ignore.
//
// `ATTMTU` holds the pure functions that size values for a given ATT_MTU; the `packing` builders of the list
// responses fill a response up to the MTU the way GATT servers must.
//
// State: the codecs are pure values, no I/O, usable from any thread or executor. `ATTBearer` is the sans-I/O
// bearer state machine (one outstanding request, 30 s transaction timeout, MTU exchange, indications), owned by
// the Host per bearer: the unenhanced bearer on the fixed channel 0x0004, and Enhanced ATT bearers
// (`ATTBearer(enhancedMTU:)`, Vol 3 Part F §3.2.11) on L2CAP enhanced credit-based channels of SPSM 0x0027,
// whose ATT_MTU comes from L2CAP (no Exchange MTU; raised by a reconfiguration). The bearer does not know its
// transport: the Host carries its bytes on the fixed channel or as SDUs of the channel.
