// A heart-rate central with state preservation and restoration, written as an iOS app that keeps its monitor
// while the system terminates it: a CBCentralManager with a restore identifier, `willRestoreState` taking the
// restored peripheral back, and nothing done again that the system kept (no connect, no discovery, no subscribe).
//
// Usage: RestoringHeartRateCentral [--timeout SECONDS] [--restore-identifier ID]
// Prints one line per event on standard output: "state ...", "restored <peripheral state> services=N notifying=B",
// "connect", "discovered", "subscribed", "bpm N". Runs until the timeout (exit 0 after it, 1 if no value came).
// On the shared air (OCB_HCI unset or `virtual`, or `air:PATH`), the manager's stack is the Bluetooth service's
// (`blue service`, started on demand): kill the program (SIGKILL) and start it again, and the link, the discovered
// services and the subscription are still there: "restored connected services=... notifying=true", then values.
import ExampleSupport
import Foundation
import OpenCoreBluetooth

let example = ExampleProgram("RestoringHeartRateCentral")
final class HeartRateMonitor: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    let heartRateService = CBUUID(string: "180D")
    let heartRateMeasurement = CBUUID(string: "2A37")
    var central: CBCentralManager!
    var monitor: CBPeripheral?
    var values = 0

    func start(restoreIdentifier: String) {
        central = CBCentralManager(delegate: self, queue: nil,
                                   options: [CBCentralManagerOptionRestoreIdentifierKey: restoreIdentifier])
    }

    /// One line on standard output, at once (a pipe reader sees each line as it happens).
    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    func centralManager(_ central: CBCentralManager, willRestoreState dict: [String: Any]) {
        let peripherals = dict[CBCentralManagerRestoredStatePeripheralsKey] as? [CBPeripheral] ?? []
        guard let peripheral = peripherals.first else { return say("restored nothing") }
        monitor = peripheral
        peripheral.delegate = self
        let measurement = peripheral.services?.first { $0.uuid == heartRateService }?
            .characteristics?.first { $0.uuid == heartRateMeasurement }
        let state = peripheral.state == .connected ? "connected" : peripheral.state == .connecting ? "connecting" : "disconnected"
        say("restored \(state) services=\(peripheral.services?.count ?? 0) notifying=\(measurement?.isNotifying ?? false)")
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        say("state \(central.state.rawValue)")
        guard central.state == .poweredOn else { return }
        if let monitor {
            // Restored: what the system kept is not asked again.
            if monitor.state == .connected, monitor.services != nil { return }
            if monitor.state == .connected { return monitor.discoverServices([heartRateService]) }
            return
        }
        central.scanForPeripherals(withServices: [heartRateService])
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        central.stopScan()
        monitor = peripheral
        peripheral.delegate = self
        say("connect")
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.discoverServices([heartRateService])
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        say("disconnected")
        central.connect(peripheral)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == heartRateService }) else { return }
        peripheral.discoverCharacteristics([heartRateMeasurement], for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        guard let measurement = service.characteristics?.first(where: { $0.uuid == heartRateMeasurement }) else { return }
        say("discovered")
        peripheral.setNotifyValue(true, for: measurement)
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        if characteristic.isNotifying { say("subscribed") }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        guard let value = characteristic.value, value.count >= 2 else { return }
        // Heart Rate Measurement (GATT Specification Supplement §3.113): flags, then 8 or 16 bits of bpm.
        let bpm = value[value.startIndex] & 0x01 == 0 ? Int(value[value.startIndex + 1])
            : Int(value[value.startIndex + 1]) | Int(value.count > 2 ? value[value.startIndex + 2] : 0) << 8
        values += 1
        say("bpm \(bpm)")
    }
}

let monitor = HeartRateMonitor()
monitor.start(restoreIdentifier: example.option("--restore-identifier") ?? "com.example.heart-rate-monitor")
let timeout = example.timeout(default: 30)
example.run(keeping: monitor, timeout: timeout) {
    exit(monitor.values > 0 ? 0 : 1)
}
