// Seed 001's iOS peripheral, the one copy in Examples/Seed001PeripheralApp/BluetoothManager.swift, as the tests of
// this module drive it: the seed's BluetoothManager behind its public face (PeripheralApp), its BlueEar calls
// handed to a test ear under the seed's method names (the seed's own protocol is internal to its module, and both
// seed apps call their types BlueEar and BluetoothManager).
import OpenCoreBluetooth
@testable import Seed001PeripheralApp

/// The iOS seed's BlueEar, for test ears.
protocol PeripheralBlueEar {
    func didStartConfiguration()
    func didStartAdvertising()
    func didSendData()
    func didReceiveData()
}

/// The iOS seed's BluetoothManager with a test ear.
final class PeripheralBluetoothManager {
    let app: PeripheralApp

    init(delegate: any PeripheralBlueEar) {
        app = PeripheralApp { event in
            switch event {
            case .didStartConfiguration: delegate.didStartConfiguration()
            case .didStartAdvertising: delegate.didStartAdvertising()
            case .didSendData: delegate.didSendData()
            case .didReceiveData: delegate.didReceiveData()
            }
        }
    }

    var peripheralManager: CBPeripheralManager? { app.manager.peripheralManager }
    var characterisctic: CBMutableCharacteristic? { app.manager.characterisctic }
}
