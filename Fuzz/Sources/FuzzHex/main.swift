// libFuzzer entry point: BluetoothCore.Hex.decode and BluetoothUUID/BluetoothAddress parsing of user text.
import BluetoothCore
import CLibFuzzer

func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    let text = String(decoding: bytes, as: UTF8.self)
    _ = try? Hex.decode(text)
    _ = try? BluetoothUUID(string: text)
    _ = try? BluetoothAddress(string: text)
    _ = try? BluetoothUUID(littleEndianBytes: bytes)
    return 0
}

// SwiftPM links an executable's `main` to `<Target>_main`; hand control to libFuzzer's driver from there.
@_cdecl("FuzzHex_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { fuzzOne($0, $1) }
}
