// libFuzzer entry point: HCICommand decoding (command packets without the H4 type octet).
import BluetoothCore
import HCI
import CLibFuzzer

func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    // Whatever decodes must re-encode to something that decodes to the same value.
    if let value = try? HCICommand(decoding: bytes) {
        guard let again = try? HCICommand(decoding: value.encode()), again == value else {
            fatalError("re-encoding changed the value: \\(Hex.encode(bytes))")
        }
    }
    if let command = try? HCICommand(decoding: bytes) { _ = command.dissection }
    return 0
}

// SwiftPM links an executable's `main` to `<Target>_main`; hand control to libFuzzer's driver from there.
@_cdecl("FuzzHCICommand_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { fuzzOne($0, $1) }
}
