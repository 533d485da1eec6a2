import Foundation
import OpenCoreBluetooth

/// The app under test in these tests: ordinary CoreBluetooth central code (nothing of the kit in it), which finds
/// the first peripheral advertising `service`, connects, discovers everything and says "ready"; the test then asks
/// it to read, write and subscribe, and reads its log.
final class ProbeApp: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    let queue = DispatchQueue(label: "probe.app")
    let service: CBUUID
    private(set) var central: CBCentralManager!
    private(set) var peripheral: CBPeripheral?
    private let lock = NSLock()
    private var entries: [String] = []
    private var rssis: [Int] = []
    var reconnects = true

    init(service: CBUUID) {
        self.service = service
        super.init()
        central = CBCentralManager(delegate: self, queue: queue)
    }

    /// The log, from any thread.
    var log: [String] { lock.withLock { entries } }
    /// The RSSI of each advertisement heard (duplicates allowed).
    var heard: [Int] { lock.withLock { rssis } }

    private func add(_ entry: String) { lock.withLock { entries.append(entry) } }

    func characteristic(_ uuid: CBUUID) -> CBCharacteristic? {
        peripheral?.services?.flatMap { $0.characteristics ?? [] }.first { $0.uuid == uuid }
    }

    func read(_ uuid: CBUUID) {
        let text = uuid.uuidString
        queue.async { [self] in characteristic(CBUUID(string: text)).map { peripheral?.readValue(for: $0) } }
    }
    func write(_ data: Data, to uuid: CBUUID, type: CBCharacteristicWriteType = .withResponse) {
        let text = uuid.uuidString
        queue.async { [self] in characteristic(CBUUID(string: text)).map { peripheral?.writeValue(data, for: $0, type: type) } }
    }
    func subscribe(_ uuid: CBUUID, _ enabled: Bool = true) {
        let text = uuid.uuidString
        queue.async { [self] in characteristic(CBUUID(string: text)).map { peripheral?.setNotifyValue(enabled, for: $0) } }
    }

    static func hex(_ data: Data?) -> String { (data ?? Data()).map { String(format: "%02x", $0) }.joined() }
    static func code(_ error: (any Error)?) -> String {
        guard let error else { return "" }
        if let att = error as? CBATTError { return String(format: " error 0x%02X", Int(att.attErrorCode)) }
        if let core = error as? CBError { return " error \(core.code)" }
        return " error \(error)"
    }

    // MARK: CBCentralManagerDelegate

    func readRSSI() {
        queue.async { [self] in peripheral?.readRSSI() }
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        add("state \(central.state.rawValue)")
        // Apple: once Bluetooth is off or resetting, the peripherals obtained before are invalid; discover again.
        if central.state != .poweredOn { peripheral = nil }
        if central.state == .poweredOn {
            central.scanForPeripherals(withServices: [service], options: [CBCentralManagerScanOptionAllowDuplicatesKey: true])
        }
    }
    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        lock.withLock { rssis.append(RSSI.intValue) }
        guard self.peripheral == nil else { return }
        add("discovered \(advertisementData[CBAdvertisementDataLocalNameKey] as? String ?? "-")")
        self.peripheral = peripheral
        peripheral.delegate = self
        central.connect(peripheral)
    }
    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        add("connected")
        peripheral.discoverServices(nil)
    }
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        add("disconnected" + Self.code(error))
        if reconnects { central.connect(peripheral) }
    }
    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {
        add("failed" + Self.code(error))
    }

    // MARK: CBPeripheralDelegate

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        for service in peripheral.services ?? [] { peripheral.discoverCharacteristics(nil, for: service) }
    }
    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        if service.uuid == self.service { add("ready") }
    }
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        add("value \(characteristic.uuid) \(Self.hex(characteristic.value))" + Self.code(error))
    }
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        add("wrote \(characteristic.uuid)" + Self.code(error))
    }
    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        add("notifying \(characteristic.uuid) \(characteristic.isNotifying)" + Self.code(error))
    }
    func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: (any Error)?) {
        add("rssi" + Self.code(error))
    }
    func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService]) {
        add("services modified")
        peripheral.discoverServices(nil)
    }
}
