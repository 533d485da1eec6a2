import BlueZ
public import BluetoothEngine
import Host

extension StackLauncher {
    /// The bonds of the engine `specification` names (nil: our host): bluetoothd's paired devices for
    /// `bluez[:hciN]`, else our host's bond store in `directory` (nil: ``FileBondStore/defaultDirectory()``), which
    /// every transport of our host shares. A folder given with bluetoothd is refused (it keeps its bonds itself).
    public static func bondKeeper(specification: StackSpecification?, directory: String?) throws(StackLaunchError) -> any BondKeeper {
        switch specification {
        case .bluez(let adapter)?:
            if directory != nil {
                throw StackLaunchError(.invalidSpecification, "give a bond folder or bluetoothd (bluez, bluez:hciN), not both: bluetoothd keeps its bonds itself")
            }
            return BluetoothdBonds(adapter: adapter)
        case .host?, .service?, nil:
            return FileBondStore(directory: directory ?? FileBondStore.defaultDirectory())
        }
    }
}
