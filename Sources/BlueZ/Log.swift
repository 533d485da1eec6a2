import BluetoothRuntime
import Logging

/// The logger of the bluetoothd engine and its D-Bus clients (``LogLabel/bluez``): what bluetoothd refused outside
/// any call (`error`), a pairing agent's prompts (`notice`), a wrong `OCB_BLUEZ_AGENT` (`warning`).
enum Log {
    static let bluez = Logger(label: LogLabel.bluez)
}
