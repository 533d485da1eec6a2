/// What bluetoothd decides itself or offers no call for, said in one place (issue 27: "an engine that cannot do
/// something says so in one line, in one place"). Each case gives the one line a program prints when an option or a
/// command asks for it through bluetoothd (`--hci bluez[:hciN]`, the `hci` text here); `blue` refuses such options
/// before anything starts (exit 64).
public enum BluetoothdLimitation: Hashable, Sendable {
    /// `--snoop`: our host's HCI traffic; bluetoothd's is the kernel's.
    case snoop
    /// A command that needs our own host (bench, fault, monitor through our stack...).
    case ourHost
    /// Our own privacy (`--privacy`).
    case privacy
    /// An advertisement with more than the name and service UUIDs (`advertisingData` of a serve definition).
    case advertisementContent
    /// Extended advertising PDUs or their PHY (`--extended`, `--advertising-phy`).
    case advertisingPDUs
    /// Pairing options of a server: bluetoothd's default agent answers (`--io`, `--passkey`, OOB, `--allow-repairing`).
    case serverPairing(option: String)
    /// A pairing method bluetoothd chooses itself (legacy-only, out of band).
    case pairingMethod(String)
    /// Bond options: bluetoothd keeps the bonds (`--bonds`, `--no-bond`, `--reconnect`, OOB files).
    case bonds(option: String)

    /// The line that says so, for the stack named `hci`.
    public func message(hci: String) -> String {
        switch self {
        case .snoop:
            "--snoop records our host's HCI traffic; through bluetoothd (--hci \(hci)) use btmon"
        case .ourHost:
            "this command runs our own host and cannot work through bluetoothd (--hci \(hci)); "
                + "bluetoothd serves scan, explore, read, write, subscribe, shell, pair, serve and chat. Use --hci hciN to give our host "
                + "the adapter (bluetoothd must let go of it), or virtual"
        case .privacy:
            "--privacy: through bluetoothd (--hci \(hci)) its own privacy setting decides (Privacy= in main.conf)"
        case .advertisementContent:
            "advertisingData: through bluetoothd (--hci \(hci)) the advertisement carries the name and service UUIDs only"
        case .advertisingPDUs:
            "--extended, --advertising-phy: through bluetoothd (--hci \(hci)) it chooses the advertising PDUs"
        case .serverPairing(let option):
            "\(option): through bluetoothd (--hci \(hci)) pairing is answered by its default agent"
        case .pairingMethod(let method):
            "--method \(method): bluetoothd chooses LE Secure Connections or legacy pairing "
                + "itself and takes no out-of-band data from us (--hci \(hci)); use jw, numeric or passkey"
        case .bonds(let option):
            "\(option): bluetoothd keeps the bonds and encrypts with them itself (--hci \(hci))"
        }
    }
}
