/// A parsed `--hci` transport specification (DESIGN.md "Transports"):
///
/// | text                               | transport                                                        |
/// |------------------------------------|------------------------------------------------------------------|
/// | `virtual` (also `virtual-hub`)     | a virtual controller on the shared air: the `blue air` hub at its |
/// |                                    | default socket, started when none runs                            |
/// | `in-process`                       | a virtual controller on an air private to this process            |
/// | `air:PATH`                         | a virtual controller on the air hub listening at PATH             |
/// | `tcp:HOST:PORT`                    | H4 over TCP (Bumble `tcp-server:`, RootCanal's HCI port)          |
/// | `unix:PATH`                        | H4 over a UNIX stream socket                                      |
/// | `serial:/dev/ttyX[,BAUD][,rtscts]` | H4 over a UART (default 115200 baud, no flow control)             |
/// | `hciN`                             | the Linux HCI user channel of adapter N                           |
///
/// The transports carry HCI packets as in Core 5.4 Vol 4 Part A §2 (H4). `virtual`, `in-process` and `air:` are
/// wired by the host layer (they need a virtual controller); ``open()`` opens the others.
///
/// `virtual` means one thing everywhere (the `blue` commands, `OCB_HCI`, OpenCoreBluetooth's default): the shared
/// air, on which the programs of this machine meet as devices do. `virtual-hub`, its former name in some places,
/// is read as `virtual`.
public enum HCITransportSpec: Hashable, Sendable, CustomStringConvertible {
    /// The shared air: the hub at the default socket (`$OCB_AIR_SOCKET`), started when none runs.
    case virtual
    /// An air of this process alone (tests, `blue demo`): its devices meet only each other.
    case inProcess
    case air(path: String)
    case tcp(host: String, port: UInt16)
    case unix(path: String)
    case serial(path: String, baudRate: Int, flowControl: Bool)
    case userChannel(deviceIndex: UInt16)

    /// The baud rate of `serial:` when none is given.
    public static let defaultBaudRate = 115_200

    /// What a specification may look like, for error messages and help text.
    public static let expectedForms =
        "virtual, in-process, air:PATH, tcp:HOST:PORT, unix:PATH, serial:/dev/ttyX[,BAUD][,rtscts] or hciN"

    /// Parses `text` (see the table above); throws ``HCITransportError/Code/invalidSpecification`` saying what was
    /// expected.
    public init(parsing text: String) throws(HCITransportError) {
        func invalid(_ reason: String) -> HCITransportError { HCITransportError(.invalidSpecification, reason) }
        if text.isEmpty { throw invalid("empty HCI transport specification; expected \(Self.expectedForms)") }
        if text == "virtual" || text == "virtual-hub" {
            self = .virtual
            return
        }
        if text == "in-process" {
            self = .inProcess
            return
        }
        if let path = Self.dropPrefix("air:", from: text) {
            guard !path.isEmpty else { throw invalid("\"\(text)\": air needs the hub's socket path: air:PATH") }
            self = .air(path: path)
            return
        }
        if let path = Self.dropPrefix("unix:", from: text) {
            guard !path.isEmpty else { throw invalid("\"\(text)\": unix needs a socket path: unix:PATH") }
            self = .unix(path: path)
            return
        }
        if let rest = Self.dropPrefix("tcp:", from: text) {
            guard let colon = rest.lastIndex(of: ":") else {
                throw invalid("\"\(text)\": tcp needs a host and a port: tcp:HOST:PORT (tcp:127.0.0.1:9000)")
            }
            let host = String(rest[..<colon])
            let portText = String(rest[rest.index(after: colon)...])
            guard !host.isEmpty else {
                throw invalid("\"\(text)\": tcp needs a host before the port: tcp:HOST:PORT (tcp:127.0.0.1:9000)")
            }
            guard let port = Self.decimal(portText), port >= 1, port <= 65535 else {
                throw invalid("\"\(text)\": invalid TCP port \"\(portText)\"; expected a number from 1 to 65535")
            }
            self = .tcp(host: host, port: UInt16(port))
            return
        }
        if let rest = Self.dropPrefix("serial:", from: text) {
            let parts = rest.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard let path = parts.first, !path.isEmpty else {
                throw invalid("\"\(text)\": serial needs a device path: serial:/dev/ttyX[,BAUD][,rtscts]")
            }
            var baudRate: Int?
            var flowControl = false
            for option in parts.dropFirst() {
                if option == "rtscts" {
                    flowControl = true
                } else if let rate = Self.decimal(option), baudRate == nil {
                    guard SerialH4Transport.supportedBaudRates.contains(rate) else {
                        let rates = SerialH4Transport.supportedBaudRates.map(String.init).joined(separator: ", ")
                        throw invalid("\"\(text)\": unsupported baud rate \(rate); expected one of \(rates)")
                    }
                    baudRate = rate
                } else {
                    throw invalid(
                        "\"\(text)\": unexpected serial option \"\(option)\"; expected serial:/dev/ttyX[,BAUD][,rtscts]")
                }
            }
            self = .serial(path: path, baudRate: baudRate ?? Self.defaultBaudRate, flowControl: flowControl)
            return
        }
        if let digits = Self.dropPrefix("hci", from: text) {
            guard let index = Self.decimal(digits), index <= 0xFFFE else {
                throw invalid("\"\(text)\": expected hci followed by an adapter index from 0 to 65534 (hci0)")
            }
            self = .userChannel(deviceIndex: UInt16(index))
            return
        }
        throw invalid("unknown HCI transport \"\(text)\"; expected \(Self.expectedForms)")
    }

    /// The specification as text; parsing it gives the same value.
    public var description: String {
        switch self {
        case .virtual: "virtual"
        case .inProcess: "in-process"
        case .air(let path): "air:\(path)"
        case .tcp(let host, let port): "tcp:\(host):\(port)"
        case .unix(let path): "unix:\(path)"
        case .serial(let path, let baudRate, let flowControl): "serial:\(path),\(baudRate)\(flowControl ? ",rtscts" : "")"
        case .userChannel(let index): "hci\(index)"
        }
    }

    /// Whether the host layer must provide this transport (a virtual controller) rather than ``open()``.
    public var needsVirtualController: Bool {
        switch self {
        case .virtual, .inProcess, .air: true
        default: false
        }
    }

    /// Opens the transport (not started): TCP, UNIX, serial and HCI user channel. `virtual`, `in-process` and `air:` throw
    /// ``HCITransportError/Code/invalidSpecification``: the host layer wires the virtual controller for them.
    public func open() throws(HCITransportError) -> any HCITransport {
        switch self {
        case .virtual, .inProcess, .air:
            throw HCITransportError(
                .invalidSpecification,
                "\"\(description)\" is the virtual controller, which the host layer wires (HCITransportSpec.open "
                    + "opens tcp:, unix:, serial: and hciN only)")
        case .tcp(let host, let port):
            return try SocketH4Transport.connect(host: host, port: port)
        case .unix(let path):
            // A controller socket another user put at this path must not get our HCI traffic (keys included).
            return try SocketH4Transport.connect(path: path, serverOfThisUserOnly: true)
        case .serial(let path, let baudRate, let flowControl):
            return try SerialH4Transport(path: path, baudRate: baudRate, flowControl: flowControl)
        case .userChannel(let index):
            return try HCIUserChannelTransport(deviceIndex: index)
        }
    }

    private static func dropPrefix(_ prefix: String, from text: String) -> String? {
        text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : nil
    }

    /// A plain decimal number (ASCII digits only, no sign, at most 9 digits); nil otherwise.
    private static func decimal(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 9, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }
}
