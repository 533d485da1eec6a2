import BluetoothCore
import FoundationEssentials
import HCI
import SharedAir
import VirtualController

/// The console's JSON form of ``AirHubView`` (the `Air` schema of Docs/air-console.openapi.json): devices by their
/// hub number, links with their parameters in milliseconds and octets, traffic counters for the page's plots.
struct ConsoleAirJSON: Encodable {
    struct Position: Codable, Equatable {
        var x: Double
        var y: Double
        var z: Double
    }

    struct Device: Encodable {
        var number: Int
        var name: String?
        var origin: String
        var address: String
        var randomAddress: String?
        var position: Position
        var txPower: Int
        var rangeMetres: Double
        var radioOn: Bool
        var advertising: Bool
        var scanning: Bool
        var initiating: Bool
        var advertisingPackets: Int
        var links: Int
    }

    struct Pair<Value: Encodable>: Encodable {
        var tx: Value
        var rx: Value
    }

    struct EndValues: Encodable {
        var central: Int?
        var peripheral: Int?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(central, forKey: .central)
            try container.encode(peripheral, forKey: .peripheral)
        }

        enum CodingKeys: String, CodingKey { case central, peripheral }
    }

    struct Link: Encodable {
        var id: Int
        var central: Int?
        var peripheral: Int?
        var centralAddress: String
        var peripheralAddress: String
        var intervalMilliseconds: Double
        var latency: Int
        var supervisionTimeoutMilliseconds: Int
        var phy: Pair<String>
        var dataLength: Pair<Int>
        var rssi: EndValues
        var encrypted: Bool
        var jammed: Bool
        var packets: Int
        var octets: Int
        var events: Int
    }

    var time: Double
    var lossPercent: Double
    var devices: [Device]
    var links: [Link]
    /// Whether `blue air --record` records the air (`GET /api/recording` downloads it).
    var recording: Bool

    init(_ view: AirHubView) {
        time = Double(view.time.nanoseconds) / 1e9
        recording = view.recording
        lossPercent = view.packetLoss * 100
        devices = view.devices.map { entry in
            Device(number: entry.device.number, name: entry.device.name, origin: entry.device.origin,
                   address: entry.device.address.string, randomAddress: entry.randomAddress?.string,
                   position: Position(x: entry.radio.position.x, y: entry.radio.position.y, z: entry.radio.position.z),
                   txPower: Int(entry.radio.txPower), rangeMetres: (entry.radio.rangeMetres * 10).rounded() / 10,
                   radioOn: entry.radio.radioOn, advertising: entry.radio.advertising, scanning: entry.radio.scanning,
                   initiating: entry.radio.initiating, advertisingPackets: entry.advertisingPackets, links: entry.links)
        }
        links = view.links.map { entry in
            let link = entry.link
            return Link(id: link.identifier, central: entry.central, peripheral: entry.peripheral,
                        centralAddress: link.centralAddress.string, peripheralAddress: link.peripheralAddress.string,
                        intervalMilliseconds: Double(link.interval) * 1.25, latency: Int(link.latency),
                        supervisionTimeoutMilliseconds: Int(link.supervisionTimeout) * 10,
                        phy: Pair(tx: Self.phyName(link.transmitPHY), rx: Self.phyName(link.receivePHY)),
                        dataLength: Pair(tx: Int(link.maxTransmitOctets), rx: Int(link.maxReceiveOctets)),
                        rssi: EndValues(central: link.rssiAtCentral.map(Int.init), peripheral: link.rssiAtPeripheral.map(Int.init)),
                        encrypted: link.encrypted, jammed: link.jammed,
                        packets: entry.traffic.packets, octets: entry.traffic.octets, events: Int(link.eventCounter))
        }
    }

    /// "1M", "2M", "Coded".
    static func phyName(_ phy: LEPhy) -> String {
        switch phy {
        case .le1M: "1M"
        case .le2M: "2M"
        case .leCoded: "Coded"
        default: "0x" + String(phy.rawValue, radix: 16)
        }
    }

    /// The object as JSON text (sorted keys: the same view gives the same text).
    func encoded() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
