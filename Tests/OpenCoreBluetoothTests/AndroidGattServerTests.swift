import BluetoothCore
import Foundation
import SharedAir
import Testing
import TestSupport
@testable import OpenCoreBluetooth

/// The characteristics of the Android server below, by the last two digits of their UUIDs.
private func androidUUID(_ suffix: String) -> String { "A0000000-0000-4000-8000-0000000000\(suffix)" }

/// Walks the Android server's characteristics one after the other, as an app would: subscribe to the indications
/// and count them for a second, read the late refused value, write a long value and read it back, subscribe to the
/// characteristic without a 2902, then to the one whose 2902 write is never answered.
private final class AndroidServerCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    let log = CallLog(label: "android.central")
    var peripheral: CBPeripheral?
    var characteristics: [String: CBCharacteristic] = [:]
    var indications = 0
    var readStarted = ContinuousClock.now
    let longValue = Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) })

    /// An ATT error's code in hex, else the error.
    static func code(_ error: any Error) -> String {
        (error as? CBATTError).map { String(format: "0x%02X", Int($0.attErrorCode)) } ?? "\(error)"
    }

    func key(_ characteristic: CBCharacteristic) -> String { String(characteristic.uuid.uuidString.suffix(2)) }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: [CBUUID(string: androidUUID("A0"))]) }
    }
    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil else { return }
        self.peripheral = peripheral
        peripheral.delegate = self
        central.stopScan()
        central.connect(peripheral)
    }
    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.discoverServices([CBUUID(string: androidUUID("A0"))])
    }
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        log.add("disconnected" + (error == nil ? "" : " with an error"))
    }
    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        for service in peripheral.services ?? [] { peripheral.discoverCharacteristics(nil, for: service) }
    }
    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        for characteristic in service.characteristics ?? [] { characteristics[key(characteristic)] = characteristic }
        log.add("characteristics \(characteristics.keys.sorted())")
        if let indicating = characteristics["A1"] { peripheral.setNotifyValue(true, for: indicating) }
    }
    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        log.add("notifying \(key(characteristic)) \(characteristic.isNotifying)" + (error.map { " error \(Self.code($0))" } ?? ""))
        switch key(characteristic) {
        case "A1" where characteristic.isNotifying:
            log.queue.asyncAfter(deadline: .now() + 1) { [self] in
                // One at a time, each freed by its confirmation: several in a second (one only if a confirmation
                // never freed the next).
                log.add("indications \(indications >= 3 ? "several" : "\(indications)")")
                peripheral.setNotifyValue(false, for: characteristic)
                guard let late = characteristics["A2"] else { return }
                readStarted = .now
                peripheral.readValue(for: late)
            }
        case "A4":
            if let unanswered = characteristics["A5"] { peripheral.setNotifyValue(true, for: unanswered) }
        default:
            break
        }
    }
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        switch key(characteristic) {
        case "A1":
            indications += 1
        case "A2":
            let waited = ContinuousClock.now - readStarted
            log.add("read A2 error \(error.map(Self.code) ?? "none")\(waited >= .milliseconds(450) ? " late" : " early: \(waited)")")
            if let long = characteristics["A3"] { peripheral.writeValue(longValue, for: long, type: .withResponse) }
        case "A3":
            log.add("read back A3 \(characteristic.value == longValue ? "whole" : "\(characteristic.value?.count ?? -1) octets, not what was written")")
            if let bare = characteristics["A4"] { peripheral.setNotifyValue(true, for: bare) }
        default:
            break
        }
    }
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        log.add("wrote \(key(characteristic))" + (error.map { " error \(Self.code($0))" } ?? ""))
        peripheral.readValue(for: characteristic)
    }
}

