// libFuzzer entry point: HCIEvent decoding (event packets without the H4 type octet).
import BluetoothCore
import HCI
import CLibFuzzer

func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    // Whatever decodes must re-encode to something that decodes to the same value.
    if let value = try? HCIEvent(decoding: bytes) {
        guard let again = try? HCIEvent(decoding: value.encode()), again == value else {
            fatalError("re-encoding changed the value: \\(Hex.encode(bytes))")
        }
    }
    if let event = try? HCIEvent(decoding: bytes) { _ = event.dissection }
    return 0
}

// SwiftPM links an executable's `main` to `<Target>_main`; hand control to libFuzzer's driver from there.
@_cdecl("FuzzHCIEvent_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { fuzzOne($0, $1) }
}
