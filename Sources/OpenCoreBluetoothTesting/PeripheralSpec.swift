public import Foundation
import OpenCoreBluetooth
public import StackLauncher

/// A peripheral a test declares (GAP Peripheral role, Core 5.4 Vol 3 Part C §2.2.2.3): what it advertises and how
/// often, its name, its GATT services, who answers the app's requests, the ATT_MTU it offers, and where it stands.
/// Built as Nordic's mock builds a `CBMPeripheralSpec`:
///
/// ```swift
/// let spec = PeripheralSpec.simulatePeripheral(proximity: .near)
///     .advertising(advertisementData: [CBAdvertisementDataLocalNameKey: "Lock",
///                                      CBAdvertisementDataServiceUUIDsKey: [lockService]],
///                  withInterval: 0.1)
///     .connectable(name: "Lock", services: [service], delegate: LockBehaviour(), mtu: 185)
///     .build()
/// ```
public struct PeripheralSpec: Sendable {
    /// The GAP Device Name, and the advertised local name unless the advertising data gives its own.
    public var name: String?
    /// The advertised local name (nil: none advertised).
    public var advertisedName: String?
    /// The service UUIDs advertised.
    public var advertisedServiceUUIDs: [String] = []
    /// Manufacturer-specific data advertised (the company identifier in its first two octets, little-endian).
    public var manufacturerData: Data?
    /// Whether it advertises at all.
    public var isAdvertising = false
    /// The advertising interval (20 ms...10.24 s).
    public var advertisingInterval: Duration = .milliseconds(100)
    /// Whether a central can connect (connectable advertising, Vol 6 Part B §2.3.1.1).
    public var isConnectable = false
    public var services: [SimulatedService] = []
    public var delegate: (any SimulatedPeripheralDelegate)?
    /// The ATT_MTU it offers (23...517): an iPhone's 185, Android's 517.
    public var attMTU = 517
    /// The connection parameters it asks for once connected, when the link's are not within them (nil: none, or
    /// what its personality asks for).
    public var connectionParameters: SimulatedConnectionParameters?
    /// The platform whose Bluetooth stack it runs (nil: a plain accessory, our host's defaults).
    public var personality: PlatformPersonality?
    public var proximity: SimulatedProximity

    public init(proximity: SimulatedProximity = .near) {
        self.proximity = proximity
    }

    /// Starts a declaration (Nordic's `CBMPeripheralSpec.simulatePeripheral(proximity:)`).
    public static func simulatePeripheral(proximity: SimulatedProximity = .near) -> Builder {
        Builder(spec: PeripheralSpec(proximity: proximity))
    }

    /// The steps of a declaration; ``build()`` ends it.
    public struct Builder: Sendable {
        var spec: PeripheralSpec

        /// What it advertises, read from CoreBluetooth's advertisement keys (`CBAdvertisementDataLocalNameKey`,
        /// `CBAdvertisementDataServiceUUIDsKey`, `CBAdvertisementDataManufacturerDataKey`), every `interval` seconds.
        public func advertising(advertisementData: [String: Any], withInterval interval: TimeInterval = 0.1) -> Builder {
            var next = self
            next.spec.isAdvertising = true
            next.spec.advertisedName = advertisementData[CBAdvertisementDataLocalNameKey] as? String
            next.spec.advertisedServiceUUIDs = (advertisementData[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID] ?? []).map(\.uuidString)
            next.spec.manufacturerData = advertisementData[CBAdvertisementDataManufacturerDataKey] as? Data
            next.spec.advertisingInterval = .milliseconds(Int64((min(max(interval, 0.02), 10.24) * 1000).rounded()))
            return next
        }

        /// A GATT server a central can connect to, answered by `delegate` (nil: every default), offering `mtu` (nil:
        /// its personality's, else 517).
        public func connectable(name: String, services: [SimulatedService], delegate: (any SimulatedPeripheralDelegate)? = nil,
                                mtu: Int? = nil) -> Builder {
            var next = self
            next.spec.isConnectable = true
            next.spec.name = name
            next.spec.services = services
            next.spec.delegate = delegate
            if let mtu { next.spec.attMTU = min(max(mtu, 23), 517) }
            return next
        }

        /// Runs a platform's Bluetooth stack as the app meets it in the peripheral role (``PlatformPersonality``,
        /// as `blue serve --personality`): its ATT_MTU (unless `connectable(mtu:)` gives one), data length and
        /// pairing; on Android, the GATT server of `BluetoothGattServer` (a CCCD only where the test declares a 0x2902
        /// descriptor, one value update in flight at a time); on Linux, the connection parameters the kernel asks
        /// for (30–50 ms). Not simulated: the phones' 15-minute address rotation (tests are shorter).
        public func personality(_ personality: PlatformPersonality) -> Builder {
            var next = self
            next.spec.personality = personality
            next.spec.attMTU = personality.attMTU
            return next
        }

        /// Asks the app's central for these connection parameters once connected, when the link's interval is not
        /// within `interval` (L2CAP Connection Parameter Update Request, Vol 3 Part A §4.20).
        public func requestingConnectionParameters(interval: ClosedRange<Duration>, latency: Int = 0,
                                                   supervisionTimeout: Duration = .seconds(4)) -> Builder {
            var next = self
            next.spec.connectionParameters = SimulatedConnectionParameters(interval: interval, latency: latency,
                                                                           supervisionTimeout: supervisionTimeout)
            return next
        }

        public func build() -> PeripheralSpec { spec }
    }
}
