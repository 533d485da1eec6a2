public import Foundation
public import OpenCoreBluetooth
import AdvertisingData
import BluetoothCore
import BluetoothLE

/// What a ``SimulatedCentral`` heard of an advertiser (Core 5.4 Vol 3 Part C §11: the advertising data merged with
/// the scan response), in CoreBluetooth's terms.
public struct SimulatedAdvertisement: Sendable, CustomStringConvertible {
    /// The Complete or Shortened Local Name.
    public let localName: String?
    /// The service UUIDs listed (16-, 32- and 128-bit).
    public var serviceUUIDs: [CBUUID] { serviceUUIDStrings.map { CBUUID(string: $0) } }
    private let serviceUUIDStrings: [String]
    /// Manufacturer Specific Data, the company identifier in its first two octets (little-endian), as
    /// `CBAdvertisementDataManufacturerDataKey` gives it.
    public let manufacturerData: Data?
    /// The signal strength it was heard with (dBm).
    public let rssi: Int
    /// Whether it accepts connections.
    public let isConnectable: Bool
    let advertisement: Advertisement

    init(_ advertisement: Advertisement) {
        self.advertisement = advertisement
        localName = advertisement.localName
        serviceUUIDStrings = advertisement.serviceUUIDs.map(\.description)
        manufacturerData = advertisement.manufacturerData.map { company, data in
            Data([UInt8(company.rawValue & 0xFF), UInt8(company.rawValue >> 8)] + data)
        }
        rssi = Int(advertisement.rssi)
        isConnectable = advertisement.isConnectable
    }

    public var description: String {
        "\(localName ?? "(no name)") \(serviceUUIDs.map(\.uuidString)) \(rssi) dBm\(isConnectable ? "" : " (not connectable)")"
    }
}
