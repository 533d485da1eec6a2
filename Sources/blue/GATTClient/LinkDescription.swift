import FoundationEssentials
import HCI
import Host
import StackLauncher
import BluetoothEngine

/// What `blue explore` shows of the link it used (Core 5.4 Vol 4 Part E §7.7.65.1/§7.7.65.3 interval, latency and
/// supervision timeout; §7.7.65.12 PHYs; §7.7.65.7 data length; §7.5.4 RSSI; Vol 3 Part F §3.2.8 ATT_MTU): what the
/// stack knows, each part nil when it does not (bluetoothd tells only the ATT_MTU).
struct LinkDescription: Sendable {
    var info: LinkInfo?
    var attMTU: Int
    var rssi: Int8?

    /// "interval 30 ms, latency 0, timeout 720 ms, PHY 1M/1M, data 27/27 octets, ATT MTU 247, RSSI -46 dBm, not
    /// encrypted"; through bluetoothd "ATT MTU 185 (bluetoothd does not tell the rest)".
    var text: String {
        var parts: [String] = []
        if let info {
            let parameters = info.connection.parameters
            parts.append("interval \(Self.milliseconds(Double(parameters.interval) * 1.25)) ms")
            parts.append("latency \(parameters.latency)")
            parts.append("timeout \(Int(parameters.supervisionTimeout) * 10) ms")
            parts.append("PHY \(Self.phy(info.txPHY))/\(Self.phy(info.rxPHY))")
            parts.append("data \(info.maxTxOctets)/\(info.maxRxOctets) octets")
        }
        parts.append("ATT MTU \(attMTU)")
        if let rssi { parts.append("RSSI \(ScanTable.rssiText(rssi))") }
        if let info { parts.append(info.connection.isEncrypted ? "encrypted" : "not encrypted") }
        return parts.joined(separator: ", ") + (info == nil ? " (bluetoothd does not tell the rest)" : "")
    }

    var json: [String: Any] {
        var object: [String: Any] = ["mtu": attMTU]
        if let info {
            let parameters = info.connection.parameters
            object["intervalMs"] = Double(parameters.interval) * 1.25
            object["latency"] = Int(parameters.latency)
            object["supervisionTimeoutMs"] = Int(parameters.supervisionTimeout) * 10
            object["txPHY"] = Self.phy(info.txPHY)
            object["rxPHY"] = Self.phy(info.rxPHY)
            object["maxTxOctets"] = Int(info.maxTxOctets)
            object["maxRxOctets"] = Int(info.maxRxOctets)
            object["encrypted"] = info.connection.isEncrypted
        }
        if let rssi { object["rssi"] = ScanTable.rssiJSON(rssi) }
        return object
    }

    /// "1M", "2M", "Coded".
    static func phy(_ phy: LEPhy) -> String {
        switch phy {
        case .le1M: "1M"
        case .le2M: "2M"
        case .leCoded: "Coded"
        default: phy.description
        }
    }

    /// 30, 7.5.
    static func milliseconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}

extension OpenedStack {
    /// The link's parameters, PHYs, data length and ATT_MTU (our host's; bluetoothd tells the ATT_MTU only), and its
    /// RSSI (HCI Read RSSI; nil when the controller or bluetoothd refuses it).
    func link(_ handle: UInt16) async -> LinkDescription {
        let engine = engine
        let info = await withCheckedContinuation { (continuation: CheckedContinuation<LinkInfo?, Never>) in
            engine.linkInfo(connectionHandle: handle) { continuation.resume(returning: $0) }
        }
        let rssi = try? await awaitCompletion { engine.readRSSI(connectionHandle: handle, completion: $0) }.get()
        return LinkDescription(info: info, attMTU: info?.attMTU ?? attMTU(handle), rssi: rssi)
    }
}
