import BluetoothRuntime
package import DBus
import BluetoothCore
import FoundationEssentials

/// The pairing prompts of OpenCoreBluetooth's managers on bluetoothd. On iOS the system asks the user (Just Works
/// consent, the Numeric Comparison value, a passkey); on bluetoothd the *default agent* asks, which on a desktop is
/// its Bluetooth applet: with `OCB_BLUEZ_AGENT` unset, that is what happens (and on a machine with no agent,
/// bluetoothd refuses pairings that need one). With `OCB_BLUEZ_AGENT=CAPABILITY` (DisplayOnly, DisplayYesNo,
/// KeyboardOnly, NoInputNoOutput, KeyboardDisplay) the backend registers an agent of its own as the default
/// (BlueZ's doc/org.bluez.AgentManager.rst RequestDefaultAgent) for as long as it runs: Just Works and Numeric
/// Comparison are accepted, each value logged (notice, label opencorebluetooth.bluez); a passkey to display is logged; a passkey to type
/// is `OCB_BLUEZ_PASSKEY` (six digits), else the request is refused.
package struct BlueZPairingAgent: Sendable {
    package static let environmentVariable = "OCB_BLUEZ_AGENT"
    package static let passkeyVariable = "OCB_BLUEZ_PASSKEY"

    package var capability: BlueZAgent.Capability
    package var passkey: UInt32?

    package init(capability: BlueZAgent.Capability, passkey: UInt32?) {
        self.capability = capability
        self.passkey = passkey
    }

    /// The agent the environment asks for, nil when none (or an unknown capability, logged as a warning).
    package static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> BlueZPairingAgent? {
        guard let text = environment[environmentVariable]?.trimmingWhitespace(), !text.isEmpty else { return nil }
        guard let capability = BlueZAgent.Capability.allCases.first(where: { $0.rawValue.lowercased() == text.lowercased() }) else {
            let capabilities = BlueZAgent.Capability.allCases.map(\.rawValue).joined(separator: ", ")
            Log.bluez.warning("\(environmentVariable)=\(text) is not an IO capability (\(capabilities)); bluetoothd's agent answers")
            return nil
        }
        let passkey = environment[passkeyVariable].flatMap { UInt32($0.trimmingWhitespace()) }.flatMap { $0 <= 999_999 ? $0 : nil }
        return BlueZPairingAgent(capability: capability, passkey: passkey)
    }

    /// Registers the agent at `path` as bluetoothd's default; prompts and refusals go to `report` (the backend's prompt).
    package func register(on connection: DBusConnection, path: String,
                  report: @escaping @Sendable (String) -> Void) async throws(DBusError) -> BlueZAgent {
        let passkey = passkey
        return try await BlueZAgent.register(on: connection, path: path, capability: capability, makeDefault: true) { request, answer in
            switch request {
            case .confirmValue(let device, let value):
                report("pairing with \(Self.name(device)): numeric comparison \(Self.six(value)) (confirmed)")
                answer(.accept)
            case .displayPasskey(let device, let value, let entered) where entered == 0:
                report("pairing with \(Self.name(device)): type the passkey \(Self.six(value)) on the device")
            case .enterPasskey(let device):
                if let passkey {
                    answer(.passkey(passkey))
                } else {
                    report("pairing with \(Self.name(device)) needs the passkey the device shows: set \(Self.passkeyVariable)")
                    answer(.reject)
                }
            case .authorizePairing, .authorizeService:
                answer(.accept)
            case .enterPinCode, .displayPinCode, .displayPasskey, .cancelled:
                answer(.reject)
            }
        }
    }

    /// "AA:BB:CC:DD:EE:FF" from a device path.
    package static func name(_ device: String) -> String {
        guard let last = device.split(separator: "/").last, last.hasPrefix("dev_") else { return device }
        return String(last.dropFirst(4)).replacing("_", with: ":")
    }

    package static func six(_ value: UInt32) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, 6 - text.count)) + text
    }
}
