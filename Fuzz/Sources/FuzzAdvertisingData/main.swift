// libFuzzer entry point: advertising data, iBeacon and Eddystone decoding.
import AdvertisingData
import BluetoothCore
import CLibFuzzer

func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    for kind in [AdvertisingData.Kind.legacy, .extended] {
        if let data = try? AdvertisingData(decoding: bytes, kind: kind) {
            _ = data.dissection
            _ = data.localName
            _ = data.serviceUUIDs
            _ = try? IBeacon(advertisement: data)
            _ = try? EddystoneFrame(advertisement: data)
        }
        _ = try? AdvertisingData(decoding: bytes, kind: kind, lenient: true)
    }
    return 0
}

// SwiftPM links an executable's `main` to `<Target>_main`; hand control to libFuzzer's driver from there.
@_cdecl("FuzzAdvertisingData_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { fuzzOne($0, $1) }
}
