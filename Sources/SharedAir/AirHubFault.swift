public import VirtualController
/// A fault or change asked of a running hub at run time (issue 13 item 6): through its control socket
/// (`SOCKET.control`, ``AirHubControl``) by `blue fault`, or in process with ``AirHub/apply(_:)``.
///
/// The text form, one command a line (case-insensitive; a device is `devN` or `N`, its join number):
///
/// | Line | Effect |
/// |---|---|
/// | `loss PERCENT` | every packet heard is then lost with this probability (0...100, `%` optional) |
/// | `drop DEVICE` / `drop all` | the device's links (or every link) stop being heard: both ends see a supervision timeout |
/// | `power DEVICE off` / `on` | the device's radio goes silent and deaf (its links time out at both ends), then back |
/// | `range DEVICE out` / `in` | the device moves 100 km away (out of range of everyone), then back to its place |
/// | `move DEVICE X Y [Z]` | the device moves to (X, Y, Z) metres |
/// | `devices` | lists the devices, their places, radios and links |
public enum AirHubFault: Hashable, Sendable {
    case loss(percent: Double)
    /// nil: every link on the air.
    case drop(device: Int?)
    case power(device: Int, on: Bool)
    case range(device: Int, out: Bool)
    case move(device: Int, AirPosition)
    case listDevices

    /// The longest command line the control socket reads.
    public static let maximumLineLength = 256
    /// A move's coordinates are metres within this distance of the origin on every axis.
    public static let coordinateLimit = 1_000_000.0

    /// Parses one command line; the error is one line saying what is wrong and what is expected.
    public init(parsing line: String) throws(AirHubError) {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }).map { $0.lowercased() }
        guard let verb = words.first else { throw Self.usage("an empty command") }
        let arguments = Array(words.dropFirst())
        switch verb {
        case "loss":
            guard arguments.count == 1 else { throw Self.usage("loss takes one PERCENT") }
            guard let percent = Self.percent(arguments[0]) else {
                throw AirHubError(.invalidCommand, "loss \(arguments[0]): expected a percentage from 0 to 100")
            }
            self = .loss(percent: percent)
        case "drop":
            guard arguments.count == 1 else { throw Self.usage("drop takes one DEVICE or all") }
            self = arguments[0] == "all" ? .drop(device: nil) : .drop(device: try Self.device(arguments[0]))
        case "power", "range":
            guard arguments.count == 2 else { throw Self.usage("\(verb) takes a DEVICE and " + (verb == "power" ? "on|off" : "out|in")) }
            let device = try Self.device(arguments[0])
            let states = verb == "power" ? ["on", "off"] : ["in", "out"]
            guard let index = states.firstIndex(of: arguments[1]) else {
                throw AirHubError(.invalidCommand, "\(verb) \(arguments[0]) \(arguments[1]): expected \(states[0]) or \(states[1])")
            }
            self = verb == "power" ? .power(device: device, on: index == 0) : .range(device: device, out: index == 1)
        case "move":
            guard arguments.count == 3 || arguments.count == 4 else { throw Self.usage("move takes a DEVICE and X Y [Z] in metres") }
            let device = try Self.device(arguments[0])
            var coordinates: [Double] = []
            for text in arguments.dropFirst() {
                guard let value = Double(text), value.isFinite, abs(value) <= Self.coordinateLimit else {
                    throw AirHubError(.invalidCommand, "move: \(text) is not a coordinate in metres (-\(Int(Self.coordinateLimit))...\(Int(Self.coordinateLimit)))")
                }
                coordinates.append(value)
            }
            self = .move(device: device, AirPosition(x: coordinates[0], y: coordinates[1], z: coordinates.count > 2 ? coordinates[2] : 0))
        case "devices":
            guard arguments.isEmpty else { throw Self.usage("devices takes nothing") }
            self = .listDevices
        default:
            throw Self.usage("unknown command \"\(verb.prefix(32))\"")
        }
    }

    /// The command line that parses back to this fault.
    public var line: String {
        func name(_ device: Int) -> String { "dev\(device)" }
        switch self {
        case .loss(let percent): return "loss \(Self.percentText(percent))"
        case .drop(let device): return "drop " + (device.map(name) ?? "all")
        case .power(let device, let on): return "power \(name(device)) \(on ? "on" : "off")"
        case .range(let device, let out): return "range \(name(device)) \(out ? "out" : "in")"
        case .move(let device, let position): return "move \(name(device)) \(position.x) \(position.y) \(position.z)"
        case .listDevices: return "devices"
        }
    }

    /// A percentage written `10`, `12.5` or `10%`, 0...100; nil otherwise (`blue air --loss`, `loss` here).
    public static func percent(_ text: String) -> Double? {
        var text = Substring(text)
        if text.hasSuffix("%") { text = text.dropLast() }
        guard let percent = Double(text), percent.isFinite, (0...100).contains(percent) else { return nil }
        return percent
    }

    static func percentText(_ percent: Double) -> String {
        percent == percent.rounded() ? "\(Int(percent))%" : "\(percent)%"
    }

    private static func device(_ text: String) throws(AirHubError) -> Int {
        let digits = text.hasPrefix("dev") ? String(text.dropFirst(3)) : text
        guard !digits.isEmpty, digits.utf8.count <= 6, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let number = Int(digits), number >= 1 else {
            throw AirHubError(.invalidCommand, "\"\(text.prefix(32))\" is not a device: expected devN or N (its join number)")
        }
        return number
    }

    private static func usage(_ problem: String) -> AirHubError {
        AirHubError(.invalidCommand, "\(problem); expected: loss PERCENT | drop DEVICE|all | power DEVICE on|off | "
                        + "range DEVICE out|in | move DEVICE X Y [Z] | devices")
    }
}