/// Issue 32 item 7: `blue serve --personality android` serves as Android's `BluetoothGattServer` does, met by a
/// CoreBluetooth central offering an iPhone's ATT_MTU (185, so a 300-octet write is a long write). The app declares the 2902 descriptors (one it forgets: nobody can subscribe, and blue
/// serve warns); indications go one at a time (a 10 ms generator meets "busy" while one awaits its confirmation);
/// a read is answered late with the app's error; a long write reaches the app as one execute write; a 2902 write the
/// app never answers leaves the central to its 30-second ATT timeout, which ends the link.
@Suite struct AndroidGattServerTests {
    static let definition = """
        {"name": "Droid", "services": [{"uuid": "\(androidUUID("A0"))", "characteristics": [
          {"uuid": "\(androidUUID("A1"))", "properties": ["indicate"], "descriptors": [{"uuid": "2902"}],
           "notify": {"generator": "counter", "interval": 0.01, "width": 4}},
          {"uuid": "\(androidUUID("A2"))", "properties": ["read"], "value": {"text": "late"}, "answer": {"delay": 0.5, "error": 128}},
          {"uuid": "\(androidUUID("A3"))", "properties": ["read", "write"], "value": {"text": ""}},
          {"uuid": "\(androidUUID("A4"))", "properties": ["notify"], "value": {"hex": "00"}},
          {"uuid": "\(androidUUID("A5"))", "properties": ["notify"], "descriptors": [{"uuid": "2902", "answer": {"never": true}}]}
        ]}]}
        """

    @Test func aCentralMeetsAnAndroidGattServer() async throws {
        let serve = try await ServeOnHub("android-server", files: ["droid.json": Self.definition]) { directory in
            ["--personality", "android", directory + "/droid.json"]
        }
        defer { serve.stop() }
        _ = try await serve.serving()
        let socket = serve.socket
        let warnings = serve.errors
        #expect(warnings.contains("\(androidUUID("A4")) notifies but declares no 2902 descriptor"), "\(warnings)")
        #expect(!warnings.contains(androidUUID("A1")) && !warnings.contains(androidUUID("A5")), "\(warnings)")

        let central = AndroidServerCentral()
        let manager = CBBackendRegistry.$taskProvider.withValue(HostBackend.provider(.hub(socketPath: socket), preferredATTMTU: 185,
                                                                                  pairingAgent: .accepting)) {
            Box(value: CBCentralManager(delegate: central, queue: central.log.queue))
        }
        defer { manager.value.backend?.shutdown() }
        // Everything up to the unanswered subscription, then the ATT timeout (30 s) ends the link.
        try await waitFor("the link ended by the ATT timeout", within: .seconds(60), on: central.log.queue,
                          until: { central.log.entries.contains { $0.hasPrefix("disconnected") } }, seen: { "central \(central.log.entries)" })
        let log = central.log.entries
        #expect(log.first == "characteristics [\"A1\", \"A2\", \"A3\", \"A4\", \"A5\"]")
        #expect(log.contains("notifying A1 true"))
        #expect(log.contains("indications several"), "\(log)")
        #expect(log.contains("read A2 error 0x80 late"), "\(log)")
        #expect(log.contains("wrote A3"), "\(log)")
        #expect(log.contains("read back A3 whole"), "\(log)")
        // No CCCD to write: the subscription fails.
        #expect(log.contains { $0.hasPrefix("notifying A4 false error") }, "\(log)")
        // The 2902 write never answered: it fails only when the ATT timeout ends the link.
        #expect(Array(log.suffix(2)).first?.hasPrefix("notifying A5 false error") == true, "\(log)")
        #expect(log.last == "disconnected with an error", "\(log)")

        let seen = serve.events
        let kinds = seen.compactMap { $0["event"] as? String }
        // The indications one at a time: ticks every 10 ms found the last one unconfirmed.
        #expect(kinds.contains("notificationBusy"), "\(kinds)")
        #expect(seen.contains { $0["event"] as? String == "read" && $0["uuid"] as? String == androidUUID("A2")
                                && ($0["hex"] as? String) == Hex.encode(Array("late".utf8)) })
        #expect(seen.contains { $0["event"] as? String == "executeWrite" }, "\(kinds)")
        #expect(seen.contains { $0["event"] as? String == "write" && $0["uuid"] as? String == androidUUID("A3")
                                && ($0["hex"] as? String) == Hex.encode(Array(central.longValue)) }, "\(kinds)")
        #expect(seen.contains { $0["event"] as? String == "descriptorWrite" && ($0["answer"] as? String)?.hasPrefix("never") == true }, "\(kinds)")
    }
}
