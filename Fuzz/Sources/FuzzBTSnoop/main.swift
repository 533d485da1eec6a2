// libFuzzer entry point: btsnoop capture reading, and each capture read in order with its context as
// `blue snoop show` reads it (SnoopFormatter: per-controller CaptureDecoders, monitor packets of datalink 2001).
import BluetoothCore
import BluetoothDissector
import HCI
import CLibFuzzer

func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    if let capture = try? BTSnoopReader.readAll(bytes) {
        var formatter = SnoopFormatter()
        for (index, record) in capture.records.enumerated() {
            _ = record.dissection
            _ = try? record.frame(datalink: capture.header.datalink)
            _ = formatter.format(record, number: index + 1, datalink: capture.header.datalink)
        }
    }
    return 0
}

// SwiftPM links an executable's `main` to `<Target>_main`; hand control to libFuzzer's driver from there.
@_cdecl("FuzzBTSnoop_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { fuzzOne($0, $1) }
}
