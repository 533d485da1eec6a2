// swift-tools-version: 6.1
//
// libFuzzer entry points, one executable per decoder, discovered from Fuzz/Sources/Fuzz*/.
// Built by Scripts/fuzz.sh with `-sanitize=fuzzer,address`; not part of the main package's build.

import Foundation
import PackageDescription

let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
let entries = ((try? FileManager.default.contentsOfDirectory(atPath: here.appendingPathComponent("Sources").path)) ?? [])
    .filter { $0.hasPrefix("Fuzz") && $0 != "FuzzSupport" }
    .sorted()

let libraries = ["BluetoothCore", "AdvertisingData", "HCI", "L2CAP", "ATT", "SMP"]

let package = Package(
    name: "OpenCoreBluetoothFuzz",
    dependencies: [.package(name: "OpenCoreBluetooth", path: "..")],
    targets: [.target(name: "CLibFuzzer")] + entries.map { name in
        .executableTarget(
            name: name,
            dependencies: ["CLibFuzzer"] + libraries.map { .product(name: $0, package: "OpenCoreBluetooth") },
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        )
    },
    swiftLanguageModes: [.v6]
)
