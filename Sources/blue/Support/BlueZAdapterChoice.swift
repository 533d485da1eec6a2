import BlueZ
import StackLauncher

/// The adapter `--hci bluez` / `bluez:hciN` names (nil: bluetoothd's first), for the commands that talk to
/// bluetoothd's own objects besides its engine (pair's agent, bonds).
struct BlueZAdapterChoice: Sendable {
    var name: String?
}
