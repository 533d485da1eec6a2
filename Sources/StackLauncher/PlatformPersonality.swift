public import BluetoothEngine
import FoundationEssentials
public import Host
public import L2CAP
public import SMP

/// A phone's or a Linux machine's Bluetooth stack as a central meets it in the peripheral role: the defaults each
/// platform's stack has, for `blue serve --personality iphone|android|bluez` and the test kit's declared
/// peripherals. Where each value comes from is in the README ("Peer personalities"): Apple's Accessory Design
/// Guidelines and what iOS does on the air, AOSP's Bluetooth stack and its configuration defaults, BlueZ's
/// `main.conf` defaults and the Linux kernel's L2CAP code.
public enum PlatformPersonality: String, CaseIterable, Sendable {
    case iphone
    case android
    case bluez

    /// The ATT_MTU offered in Exchange MTU (Core 5.4 Vol 3 Part F §3.4.2): an iPhone's 185 (iOS 10 and later),
    /// Android's 517 (GATT_MAX_MTU_SIZE), BlueZ's `ExchangeMTU` default of 517.
    public var attMTU: Int {
        switch self {
        case .iphone: 185
        case .android, .bluez: 517
        }
    }

    /// The data length asked once connected (LE Set Data Length, Vol 4 Part E §7.8.33): iPhones (7 and later) and
    /// Android ask for 251 octets; BlueZ leaves it to the kernel, which asks for none.
    public var suggestedDataLength: UInt16? {
        switch self {
        case .iphone, .android: 251
        case .bluez: nil
        }
    }

    /// The IO capability paired with (Vol 3 Part H §2.3.2): a phone has a keyboard and a display; BlueZ's as
    /// bluetoothctl's default agent registers it. MITM protection is asked for.
    public var ioCapability: SMPIOCapability { .keyboardDisplay }

    /// How often the resolvable private address changes (Vol 3 Part C §10.7.2.2): both phones every 15 minutes
    /// (iOS; AOSP's `BTM_BLE_PRIVATE_ADDR_INT_MS`); BlueZ advertises its public address (`Privacy = off`).
    public var privateAddressRotation: Duration? {
        switch self {
        case .iphone, .android: .seconds(900)
        case .bluez: nil
        }
    }

    /// The GAP Device Name (Vol 3 Part C §12.1), which is not the app's advertised local name on a phone: the
    /// device's name ("iPhone", "Pixel 8"); BlueZ names the adapter after the machine.
    public var deviceName: String {
        switch self {
        case .iphone: "iPhone"
        case .android: "Pixel 8"
        case .bluez: ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "BlueZ"
        }
    }

    /// Advertising that does not fit the 31 octets of legacy PDUs is refused with an error
    /// (`ADVERTISE_FAILED_DATA_TOO_LARGE`) on Android, where the others leave service UUIDs out until it fits.
    public var refusesOversizedAdvertising: Bool { self == .android }

    /// Whether the platform's GATT server leaves everything to the app, as Android's `BluetoothGattServer` does:
    /// the app adds the 2902 descriptor itself, answers each request with `sendResponse`, and
    /// `notifyCharacteristicChanged` refuses a value while the last is not sent. iOS and BlueZ answer in the stack.
    public var appRunsTheGATTServer: Bool { self == .android }

    /// The connection parameters asked for as peripheral once connected (L2CAP Connection Parameter Update
    /// Request, Vol 3 Part A §4.20). Linux asks when the interval is outside its configured 30–50 ms (the kernel's
    /// `l2cap_le_conn_ready`: `le_conn_min_interval` 24, `le_conn_max_interval` 40, latency 0, timeout 42 = 420 ms).
    /// Phones ask for nothing by themselves: iOS only when the app calls `setDesiredConnectionLatency`, and
    /// Android's `BluetoothGattServer` has no such call.
    public func connectionParameterRequest(for current: ConnectionParameters) -> L2CAPConnectionParameterUpdateRequest? {
        guard self == .bluez, current.interval < 24 || current.interval > 40 else { return nil }
        return L2CAPConnectionParameterUpdateRequest(intervalMin: 24, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 42)
    }

    /// An app's advertising uses legacy PDUs on a phone (iOS offers nothing else; Android only when asked through
    /// `AdvertisingSet`).
    public var legacyAdvertisingOnly: Bool { self != .bluez }

    /// The platform's ATT_MTU and data length in `host`, and its pairing: its IO capability with MITM asked, and
    /// its private address rotation.
    public func configure(_ host: inout HostConfiguration) {
        host.preferredATTMTU = attMTU
        host.enhancedATTMTU = UInt16(attMTU)
        host.suggestedDataLength = suggestedDataLength
        host.security.ioCapability = ioCapability
        host.security.mitm = ioCapability != .noInputNoOutput
        if let rotation = privateAddressRotation { host.security.privateAddressRotation = rotation }
    }
}
