// libFuzzer entry point: the link layer's decoders (Core 5.4 Vol 6 Part B §2.3.4, §2.4.2): the first octet picks
// an LL control PDU (opcode and CtrData), a Common Extended Advertising Payload or a link-layer capture file (the
// rest of the input).
import BluetoothCore
import CLibFuzzer
import LinkLayer

func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    guard let selector = bytes.first else { return 0 }
    let rest = Array(bytes.dropFirst())
    // Whatever decodes must re-encode to the bytes it came from (both formats are exact).
    switch selector % 3 {
    case 0:
        if let pdu = try? LinkLayerControlPDU(decoding: rest), pdu.encode() != rest {
            fatalError("LL control PDU re-encoded differently: \(Hex.encode(rest))")
        }
    case 1:
        fuzzExtendedPayload(rest, selector: selector)
    default:
        // A link-layer capture file (LinkLayerCaptureReader): packets or a typed error, never a trap.
        if let capture = try? LinkLayerCaptureReader.read(rest) {
            for packet in capture.packets where packet.pdu.count < 2 { fatalError("a packet without its PDU header") }
        }
    }
    return 0
}

func fuzzExtendedPayload(_ rest: [UInt8], selector: UInt8) {
    if let payload = try? ExtendedAdvertisingPayload(decoding: rest, txAddRandom: selector & 2 != 0, rxAddRandom: selector & 4 != 0) {
        guard let again = try? ExtendedAdvertisingPayload(decoding: payload.encode(), txAddRandom: selector & 2 != 0,
                                                          rxAddRandom: selector & 4 != 0), again == payload else {
            fatalError("extended advertising payload re-encoded differently: \(Hex.encode(rest))")
        }
    }
}

// SwiftPM links an executable's `main` to `<Target>_main`; hand control to libFuzzer's driver from there.
@_cdecl("FuzzLinkLayer_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { fuzzOne($0, $1) }
}
