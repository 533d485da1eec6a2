import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

private let l2capServiceUUID = CBUUID(string: "5E1F0000-0000-4000-8000-00000000C0C0")

/// Publishes a channel, advertises, and collects what arrives on the channel's input stream.
private final class ChannelPeripheral: NSObject, CBPeripheralManagerDelegate, StreamDelegate, @unchecked Sendable {
    var manager: CBPeripheralManager!
    var psm: CBL2CAPPSM?
    var channel: CBL2CAPChannel?
    var received = Data()
    var ended = false

    override init() {
        super.init()
        manager = CBPeripheralManager(delegate: self, queue: nil)
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        peripheral.publishL2CAPChannel(withEncryption: false)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?) {
        guard error == nil else { return }
        psm = PSM
        peripheral.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [l2capServiceUUID]])
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {
        self.channel = channel
        channel?.inputStream.delegate = self
        channel?.inputStream.open()
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        guard let input = aStream as? InputStream else { return }
        if eventCode.contains(.hasBytesAvailable) {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while input.hasBytesAvailable {
                let count = input.read(&buffer, maxLength: buffer.count)
                guard count > 0 else { break }
                received.append(contentsOf: buffer[0..<count])
            }
        }
        if eventCode.contains(.endEncountered) { ended = true }
    }
}

/// Connects, opens the channel on the PSM and writes `payload` through the output stream as space allows.
private final class ChannelCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, StreamDelegate, @unchecked Sendable {
    var manager: CBCentralManager!
    let psm: CBL2CAPPSM
    let payload: Data
    var peripheral: CBPeripheral?
    var channel: CBL2CAPChannel?
    var written = 0
    var spaceEvents = 0

    init(psm: CBL2CAPPSM, payload: Data) {
        self.psm = psm
        self.payload = payload
        super.init()
        manager = CBCentralManager(delegate: self, queue: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: [l2capServiceUUID]) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil else { return }
        self.peripheral = peripheral
        central.stopScan()
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.openL2CAPChannel(psm)
    }

    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {
        self.channel = channel
        channel?.outputStream.delegate = self
        channel?.outputStream.open()
        writeMore()
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        if eventCode.contains(.hasSpaceAvailable) {
            spaceEvents += 1
            writeMore()
        }
    }

    private func writeMore() {
        guard let output = channel?.outputStream else { return }
        while written < payload.count, output.hasSpaceAvailable {
            let chunk = [UInt8](payload[written..<min(payload.count, written + 1000)])
            let count = output.write(chunk, maxLength: chunk.count)
            guard count > 0 else { return }
            written += count
        }
    }
}

private struct Box<T>: @unchecked Sendable { let value: T }

private func onMain<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.main.async { continuation.resume(returning: body()) }
    }
}

@Suite struct HostBackendL2CAPTests {
    /// A published channel (dynamic LE_PSM 0x0080 upwards) opened by the central through two host stacks: 60 KB
    /// written through the output stream as its space allows arrive whole and in order on the peripheral's input
    /// stream.
    @Test func channelCarriesALongStreamInOrder() async throws {
        let provider = HostBackend.privateAirProvider(seed: 77)
        let payload = Data((0..<60_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) })
        let peripheral = await onMain { Box(value: CBBackendRegistry.$taskProvider.withValue(provider) { ChannelPeripheral() }) }
        var psm: CBL2CAPPSM?
        let deadline = Date().addingTimeInterval(20)
        while psm == nil, Date() < deadline {
            psm = await onMain { peripheral.value.psm }
            if psm == nil { try? await Task.sleep(for: .milliseconds(20)) }
        }
        let published = try #require(psm)
        #expect(published == 0x0080)
        let central = await onMain {
            Box(value: CBBackendRegistry.$taskProvider.withValue(provider) { ChannelCentral(psm: published, payload: payload) })
        }
        while Date() < deadline, await onMain({ peripheral.value.received.count < payload.count }) {
            try? await Task.sleep(for: .milliseconds(20))
        }
        let received = await onMain { peripheral.value.received }
        #expect(received.count == payload.count)
        #expect(received == payload)
        let (written, channelPSM) = await onMain { (central.value.written, central.value.channel?.psm) }
        #expect(written == payload.count)
        #expect(channelPSM == published)
    }
}
