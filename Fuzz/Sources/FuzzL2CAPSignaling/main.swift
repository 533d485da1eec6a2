// libFuzzer entry point: L2CAP LE signaling, basic frames and credit-based SDU reassembly.
import BluetoothCore
import L2CAP
import CLibFuzzer

func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    // Whatever decodes must re-encode to something that decodes to the same value.
    if let value = try? L2CAPSignalingCommand(decoding: bytes) {
        guard let again = try? L2CAPSignalingCommand(decoding: value.encode()), again == value else {
            fatalError("re-encoding changed the value: \\(Hex.encode(bytes))")
        }
    }
    if let command = try? L2CAPSignalingCommand(decoding: bytes) { _ = command.dissection; _ = try? command.validate() }
    _ = try? L2CAPSignalingHeader(decoding: bytes)
    _ = try? L2CAPBasicFrame(decoding: bytes)
    // K-frame reassembly: the input split into K-frames at its first octet's length.
    var reassembler = L2CAPSDUReassembler(mtu: 512, mps: 64)
    var rest = bytes[...]
    while let first = rest.first {
        let count = min(Int(first), rest.count)
        _ = try? reassembler.receive(Array(rest.prefix(count)))
        rest = rest.dropFirst(max(1, count))
    }
    return 0
}

// SwiftPM links an executable's `main` to `<Target>_main`; hand control to libFuzzer's driver from there.
@_cdecl("FuzzL2CAPSignaling_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { fuzzOne($0, $1) }
}
