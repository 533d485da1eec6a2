public import BluetoothCore
public import HCI
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What the air looks like at one moment, for views of it (the hub's console, issue 29): each controller's radio
/// state and place, and each link's parameters as its link layers have them (Core 5.4 Vol 6 Part B §4.5: interval,
/// latency, supervision timeout; §4.6.6 PHYs; §4.5.10 data length; §5.1.3 encryption). Values, taken on the loop.
public struct AirSnapshot: Hashable, Sendable {
    /// One controller on the air.
    public struct Device: Hashable, Sendable {
        /// The controller's identifier on this air (``VirtualController``'s, which the hub maps to its device number).
        public var identifier: Int
        public var address: BluetoothAddress
        public var position: AirPosition
        public var txPower: Int8
        /// Distance (metres) at which a 1M packet at ``txPower`` falls below the air's sensitivity.
        public var rangeMetres: Double
        public var radioOn: Bool
        /// Whether any advertising (legacy or a set) is enabled.
        public var advertising: Bool
        public var scanning: Bool
        public var initiating: Bool
    }

    /// One connection on the air (seen from its central's link layer, where both ends agree).
    public struct Link: Hashable, Sendable {
        public var identifier: Int
        public var central: Int
        public var peripheral: Int
        public var centralAddress: BluetoothAddress
        public var peripheralAddress: BluetoothAddress
        /// connInterval in units of 1.25 ms, connPeripheralLatency, connSupervisionTimeout in units of 10 ms.
        public var interval: UInt16
        public var latency: UInt16
        public var supervisionTimeout: UInt16
        public var transmitPHY: LEPhy
        public var receivePHY: LEPhy
        public var maxTransmitOctets: UInt16
        public var maxReceiveOctets: UInt16
        /// The RSSI of the last packet each end heard (nil before the first, or when that end has gone).
        public var rssiAtCentral: Int8?
        public var rssiAtPeripheral: Int8?
        public var encrypted: Bool
        /// Nothing sent on it is heard any more (a dropped link waiting for its supervision timeout).
        public var jammed: Bool
        /// Connection events since the link began (the central's connEventCounter, wrapping at 2^16).
        public var eventCounter: UInt16
    }

    public var devices: [Device]
    public var links: [Link]
    public var packetLoss: Double
}

extension VirtualAir {
    /// The air as it is now. Call on the air's loop.
    package func snapshot() -> AirSnapshot {
        let model = configuration
        let devices = self.devices.map { device in
            // txPower − (referenceLoss + 10·n·log10(d)) = sensitivity.
            let budget = Double(device.txPower) - model.referenceLoss - model.sensitivity
            let range = budget <= 0 ? 0 : pow(10, budget / (10 * model.pathLossExponent))
            return AirSnapshot.Device(
                identifier: device.identifier, address: device.publicAddress, position: device.position,
                txPower: device.txPower, rangeMetres: range, radioOn: device.radioOn && device.powered,
                advertising: device.settings.advertising || device.settings.advertisingSets.values.contains { $0.enabled },
                scanning: device.settings.scanning, initiating: device.settings.initiating != nil)
        }
        let links = self.links.values.sorted { $0.identifier < $1.identifier }.compactMap { link -> AirSnapshot.Link? in
            let centralEnd = link.centralAlive ? link.central.connections[link.centralHandle]?.link : nil
            let peripheralEnd = link.peripheralAlive ? link.peripheral.connections[link.peripheralHandle]?.link : nil
            guard let end = centralEnd ?? peripheralEnd else { return nil }
            return AirSnapshot.Link(
                identifier: link.identifier, central: link.central.identifier, peripheral: link.peripheral.identifier,
                centralAddress: link.central.publicAddress, peripheralAddress: link.peripheral.publicAddress,
                interval: end.interval, latency: end.latency, supervisionTimeout: end.timeout,
                transmitPHY: end.txPHY, receivePHY: end.rxPHY,
                maxTransmitOctets: end.maxTxOctets, maxReceiveOctets: end.maxRxOctets,
                rssiAtCentral: centralEnd.flatMap { $0.lastRSSI == 127 ? nil : $0.lastRSSI },
                rssiAtPeripheral: peripheralEnd.flatMap { $0.lastRSSI == 127 ? nil : $0.lastRSSI },
                encrypted: end.encrypted, jammed: link.jammed, eventCounter: end.eventCounter)
        }
        return AirSnapshot(devices: devices, links: links, packetLoss: model.packetLoss)
    }

}
