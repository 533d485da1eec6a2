// Seed 001's macOS central, the one copy in Examples/Seed001CentralApp/BluetoothManager.swift, as the tests of this
// module drive it: the seed's BluetoothManager behind its public face (CentralApp), its BlueEar calls handed to a
// test ear under the seed's method names (the seed's own protocol is internal to its module, and both seed apps
// call their types BlueEar and BluetoothManager).
import OpenCoreBluetooth
@testable import Seed001CentralApp

/// The macOS seed's BlueEar, for test ears.
protocol CentralBlueEar {
    func didStartConfiguration()
    func didStartScanningPeripherals()
    func didConnectPeripheral(name: String?)
    func didDisconnectPeripheral(name: String?)
    func didSendData()
    func didReceiveData()
    func didFailConnection()
}

/// The macOS seed's BluetoothManager with a test ear.
final class CentralBluetoothManager {
    let app: CentralApp

    init(delegate: any CentralBlueEar) {
        app = CentralApp { event in
            switch event {
            case .didStartConfiguration: delegate.didStartConfiguration()
            case .didStartScanningPeripherals: delegate.didStartScanningPeripherals()
            case .didConnectPeripheral(let name): delegate.didConnectPeripheral(name: name)
            case .didDisconnectPeripheral(let name): delegate.didDisconnectPeripheral(name: name)
            case .didSendData: delegate.didSendData()
            case .didReceiveData: delegate.didReceiveData()
            case .didFailConnection: delegate.didFailConnection()
            }
        }
    }

    func scan() { app.scan() }
    var centralManager: CBCentralManager? { app.manager.centralManager }
    var discoveredPeripheral: CBPeripheral? { app.manager.discoveredPeripheral }
}
