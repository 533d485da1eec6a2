// swift-tools-version: 6.1
//
// OpenCoreBluetooth: CoreBluetooth for Linux, with the whole BLE stack underneath.
// The layers (dependencies point down only) are described in ../shared/DESIGN.md and README.md.

import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "OpenCoreBluetooth",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "BluetoothCore", targets: ["BluetoothCore"]),
        .library(name: "AdvertisingData", targets: ["AdvertisingData"]),
        .library(name: "BluetoothCrypto", targets: ["BluetoothCrypto"]),
        .library(name: "HCI", targets: ["HCI"]),
        .library(name: "L2CAP", targets: ["L2CAP"]),
        .library(name: "ATT", targets: ["ATT"]),
        .library(name: "SMP", targets: ["SMP"]),
        .library(name: "BluetoothDissector", targets: ["BluetoothDissector"]),
        .library(name: "BluetoothRuntime", targets: ["BluetoothRuntime"]),
        .library(name: "GATT", targets: ["GATT"]),
        .library(name: "SystemInterface", targets: ["SystemInterface"]),
        .library(name: "HCITransport", targets: ["HCITransport"]),
        .library(name: "LinkLayer", targets: ["LinkLayer"]),
        .library(name: "VirtualController", targets: ["VirtualController"]),
        .library(name: "SharedAir", targets: ["SharedAir"]),
        .library(name: "AirConsole", targets: ["AirConsole"]),
        .library(name: "BluetoothEngine", targets: ["BluetoothEngine"]),
        .library(name: "Host", targets: ["Host"]),
        .library(name: "ServiceEngine", targets: ["ServiceEngine"]),
        .library(name: "StackLauncher", targets: ["StackLauncher"]),
        .library(name: "BluetoothService", targets: ["BluetoothService"]),
        .library(name: "BluetoothLE", targets: ["BluetoothLE"]),
        .library(name: "OpenCoreBluetooth", targets: ["OpenCoreBluetooth"]),
        .library(name: "OpenCoreBluetoothTesting", targets: ["OpenCoreBluetoothTesting"]),
        .executable(name: "blue", targets: ["blue"]),
        .executable(name: "Seed001Peripheral", targets: ["Seed001Peripheral"]),
        .executable(name: "Seed001Central", targets: ["Seed001Central"]),
        .executable(name: "Seed002Central", targets: ["Seed002Central"]),
        .executable(name: "Seed002Peripheral", targets: ["Seed002Peripheral"]),
        .executable(name: "Seed002TutorialCentral", targets: ["Seed002TutorialCentral"]),
        .executable(name: "Seed002TutorialPeripheral", targets: ["Seed002TutorialPeripheral"]),
        .executable(name: "Seed003Central", targets: ["Seed003Central"]),
        .executable(name: "Seed004Central", targets: ["Seed004Central"]),
        .executable(name: "RestoringHeartRateCentral", targets: ["RestoringHeartRateCentral"]),
        .executable(name: "RestoringHeartRatePeripheral", targets: ["RestoringHeartRatePeripheral"]),
        .executable(name: "ChatPeripheral", targets: ["ChatPeripheral"]),
        .executable(name: "L2CAPEcho", targets: ["L2CAPEcho"]),
        .executable(name: "BatteryLE", targets: ["BatteryLE"]),
    ],
    traits: [
        // `blue demo` and `blue chat`: CoreBluetooth programs, on OpenCoreBluetooth, which re-exports Foundation as
        // CoreBluetooth does (and Foundation maps ICU). Without it (`--disable-default-traits`) `blue` and every
        // library under it run on FoundationEssentials alone: what a device that only serves or scans deploys.
        .trait(name: "CoreBluetoothPrograms",
               description: "blue demo and blue chat (OpenCoreBluetooth, and with it Foundation and ICU)"),
        .default(enabledTraits: ["CoreBluetoothPrograms"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        // `swift package generate-documentation`: DocC catalogs of BluetoothLE and OpenCoreBluetooth.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // The library logs through swift-log (a label per layer, LogLabel); programs route it.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // DeadlineSchedule (the air's events, the host's session deadlines) is a heap (HeapModule).
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // The air console's HTTP and WebSocket server (AirConsole): SwiftNIO itself, not a framework on top of it.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // Foundation-free value types shared by every layer.
        .target(name: "BluetoothCore", swiftSettings: strict),
        // Advertising and scan response data (Core Supplement Part A), beacons.
        .target(name: "AdvertisingData", dependencies: ["BluetoothCore"], swiftSettings: strict),
        // The LE security toolbox (Vol 3 Part H §2.2) and link-layer AES-CCM (Vol 6 Part E).
        .target(
            name: "BluetoothCrypto",
            dependencies: [
                "BluetoothCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // HCI packets (Vol 4 Part E), H4 framing (Vol 4 Part A), ACL fragmentation, btsnoop.
        .target(name: "HCI", dependencies: ["BluetoothCore"], swiftSettings: strict),
        // L2CAP basic frames and LE signaling (Vol 3 Part A).
        .target(name: "L2CAP", dependencies: ["BluetoothCore", .product(name: "DequeModule", package: "swift-collections")], swiftSettings: strict),
        // ATT PDUs (Vol 3 Part F).
        .target(name: "ATT", dependencies: ["BluetoothCore", .product(name: "DequeModule", package: "swift-collections")], swiftSettings: strict),
        // SMP PDUs (Vol 3 Part H §3).
        .target(name: "SMP", dependencies: ["BluetoothCore", "BluetoothCrypto", .product(name: "DequeModule", package: "swift-collections")], swiftSettings: strict),
        // Event loops (serial executor + injectable clock), timers, locks: the concurrency model of DESIGN.md.
        .target(
            name: "BluetoothRuntime",
            dependencies: [
                "BluetoothCore", "SystemInterface", .product(name: "Logging", package: "swift-log"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: strict
        ),
        // GATT server database and procedures, GATT client procedures (Vol 3 Part G), sans-I/O over ATT.
        .target(name: "GATT", dependencies: ["BluetoothCore", "ATT", .product(name: "DequeModule", package: "swift-collections")], swiftSettings: strict),
        // HCI transports: in-process, H4 over TCP / UNIX / serial, Linux HCI user channel, btsnoop tap.
        .target(name: "HCITransport", dependencies: ["BluetoothCore", "HCI", "BluetoothRuntime", "SystemInterface"], swiftSettings: strict),
        // POSIX calls, socket addresses and peer processes, shared by the transports, the bus client and the hub.
        .target(name: "SystemInterface", swiftSettings: strict),
        // A D-Bus client (the wire protocol, a connection on its own reader thread), for the bluetoothd engine.
        .target(name: "DBus", dependencies: ["BluetoothCore", "BluetoothRuntime", "SystemInterface", .product(name: "DequeModule", package: "swift-collections")], swiftSettings: strict),
        // bluetoothd as an engine: its D-Bus API (adapters, devices, the GATT client and a GATT application,
        // advertising, pairing agents) and the kernel's L2CAP sockets, behind the seam both APIs use.
        .target(
            name: "BlueZ",
            dependencies: [
                "DBus", "BluetoothRuntime", "BluetoothCore", "BluetoothCrypto", "BluetoothEngine", "HCI", "ATT", "GATT", "L2CAP", "SMP", "AdvertisingData",
                "SystemInterface", .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Link-layer packets (Core 5.4 Vol 6 Part B §2): advertising and data channel PDUs, LL control PDUs, the
        // Common Extended Advertising Payload Format, the CRC, and link-layer capture files.
        .target(name: "LinkLayer", dependencies: ["BluetoothCore", "HCI"], swiftSettings: strict),
        // A software LE controller (controller side of HCI, link layer) and the virtual air it shares.
        .target(
            name: "VirtualController",
            dependencies: ["BluetoothCore", "HCI", "LinkLayer", "BluetoothCrypto", "BluetoothRuntime",
                           .product(name: "DequeModule", package: "swift-collections"), .product(name: "HeapModule", package: "swift-collections")],
            swiftSettings: strict
        ),
        // The shared air's server: one VirtualAir for many processes (host, control and monitor sockets, H4 on TCP,
        // /dev/vhci), its recorder and replay, and the link-layer sniffer.
        .target(
            name: "SharedAir",
            dependencies: ["BluetoothCore", "HCI", "HCITransport", "LinkLayer", "VirtualController", "BluetoothRuntime", "SystemInterface", "CMallocStatistics", .product(name: "DequeModule", package: "swift-collections")],
            swiftSettings: strict
        ),
        // The air console (`blue air --console`): a web page and a control API for a running hub, over HTTP and a
        // WebSocket (SwiftNIO), loopback and a token unless told otherwise.
        .target(
            name: "AirConsole",
            dependencies: ["SharedAir", "VirtualController", "BluetoothCore", "BluetoothDissector", "BluetoothRuntime", "HCI",
                           "HCITransport", .product(name: "DequeModule", package: "swift-collections"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOHTTP1", package: "swift-nio"),
                           .product(name: "NIOWebSocket", package: "swift-nio")],
            swiftSettings: strict
        ),
        // The engine seam: what the APIs ask of a Bluetooth stack (StackEngine) and the vocabulary both engines speak
        // (events, scan reports, connections, options, errors, pairing); our host and bluetoothd are engines.
        .target(
            name: "BluetoothEngine",
            dependencies: ["BluetoothCore", "BluetoothCrypto", "BluetoothRuntime", "HCI", "ATT", "GATT", "L2CAP", "SMP", "AdvertisingData"],
            swiftSettings: strict
        ),
        // The service engine: the seam's calls and events over a UNIX socket to the per-user Bluetooth service,
        // which runs our host for programs that outlive themselves (the wire protocol and the program's side).
        .target(
            name: "ServiceEngine",
            dependencies: ["BluetoothCore", "BluetoothCrypto", "BluetoothRuntime", "BluetoothEngine", "HCI", "ATT", "GATT", "L2CAP", "SMP",
                           "AdvertisingData", "SystemInterface", .product(name: "DequeModule", package: "swift-collections")],
            swiftSettings: strict
        ),
        // The host stack: HCI command pipe, ACL flow control, connections, GAP; wires L2CAP, ATT/GATT, SMP.
        .target(
            name: "Host",
            dependencies: [
                "BluetoothCore", "BluetoothRuntime", "BluetoothEngine", "HCI", "HCITransport", "L2CAP", "ATT", "GATT", "SMP",
                "AdvertisingData", "BluetoothCrypto", "SystemInterface", .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: strict
        ),
        // Opens a HostStack on any transport named by `--hci` (virtual air in-process or via the hub, TCP, UNIX,
        // serial, Linux user channel).
        .target(
            name: "StackLauncher",
            dependencies: ["BluetoothCore", "BluetoothRuntime", "BluetoothEngine", "Host", "HCI", "HCITransport", "VirtualController", "SharedAir", "SystemInterface",
                           "BlueZ", "L2CAP", "SMP", "ServiceEngine", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // The per-user Bluetooth service (`blue service`): keeps programs' stacks, also after the program dies.
        .target(
            name: "BluetoothService",
            dependencies: ["BluetoothCore", "BluetoothRuntime", "BluetoothEngine", "ServiceEngine", "StackLauncher", "SharedAir", "GATT", "Host",
                           "SystemInterface", .product(name: "Logging", package: "swift-log"),
                           .product(name: "DequeModule", package: "swift-collections")],
            swiftSettings: strict
        ),
        // The modern async API: scanning and notifications as AsyncSequences, async GATT, declarative servers.
        .target(
            name: "BluetoothLE",
            dependencies: [
                "BluetoothCore", "BluetoothRuntime", "BluetoothEngine", "Host", "GATT", "ATT", "L2CAP", "AdvertisingData", "StackLauncher",
                "HCI", "SMP", "BlueZ", .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: strict
        ),
        // Apple's CoreBluetooth API (CB* classes, delegates, constants) on this stack.
        .target(
            name: "OpenCoreBluetooth",
            dependencies: [
                "BluetoothCore", "BluetoothRuntime", "BluetoothEngine", "Host", "GATT", "ATT", "L2CAP", "AdvertisingData", "HCITransport",
                "StackLauncher", "ServiceEngine", "DBus", "BlueZ", "SystemInterface", .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: strict
        ),
        // The test kit: the world around a CoreBluetooth app, declared and driven from its tests.
        .target(
            name: "OpenCoreBluetoothTesting",
            dependencies: ["OpenCoreBluetooth", "BluetoothCore", "BluetoothRuntime", "BluetoothEngine", "Host", "GATT",
                           "StackLauncher", "VirtualController", "SharedAir", "AdvertisingData", "BluetoothLE", "L2CAP"],
            swiftSettings: strict
        ),
        // Recognises a packet of any layer and describes it field by field (used by `blue decode`).
        .target(
            name: "BluetoothDissector",
            dependencies: ["BluetoothCore", "AdvertisingData", "HCI", "LinkLayer", "L2CAP", "ATT", "SMP"],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "blue",
            dependencies: ["BluetoothEngine",
                "BluetoothCore", "HCI", "BluetoothDissector", "BluetoothRuntime", "HCITransport", "LinkLayer", "VirtualController", "SharedAir",
                "Host", "AdvertisingData", "StackLauncher", "GATT", "ATT", "L2CAP", "SMP", "BluetoothCrypto", "BluetoothLE", "DBus", "BlueZ", "SystemInterface",
                "CMallocStatistics", "BluetoothService", "AirConsole",
                .target(name: "OpenCoreBluetooth", condition: .when(traits: ["CoreBluetoothPrograms"])),
                .target(name: "Seed001PeripheralApp", condition: .when(traits: ["CoreBluetoothPrograms"])),
                .target(name: "Seed001CentralApp", condition: .when(traits: ["CoreBluetoothPrograms"])),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict,
            plugins: ["BuildInfo"]
        ),
        // glibc's allocation statistics (`blue bench connections`: bytes allocated per link).
        .target(name: "CMallocStatistics"),
        // `blue --version`'s commit, from git at build time.
        .plugin(name: "BuildInfo", capability: .buildTool()),
        // The harness the example programs share (their name on log and failure lines, --timeout, the main queue).
        .target(name: "ExampleSupport", dependencies: ["BluetoothRuntime"], path: "Examples/ExampleSupport", swiftSettings: strict),
        // The seed apps (issue 5 item 2): CoreBluetooth programs with `import OpenCoreBluetooth`, run by ExamplesTests.
        // Seed 001's two apps, the seed's code in one copy each (both call their types BluetoothManager: a module
        // each), run by the Seed001 programs and `blue demo`, tested by OpenCoreBluetoothTests.
        .target(name: "Seed001PeripheralApp", dependencies: ["OpenCoreBluetooth", "BluetoothRuntime"], path: "Examples/Seed001PeripheralApp", swiftSettings: strict),
        .target(name: "Seed001CentralApp", dependencies: ["OpenCoreBluetooth", "BluetoothRuntime"], path: "Examples/Seed001CentralApp", swiftSettings: strict),
        .executableTarget(name: "Seed001Peripheral", dependencies: ["Seed001PeripheralApp", "ExampleSupport"], path: "Examples/Seed001Peripheral", swiftSettings: strict),
        .executableTarget(name: "Seed001Central", dependencies: ["Seed001CentralApp", "ExampleSupport"], path: "Examples/Seed001Central", swiftSettings: strict),
        // A heart-rate central with state restoration, as an iOS app writes it (the Bluetooth service keeps its link).
        .executableTarget(name: "RestoringHeartRateCentral", dependencies: ["OpenCoreBluetooth", "ExampleSupport"],
                          path: "Examples/RestoringHeartRateCentral", swiftSettings: strict),
        // Its peripheral side: a heart-rate sensor app whose centrals stay subscribed while it is terminated.
        .executableTarget(name: "RestoringHeartRatePeripheral", dependencies: ["OpenCoreBluetooth", "ExampleSupport"],
                          path: "Examples/RestoringHeartRatePeripheral", swiftSettings: strict),
        .executableTarget(name: "Seed002Central", dependencies: ["OpenCoreBluetooth", "ExampleSupport"], path: "Examples/Seed002Central", swiftSettings: strict),
        .executableTarget(name: "Seed002Peripheral", dependencies: ["OpenCoreBluetooth", "ExampleSupport"], path: "Examples/Seed002Peripheral", swiftSettings: strict),
        .executableTarget(name: "Seed002TutorialCentral", dependencies: ["OpenCoreBluetooth", "ExampleSupport"], path: "Examples/Seed002TutorialCentral", swiftSettings: strict),
        .executableTarget(name: "Seed002TutorialPeripheral", dependencies: ["OpenCoreBluetooth", "ExampleSupport"], path: "Examples/Seed002TutorialPeripheral", swiftSettings: strict),
        .executableTarget(name: "Seed003Central", dependencies: ["OpenCoreBluetooth", "ExampleSupport"], path: "Examples/Seed003Central", swiftSettings: strict),
        .target(name: "Seed004CentralApp", dependencies: ["OpenCoreBluetooth", "BluetoothRuntime"], path: "Examples/Seed004CentralApp", swiftSettings: strict),
        .executableTarget(name: "Seed004Central", dependencies: ["Seed004CentralApp", "ExampleSupport"], path: "Examples/Seed004Central", swiftSettings: strict),
        .executableTarget(name: "ChatPeripheral", dependencies: ["OpenCoreBluetooth", "ExampleSupport"], path: "Examples/ChatPeripheral", swiftSettings: strict),
        // A CoreBluetooth L2CAP channel between two programs (publish, PSM characteristic, open, echo): the BlueZ
        // backend's kernel sockets are checked with it in the VM.
        .executableTarget(name: "L2CAPEcho", dependencies: ["OpenCoreBluetooth", "ExampleSupport"], path: "Examples/L2CAPEcho", swiftSettings: strict),
        .executableTarget(name: "BatteryLE", dependencies: ["BluetoothLE", "ExampleSupport"], path: "Examples/BatteryLE", swiftSettings: strict),
        .target(name: "TestSupport", dependencies: ["BluetoothCore"], path: "Tests/TestSupport", swiftSettings: strict),
        // A bluetoothd stand-in on a test dbus-daemon, for the BlueZ backend's tests (OpenCoreBluetooth, blue).
        .target(name: "BlueZTestSupport", dependencies: ["DBus", "TestSupport"], path: "Tests/BlueZTestSupport", swiftSettings: strict),
        .testTarget(
            name: "AdvertisingDataTests",
            dependencies: ["AdvertisingData", "TestSupport", .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BluetoothServiceTests",
            dependencies: ["BluetoothService", "ServiceEngine", "StackLauncher", "SharedAir", "BluetoothLE", "BluetoothEngine", "BluetoothCore", "OpenCoreBluetooth",
                           "BluetoothRuntime", "HCITransport", "GATT", "ATT", "AdvertisingData", "SystemInterface", "TestSupport"],
            swiftSettings: strict
        ),
        .testTarget(name: "BluetoothCryptoTests", dependencies: ["BluetoothCrypto", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "DBusTests", dependencies: ["DBus", "BlueZ", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "HCITests",
            dependencies: ["HCI", "TestSupport", .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "L2CAPTests",
            dependencies: ["L2CAP", "BluetoothRuntime", "TestSupport", .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ATTTests",
            dependencies: ["ATT", "BluetoothRuntime", "TestSupport", .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SMPTests",
            dependencies: ["SMP", "BluetoothCrypto", "TestSupport", .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "GATTTests",
            dependencies: ["GATT", "ATT", "BluetoothRuntime", "TestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HCITransportTests",
            dependencies: ["HCITransport", "HCI", "BluetoothRuntime", "SystemInterface", "TestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "VirtualControllerTests",
            dependencies: ["VirtualController", "SharedAir", "AirConsole", "LinkLayer", "StackLauncher", "HCI", "HCITransport", "BluetoothRuntime", "BluetoothCrypto", "SystemInterface", "TestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HostTests",
            dependencies: ["BluetoothEngine",
                "Host", "HCI", "HCITransport", "BluetoothRuntime", "L2CAP", "ATT", "GATT", "AdvertisingData", "SMP",
                "VirtualController", "SharedAir", "StackLauncher", "BluetoothCrypto", "TestSupport", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "OpenCoreBluetoothTestingTests",
            // blue: the captures' test replays the recording with it.
            dependencies: ["OpenCoreBluetoothTesting", "OpenCoreBluetooth", "BluetoothCore", "BluetoothRuntime", "Seed001CentralApp", "Seed001PeripheralApp", "Seed004CentralApp", "StackLauncher", "blue"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "OpenCoreBluetoothTests",
            dependencies: ["BluetoothEngine",
                "OpenCoreBluetooth", "AdvertisingData", "BluetoothRuntime", "DBus", "BlueZ", "BluetoothCore", "Host", "GATT", "ATT", "StackLauncher", "SharedAir",
                "VirtualController", "TestSupport", "BlueZTestSupport", "Seed001PeripheralApp", "Seed001CentralApp",
                // The example programs run as subprocesses in the tests: depending on them builds them.
                "Seed001Peripheral", "Seed001Central", "Seed002Central", "Seed002Peripheral", "Seed002TutorialCentral",
                "Seed002TutorialPeripheral", "Seed003Central",
                "Seed004Central", "ChatPeripheral", "L2CAPEcho", "blue",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "StackLauncherTests",
            dependencies: ["BluetoothEngine", "BlueZ",
                "StackLauncher", "Host", "HCITransport", "VirtualController", "SharedAir", "BluetoothRuntime", "ATT", "GATT", "TestSupport",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BluetoothLETests",
            dependencies: ["BluetoothEngine",
                "BluetoothLE", "Host", "VirtualController", "BluetoothRuntime", "BluetoothCore", "GATT", "StackLauncher",
                "TestSupport", "BlueZTestSupport", "DBus", "BlueZ",
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "BluetoothRuntimeTests", dependencies: ["BluetoothRuntime"], swiftSettings: strict),
        .testTarget(name: "BluetoothDissectorTests", dependencies: ["BluetoothDissector", "TestSupport"], exclude: ["Fixtures"], swiftSettings: strict),
        .testTarget(name: "BlueToolTests", dependencies: ["BluetoothEngine", "blue", "TestSupport", "BlueZTestSupport", "AdvertisingData", "BluetoothCore"], swiftSettings: strict),
        .testTarget(
            name: "BluetoothCoreTests",
            dependencies: ["BluetoothCore", "TestSupport", .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
