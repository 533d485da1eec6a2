// A heart-rate sensor with state preservation and restoration, written as an iOS peripheral app that the system
// may terminate: a CBPeripheralManager with a restore identifier, `willRestoreState` taking its published service
// back with the centrals still subscribed, and values sent to subscribed centrals every 200 ms.
//
// Usage: RestoringHeartRatePeripheral [--timeout SECONDS] [--restore-identifier ID]
// Prints one line per event on standard output: "restored services=N advertising=B subscribers=N", "state N", "published",
// "advertising", "subscribed", "unsubscribed". Runs until the timeout (exit 0).
// On the shared air, the manager's stack is the Bluetooth service's (`blue service`, started on demand): kill the
// program (SIGKILL) and start it again, and its centrals stay connected and subscribed; values resume.
import ExampleSupport
import Foundation
import OpenCoreBluetooth

let example = ExampleProgram("RestoringHeartRatePeripheral")

final class HeartRateSensor: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    let heartRateService = CBUUID(string: "180D")
    let heartRateMeasurement = CBUUID(string: "2A37")
    var manager: CBPeripheralManager!
    var measurement: CBMutableCharacteristic?
    var restored = false
    var bpm: UInt8 = 60
    var timer: (any DispatchSourceTimer)?

    func start(restoreIdentifier: String) {
        manager = CBPeripheralManager(delegate: self, queue: nil,
                                      options: [CBPeripheralManagerOptionRestoreIdentifierKey: restoreIdentifier])
    }

    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, willRestoreState dict: [String: Any]) {
        let services = dict[CBPeripheralManagerRestoredStateServicesKey] as? [CBMutableService] ?? []
        let advertising = dict[CBPeripheralManagerRestoredStateAdvertisementDataKey] != nil
        measurement = services.first { $0.uuid == heartRateService }?.characteristics?
            .first { $0.uuid == heartRateMeasurement } as? CBMutableCharacteristic
        restored = measurement != nil
        let subscribers = measurement?.subscribedCentrals?.count ?? 0
        say("restored services=\(services.count) advertising=\(advertising) subscribers=\(subscribers)")
        // Its centrals are still subscribed: the values go on.
        if subscribers > 0 { startSending() }
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        say("state \(peripheral.state.rawValue)")
        // Restored: the service and the advertising come back by themselves.
        guard peripheral.state == .poweredOn, !restored else { return }
        let characteristic = CBMutableCharacteristic(type: heartRateMeasurement, properties: [.notify], value: nil, permissions: [])
        let service = CBMutableService(type: heartRateService, primary: true)
        service.characteristics = [characteristic]
        measurement = characteristic
        peripheral.add(service)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?) {
        say("published")
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: "Restoring HR",
                                     CBAdvertisementDataServiceUUIDsKey: [heartRateService]])
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {
        say("advertising")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        say("subscribed")
        startSending()
    }

    private func startSending() {
        guard timer == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: .main)
        timer.schedule(deadline: .now() + 0.2, repeating: 0.2)
        timer.setEventHandler { [weak self] in self?.send() }
        timer.resume()
        self.timer = timer
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {
        say("unsubscribed")
    }

    private func send() {
        guard let measurement, !(measurement.subscribedCentrals ?? []).isEmpty else { return }
        bpm = bpm >= 120 ? 60 : bpm + 1
        // Heart Rate Measurement (GATT Specification Supplement §3.113): flags 0 (8-bit value), then the bpm.
        _ = manager.updateValue(Data([0x00, bpm]), for: measurement, onSubscribedCentrals: nil)
    }
}

let sensor = HeartRateSensor()
sensor.start(restoreIdentifier: example.option("--restore-identifier") ?? "com.example.heart-rate-sensor")
example.run(keeping: sensor, timeout: example.timeout(default: 30)) {
    exit(0)
}
