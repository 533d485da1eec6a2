import BluetoothCore
import VirtualController

/// Human-readable lines and one-line JSON objects for ``AirHubEvent`` (what `blue air` prints, with and without
/// `--json`). JSON objects always carry `"event"`; numbers are numbers, addresses strings.
extension AirHubEvent {
    /// One line of text.
    public var text: String {
        switch self {
        case .listening(let endpoint):
            return "listening on \(endpoint)"
        case .joined(let device):
            let snoop = device.snoopPath.map { ", snoop \($0)" } ?? ""
            return "joined: \(device.label) via \(device.origin) at \(Self.format(device.position))\(snoop)"
        case .left(let device, let reason):
            return "left: \(device.label) (\(reason))"
        case .connected(let device, let handle, let role, let peer, let peerDevice):
            let peerName = peerDevice.map { "dev\($0) " } ?? ""
            return "connected: dev\(device) handle \(Dissection.hex16(handle)) as \(role) to \(peerName)\(peer)"
        case .disconnected(let device, let handle, let reason):
            return "disconnected: dev\(device) handle \(Dissection.hex16(handle)): \(reason)"
        case .encryptionChanged(let device, let handle, let status, let enabled):
            return "encryption: dev\(device) handle \(Dissection.hex16(handle)) "
                + (status == .success ? (enabled ? "on" : "off") : "failed: \(status)")
        case .statistics(let statistics):
            return "traffic: " + Self.summary(statistics)
        case .stopped(let statistics):
            return "stopped: " + Self.summary(statistics)
        case .warning(let message):
            return "warning: \(message)"
        case .fault(_, let effect):
            return "fault: \(effect)"
        }
    }

    /// One JSON object, no newline.
    public var json: String {
        var object = JSONObject()
        switch self {
        case .listening(let endpoint):
            object.string("event", "listening")
            object.string("endpoint", endpoint)
        case .joined(let device):
            object.string("event", "joined")
            Self.add(device, to: &object)
        case .left(let device, let reason):
            object.string("event", "left")
            Self.add(device, to: &object)
            object.string("reason", reason)
        case .connected(let device, let handle, let role, let peer, let peerDevice):
            object.string("event", "connected")
            object.number("device", device)
            object.number("handle", Int(handle))
            object.string("role", role)
            object.string("peer", peer.string)
            object.string("peerType", peer.type.description)
            if let peerDevice { object.number("peerDevice", peerDevice) }
        case .disconnected(let device, let handle, let reason):
            object.string("event", "disconnected")
            object.number("device", device)
            object.number("handle", Int(handle))
            object.number("reason", Int(reason.rawValue))
            object.string("reasonText", reason.description)
        case .encryptionChanged(let device, let handle, let status, let enabled):
            object.string("event", "encryption")
            object.number("device", device)
            object.number("handle", Int(handle))
            object.number("status", Int(status.rawValue))
            object.bool("enabled", enabled)
        case .statistics(let statistics):
            object.string("event", "statistics")
            Self.add(statistics, to: &object)
        case .stopped(let statistics):
            object.string("event", "stopped")
            Self.add(statistics, to: &object)
        case .warning(let message):
            object.string("event", "warning")
            object.string("message", message)
        case .fault(let fault, let effect):
            object.string("event", "fault")
            object.string("command", fault.line)
            object.string("effect", effect)
        }
        return object.text
    }

    private static func format(_ position: AirPosition) -> String {
        func metres(_ value: Double) -> String {
            let tenths = Int((value * 10).rounded())
            let sign = tenths < 0 ? "-" : ""
            return "\(sign)\(abs(tenths) / 10).\(abs(tenths) % 10)"
        }
        return "(\(metres(position.x)), \(metres(position.y)), \(metres(position.z))) m"
    }

    private static func summary(_ statistics: AirHubStatistics) -> String {
        let traffic = statistics.traffic
        return "\(statistics.devices) devices (\(statistics.devicesJoined) joined), "
            + "\(statistics.connections) connections (\(statistics.connectionsMade) made); "
            + "HCI \(traffic.commands) commands, \(traffic.events) events, "
            + "ACL \(traffic.aclToController) to controllers / \(traffic.aclToHost) to hosts, \(traffic.octets) octets; "
            + "air \(statistics.advertisingPackets) advertising, \(statistics.scanPackets) scan, "
            + "\(statistics.connectRequests) connect, \(statistics.dataPackets) data PDUs"
            + (statistics.heapBytesInUse.map { "; heap \($0 / 1024) KiB in use" } ?? "")
    }

    private static func add(_ device: AirHubDevice, to object: inout JSONObject) {
        object.number("device", device.number)
        object.string("address", device.address.string)
        object.string("origin", device.origin)
        object.double("x", device.position.x)
        object.double("y", device.position.y)
        object.double("z", device.position.z)
        if let path = device.snoopPath { object.string("snoop", path) }
    }

    private static func add(_ statistics: AirHubStatistics, to object: inout JSONObject) {
        object.number("devices", statistics.devices)
        object.number("devicesJoined", statistics.devicesJoined)
        object.number("connections", statistics.connections)
        object.number("connectionsMade", statistics.connectionsMade)
        object.number("commands", statistics.traffic.commands)
        object.number("events", statistics.traffic.events)
        object.number("aclToController", statistics.traffic.aclToController)
        object.number("aclToHost", statistics.traffic.aclToHost)
        object.number("octets", statistics.traffic.octets)
        object.number("advertisingPackets", statistics.advertisingPackets)
        object.number("scanPackets", statistics.scanPackets)
        object.number("connectRequests", statistics.connectRequests)
        object.number("dataPackets", statistics.dataPackets)
        if let heap = statistics.heapBytesInUse { object.number("heapBytesInUse", heap) }
    }
}

/// A flat JSON object, keys in insertion order: `"event"` first, then the event's fields, as `blue air --json` has
/// always printed them (tests and scripts compare the lines). Not `JSONEncoder`: on Linux it keeps no key order
/// (only sorted) and writes 0.0 as 0. Strings are escaped by BluetoothCore's ``Dissection/jsonString(_:)``.
struct JSONObject {
    private var members: [String] = []

    mutating func string(_ key: String, _ value: String) { members.append("\(Self.quote(key)):\(Self.quote(value))") }
    mutating func number(_ key: String, _ value: Int) { members.append("\(Self.quote(key)):\(value)") }
    mutating func bool(_ key: String, _ value: Bool) { members.append("\(Self.quote(key)):\(value)") }
    mutating func double(_ key: String, _ value: Double) {
        members.append("\(Self.quote(key)):\(value.isFinite ? "\(value)" : "null")")
    }

    var text: String { "{" + members.joined(separator: ",") + "}" }

    static func quote(_ text: String) -> String { Dissection.jsonString(text) }
}
