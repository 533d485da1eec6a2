import BluetoothCore
import BluetoothEngine
import Foundation
import StackLauncher
import Testing
@testable import OpenCoreBluetooth

/// A central that connects to the first device named `name` and records how the connect ends.
private final class FailingConnectCentral: FirstDeviceCentral, @unchecked Sendable {
    init(name: String) { super.init(log: CallLog(label: "failed.central"), name: name) }

    override func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        log.add("connect")
    }
    override func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {
        let code = (error as? CBError)?.code
        log.add("fail \(code.map { "\($0.rawValue)" } ?? "no CBError") state \(peripheral.state.rawValue)")
    }
    override func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        log.add("disconnect")
    }
}

/// Issue 32 item 8: `centralManager(_:didFailToConnect:error:)` through OpenCoreBluetooth: a peer (a plain host
/// stack on the air) that drops every link the moment it is made, before the link is ready for the app (the
/// ATT_MTU exchange), so the central's connect fails with `CBError.connectionFailed`, the peripheral is
/// `.disconnected`, and no `didConnect` or `didDisconnect` is called, as on iOS.
@Suite struct FailedConnectionTests {
    @Test func aLinkDroppedWhileConnectingIsAFailedConnection() async throws {
        let air = InProcessAir(seed: 3209, label: "failed.air")
        defer { air.shutdown() }
        let peer = try await air.makeStack()
        defer { peer.shutdown() }
        peer.addEventHandler { event in
            if case .connected(let connection) = event {
                peer.host.disconnect(connectionHandle: connection.handle, reason: .remoteUserTerminatedConnection)
            }
        }
        let started = LockedBox<Bool?>(nil)
        peer.host.startAdvertising(AdvertisingContent(localName: "Slammer")) { started.value = (try? $0.get()) != nil }
        try await waitFor("the peer advertising", until: { started.value != nil }, seen: { "\(String(describing: started.value))" })

        let central = FailingConnectCentral(name: "Slammer")
        let manager = CBBackendRegistry.$taskProvider.withValue(HostBackend.provider(.inProcess(air), application: OCBApplication())) {
            Box(value: CBCentralManager(delegate: central, queue: central.log.queue))
        }
        try await waitFor("the connect's end", on: central.log.queue, until: { !central.log.entries.isEmpty },
                          seen: { "central \(central.log.entries)" })
        try await Task.sleep(for: .milliseconds(200))
        #expect(central.log.entries == ["fail \(CBError.Code.connectionFailed.rawValue) state \(CBPeripheralState.disconnected.rawValue)"])
        withExtendedLifetime(manager) {}
    }
}
