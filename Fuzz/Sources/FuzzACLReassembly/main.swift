// libFuzzer entry point: ACL packet decoding and reassembly into L2CAP PDUs.
import BluetoothCore
import HCI
import CLibFuzzer

func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    // The input is a stream of H4 ACL frames; every ACL packet goes to the reassembler.
    var framer = H4Framer()
    var reassembler = ACLReassembler(maximumPDULength: 4096, maximumPendingHandles: 4)
    for frame in framer.append(bytes) {
        guard let packet = try? HCIACLDataPacket(frame: frame) else { continue }
        _ = packet.dissection
        _ = reassembler.receive(packet)
    }
    _ = try? HCIACLDataPacket(decoding: bytes)
    return 0
}

// SwiftPM links an executable's `main` to `<Target>_main`; hand control to libFuzzer's driver from there.
@_cdecl("FuzzACLReassembly_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { fuzzOne($0, $1) }
}
