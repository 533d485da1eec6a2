// libFuzzer entry point: the incremental H4 framer (chunking invariance).
import BluetoothCore
import HCI
import CLibFuzzer

func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    // The same stream whole and in chunks whose sizes come from the data itself must give the same frames.
    var whole = H4Framer()
    let all = whole.append(bytes)
    var chunked = H4Framer()
    var pieces: [H4Frame] = []
    var index = 0
    while index < bytes.count {
        let size = Int(bytes[index] % 7) + 1
        pieces += chunked.append(bytes[index..<min(bytes.count, index + size)])
        index += size
    }
    guard all == pieces, (whole.failure == nil) == (chunked.failure == nil) else {
        fatalError("chunking changed the frames: \(Hex.encode(bytes))")
    }
    _ = try? H4Frame(decoding: bytes)
    return 0
}

// SwiftPM links an executable's `main` to `<Target>_main`; hand control to libFuzzer's driver from there.
@_cdecl("FuzzH4Framer_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { fuzzOne($0, $1) }
}
