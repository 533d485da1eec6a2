import Foundation
import OpenCoreBluetooth

nonisolated(unsafe) let probeService = CBUUID(string: "BEEF0000-0000-4000-8000-00000000BEEF")
nonisolated(unsafe) let probeOpenUUID = CBUUID(string: "BEEF0001-0000-4000-8000-00000000BEEF")
nonisolated(unsafe) let probeLockedUUID = CBUUID(string: "BEEF0002-0000-4000-8000-00000000BEEF")

/// A peripheral app under test: plain CoreBluetooth code (nothing of the kit in it) that adds its service at its
/// first `.poweredOn` only, as an app that trusts Apple's rule that services survive `.poweredOff`, and advertises
/// at every `.poweredOn`. Reads of the open characteristic get "open"; of the locked one, Insufficient
/// Authorization.
final class ProbePeripheralApp: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    let queue = DispatchQueue(label: "probe.peripheral")
    private(set) var manager: CBPeripheralManager!
    private let lock = NSLock()
    private var entries: [String] = []
    private var added = false

    override init() {
        super.init()
        manager = CBPeripheralManager(delegate: self, queue: queue)
    }

    var log: [String] { lock.withLock { entries } }
    private func add(_ entry: String) { lock.withLock { entries.append(entry) } }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        add("state \(peripheral.state.rawValue)")
        guard peripheral.state == .poweredOn else { return }
        if !added {
            added = true
            let service = CBMutableService(type: probeService, primary: true)
            service.characteristics = [
                CBMutableCharacteristic(type: probeOpenUUID, properties: [.read], value: nil, permissions: [.readable]),
                CBMutableCharacteristic(type: probeLockedUUID, properties: [.read], value: nil, permissions: [.readable]),
            ]
            peripheral.add(service)
        }
        peripheral.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [probeService]])
    }
    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?) {
        add("added" + (error.map { " error \($0)" } ?? ""))
    }
    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {
        add("advertising" + (error.map { " error \($0)" } ?? ""))
    }
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        if request.characteristic.uuid == probeLockedUUID {
            peripheral.respond(to: request, withResult: .insufficientAuthorization)
        } else {
            request.value = Data("open".utf8)
            peripheral.respond(to: request, withResult: .success)
        }
    }
}
