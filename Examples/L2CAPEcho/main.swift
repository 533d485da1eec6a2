// An L2CAP channel between two CoreBluetooth programs, as Apple's L2CAP samples make one: the peripheral publishes
// a channel (`publishL2CAPChannel`), serves its PSM in the characteristic CBUUIDL2CAPPSMCharacteristicString and
// advertises; the central finds it, reads the PSM, opens the channel (`openL2CAPChannel`), sends a line through the
// output stream and waits for the peripheral's "echo: LINE" on the input stream.
//
// Usage: L2CAPEcho --role peripheral [--once] [--timeout SECONDS]
//        L2CAPEcho --role central [--text TEXT] [--timeout SECONDS]
// The peripheral exits 0 at the timeout (default 60 s), or after its first echo with --once; the central exits 0
// once the echo arrived, 1 on a failure or at the timeout.
import ExampleSupport
import Foundation
import OpenCoreBluetooth

let example = ExampleProgram("L2CAPEcho")

enum EchoService {
    nonisolated(unsafe) static let serviceUUID = CBUUID(string: "1F6B43AA-94DE-4BA9-981C-DA38823117BD")
    nonisolated(unsafe) static let psmUUID = CBUUID(string: CBUUIDL2CAPPSMCharacteristicString)
}

func log(_ text: String) { example.log(text) }
func fail(_ text: String) -> Never { example.fail(text) }

/// Reads what a channel's input stream has, every 20 ms on the main queue (no run loop needed).
final class ChannelPump: @unchecked Sendable {
    let channel: CBL2CAPChannel
    /// Called on the main queue with each chunk read.
    var received: ((Data) -> Void)?
    private var timer: (any DispatchSourceTimer)?

    init(_ channel: CBL2CAPChannel) {
        self.channel = channel
        channel.inputStream.open()
        channel.outputStream.open()
        let timer = DispatchSource.makeTimerSource(queue: .main)
        timer.schedule(deadline: .now(), repeating: .milliseconds(20))
        timer.setEventHandler { [weak self] in self?.poll() }
        timer.resume()
        self.timer = timer
    }

    private func poll() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while channel.inputStream.hasBytesAvailable {
            let count = channel.inputStream.read(&buffer, maxLength: buffer.count)
            guard count > 0 else { break }
            received?(Data(buffer[..<count]))
        }
    }

    func send(_ data: Data) {
        let bytes = [UInt8](data)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBufferPointer { channel.outputStream.write($0.baseAddress!, maxLength: $0.count) }
            if written <= 0 { fail("the channel took no more bytes (\(offset) of \(bytes.count) sent)") }
            offset += written
        }
    }
}

final class EchoPeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    var manager: CBPeripheralManager!
    let once: Bool
    var pumps: [ChannelPump] = []

    init(once: Bool) {
        self.once = once
        super.init()
        manager = CBPeripheralManager(delegate: self, queue: nil)
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        if peripheral.state == .unsupported { fail("Bluetooth is not supported here") }
        guard peripheral.state == .poweredOn else { return }
        peripheral.publishL2CAPChannel(withEncryption: false)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?) {
        if let error { fail("cannot publish a channel: \(error)") }
        log("Published PSM \(PSM)")
        var psm = PSM.littleEndian
        let value = withUnsafeBytes(of: &psm) { Data($0) }
        let characteristic = CBMutableCharacteristic(type: EchoService.psmUUID, properties: [.read], value: value, permissions: [.readable])
        let service = CBMutableService(type: EchoService.serviceUUID, primary: true)
        service.characteristics = [characteristic]
        peripheral.add(service)
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: "L2CAP Echo", CBAdvertisementDataServiceUUIDsKey: [EchoService.serviceUUID]])
        print("ready PSM \(PSM)")
        fflush(nil)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {
        guard let channel else { return log("a channel did not open: \(error.map { "\($0)" } ?? "no error")") }
        log("Channel opened by \(channel.peer.identifier)")
        let once = once
        let pump = ChannelPump(channel)
        pump.received = { [unowned pump] data in
            let text = String(decoding: data, as: UTF8.self)
            log("Received: \(text)")
            pump.send(Data("echo: \(text)".utf8))
            print("echoed \(text)")
            fflush(nil)
            if once { DispatchQueue.main.asyncAfter(deadline: .now() + 1) { exit(0) } }
        }
        pumps.append(pump)
    }
}

final class EchoCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    var manager: CBCentralManager!
    var peripheral: CBPeripheral?
    var pump: ChannelPump?
    let text: String
    var received = ""

    init(text: String) {
        self.text = text
        super.init()
        manager = CBCentralManager(delegate: self, queue: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .unsupported { fail("Bluetooth is not supported here") }
        guard central.state == .poweredOn else { return }
        central.scanForPeripherals(withServices: [EchoService.serviceUUID])
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil else { return }
        self.peripheral = peripheral
        central.stopScan()
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.discoverServices([EchoService.serviceUUID])
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {
        fail("cannot connect: \(error.map { "\($0)" } ?? "no error")")
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == EchoService.serviceUUID }) else { fail("no echo service") }
        peripheral.discoverCharacteristics([EchoService.psmUUID], for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        guard let characteristic = service.characteristics?.first else { fail("no PSM characteristic") }
        peripheral.readValue(for: characteristic)
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        guard let value = characteristic.value, value.count == 2 else { fail("no PSM: \(error.map { "\($0)" } ?? "bad value")") }
        let psm = CBL2CAPPSM(value[value.startIndex]) | CBL2CAPPSM(value[value.startIndex + 1]) << 8
        log("Opening PSM \(psm)")
        peripheral.openL2CAPChannel(psm)
    }

    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {
        guard let channel else { fail("the channel did not open: \(error.map { "\($0)" } ?? "no error")") }
        let expected = "echo: \(text)"
        let pump = ChannelPump(channel)
        pump.received = { [self] data in
            received += String(decoding: data, as: UTF8.self)
            if received == expected {
                print("received \(received)")
                fflush(nil)
                exit(0)
            }
        }
        self.pump = pump
        pump.send(Data(text.utf8))
        log("Sent: \(text)")
    }
}

let timeout = example.timeout(default: 60)
switch example.option("--role") {
case "peripheral":
    let peripheral = EchoPeripheral(once: example.flag("--once"))
    example.run(keeping: peripheral, timeout: timeout) {
        if peripheral.once { fail("timed out after \(timeout) s: no channel echoed") }
        exit(0)
    }
case "central":
    let central = EchoCentral(text: example.option("--text") ?? "hello over L2CAP")
    example.run(keeping: central, timeout: timeout) { fail("timed out after \(timeout) s: no echo") }
default:
    fail("give --role peripheral or --role central")
}
