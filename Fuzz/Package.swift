// swift-tools-version: 6.1
//
// libFuzzer entry points, one executable per decoder (Fuzz/Sources/Fuzz*/main.swift).
// Built by Scripts/fuzz.sh with `-sanitize=fuzzer,address`; not part of the main package's build.
// Add a new entry point's folder name to `entries` (SwiftPM caches manifests, so the list is explicit).

import PackageDescription

let entries = [
    "FuzzACLReassembly",
    "FuzzATT",
    "FuzzAdvertisingData",
    "FuzzBTSnoop",
    "FuzzH4Framer",
    "FuzzHCICommand",
    "FuzzHCIEvent",
    "FuzzHex",
    "FuzzL2CAPSignaling",
    "FuzzLinkLayer",
    "FuzzSMP",
]

let libraries = ["BluetoothCore", "BluetoothRuntime", "AdvertisingData", "HCI", "L2CAP", "ATT", "SMP", "BluetoothDissector", "LinkLayer", "VirtualController"]

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
