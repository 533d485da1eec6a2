public import BluetoothCore
public import BluetoothEngine
public import GATT
public import L2CAP
public import ATT

/// Our own host is the first engine: its methods are the requirements, two are shaped here.
extension HostStack: StackEngine {
    public func publish(deviceName: String, _ definitions: [GATTServiceDefinition],
                 completion: @escaping @Sendable (Result<[GATTServiceHandles], HostError>) -> Void) {
        modifyGATTDatabase({ database throws(GATTDatabaseError) -> [GATTServiceHandles] in
            if database.services.isEmpty {
                try database.addGAPService(deviceName: deviceName)
                try database.addGATTService(serverSupportedFeatures: .enhancedATT)
            }
            var handles: [GATTServiceHandles] = []
            for definition in definitions { handles.append(try database.add(definition)) }
            return handles
        }, completion: { completion($0.mapError { HostError(.invalidDatabase, $0.description) }) })
    }

    public func openChannel(connectionHandle handle: UInt16, psm: UInt16, mtu: UInt16,
                     completion: @escaping @Sendable (Result<L2CAPChannelInfo, HostError>) -> Void) {
        openL2CAPChannel(connectionHandle: handle, psm: psm, mtu: mtu, mps: 247, initialCredits: 16,
                         creditPolicy: .automatic(), completion: completion)
    }

    /// Our host keeps bonds (keys), not a list of devices to offer: nothing is known from before this run.
    public func knownPeers() -> [BluetoothAddress] { [] }

    /// As the configuration says (on by default: the central sends Exchange MTU as the link starts).
    public var exchangesMTUOnConnect: Bool { configuration.exchangesMTUOnConnect }

    /// Our host reads no GAP names on its own: the API above asks when it wants one.
    public var reportsPeerNames: Bool { false }

    public func replaceGATTDatabase(_ database: GATTDatabase, changedRange: ATTHandleRange?,
                                    completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        setGATTDatabase(database, changedRange: changedRange) { completion?(.success(())) }
    }
}
