public import HCITransport
import BluetoothCore
public import FoundationEssentials

/// The one reading of a stack's name, wherever a program names one: `--hci` on every `blue` command, the `OCB_HCI`
/// environment variable (CoreBluetooth's default), `BluetoothStack.open` (DESIGN.md "Transports").
///
/// A name is either our host on an HCI transport (``HCITransportSpec``: `virtual`, `in-process`, `air:PATH`,
/// `tcp:HOST:PORT`, `unix:PATH`, `serial:…`, `hciN`) or bluetoothd's stack over D-Bus (`bluez`, `bluez:hciN`), which
/// is not ours to open (``StackLauncher`` refuses it; the APIs choose their bluetoothd backends from it). Surrounding
/// white space is ignored; every refusal is one line saying what was expected.
public enum StackSpecification: Hashable, Sendable, CustomStringConvertible {
    /// Our host on this HCI transport.
    case host(HCITransportSpec)
    /// bluetoothd's stack on `adapter` (`hciN`; nil: its default adapter).
    case bluez(adapter: String?)
    /// Our host on this transport, run by the per-user Bluetooth service for the program (`service`: the shared
    /// air, `service:TRANSPORT`): the stack outlives a program with a restore identifier (ServiceEngine).
    case service(HCITransportSpec)

    /// The environment variable that names the stack of a program that does not choose one itself.
    public static let environmentVariable = "OCB_HCI"

    /// What a name may look like, for error messages and help text.
    public static let expectedForms = HCITransportSpec.expectedForms
        + ", bluez[:hciN] (bluetoothd), or service[:TRANSPORT] (the Bluetooth service)"

    /// Parses `text`; throws ``StackLaunchError/Code/invalidSpecification`` saying what was expected.
    public init(parsing text: String) throws(StackLaunchError) {
        let name = text.trimmingWhitespace()
        if name == "bluez" {
            self = .bluez(adapter: nil)
            return
        }
        if name.hasPrefix("bluez:") {
            let adapter = String(name.dropFirst("bluez:".count))
            guard case .userChannel? = try? HCITransportSpec(parsing: adapter) else {
                throw StackLaunchError(.invalidSpecification,
                                       "\"\(name)\": bluez takes an adapter name: bluez or bluez:hciN (bluez:hci0)")
            }
            self = .bluez(adapter: adapter)
            return
        }
        if name == "service" {
            self = .service(.virtual)
            return
        }
        if name.hasPrefix("service:") {
            do {
                self = .service(try HCITransportSpec(parsing: String(name.dropFirst("service:".count))))
            } catch {
                throw StackLaunchError(.invalidSpecification, "\"\(name)\": service takes a transport: \(error.reason)")
            }
            return
        }
        do {
            self = .host(try HCITransportSpec(parsing: name))
        } catch {
            throw StackLaunchError(.invalidSpecification, error.reason)
        }
    }

    /// The name a program runs on: `given` (its `--hci`) when there is one, else `$OCB_HCI` when set and not empty,
    /// else `fallback` (the one reading of `OCB_HCI` for programs that choose their default: `blue demo`'s is
    /// `in-process`, `blue chat`'s and the libraries' `virtual`).
    public static func name(given: String?, environment: [String: String] = ProcessInfo.processInfo.environment,
                            default fallback: String) -> String {
        if let given { return given }
        if let named = environment[environmentVariable], !named.isEmpty { return named }
        return fallback
    }

    /// The hub's socket when the name is the shared air or another air hub (`virtual`: `hubSocketPath`), else nil.
    public func airHubSocket(hubSocketPath: String = StackLaunchOptions.defaultHubSocketPath) -> String? {
        switch self {
        case .host(.virtual), .service(.virtual): hubSocketPath
        case .host(.air(let path)), .service(.air(let path)): path
        default: nil
        }
    }

    /// The name as text; parsing it gives the same value.
    public var description: String {
        switch self {
        case .host(let transport): transport.description
        case .bluez(let adapter): adapter.map { "bluez:\($0)" } ?? "bluez"
        case .service(.virtual): "service"
        case .service(let transport): "service:\(transport)"
        }
    }
}
