import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

private nonisolated(unsafe) let l2capServiceUUID = CBUUID(string: "5E1F0000-0000-4000-8000-00000000C0C0")

/// Publishes a channel, advertises, and collects what arrives on the channel's input stream, which it schedules in
/// the run loop of a stream thread of its own (as an app on Apple systems): the stream events run there.
private final class ChannelPeripheral: NSObject, CBPeripheralManagerDelegate, StreamDelegate, @unchecked Sendable {
    var manager: CBPeripheralManager!
    var psm: CBL2CAPPSM?
    var channel: CBL2CAPChannel?
    let streamThread = RunLoopThread()
    private let collected = LockedBox((received: Data(), ended: false, events: 0, offThread: 0))

    var received: Data { collected.value.received }
    var ended: Bool { collected.value.ended }
    /// Stream events seen, and how many of them ran elsewhere than on the stream thread.
    var streamEvents: (all: Int, offThread: Int) { (collected.value.events, collected.value.offThread) }

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
        guard let input = channel?.inputStream, let loop = streamThread.loop else { return }
        input.delegate = self
        input.schedule(in: loop, forMode: .default)
        input.open()
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        let onThread = Thread.current === streamThread.thread
        collected.value.events += 1
        if !onThread { collected.value.offThread += 1 }
        guard let input = aStream as? InputStream else { return }
        if eventCode.contains(.hasBytesAvailable) {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while input.hasBytesAvailable {
                let count = input.read(&buffer, maxLength: buffer.count)
                guard count > 0 else { break }
                collected.value.received.append(contentsOf: buffer[0..<count])
            }
        }
        if eventCode.contains(.endEncountered) { collected.value.ended = true }
    }
}

/// Connects, opens the channel on the PSM, schedules the output stream in its stream thread's run loop and writes
/// `payload` there, 1,000 bytes per `hasSpaceAvailable` (one write per event: the stream signals again while there
/// is room, as CFStream does).
private final class ChannelCentral: ConnectingCentral, StreamDelegate, @unchecked Sendable {
    let psm: CBL2CAPPSM
    let payload: Data
    var channel: CBL2CAPChannel?
    let streamThread = RunLoopThread()
    private let progress = LockedBox((written: 0, spaceEvents: 0, offThread: 0))

    var written: Int { progress.value.written }
    var streamEvents: (space: Int, offThread: Int) { (progress.value.spaceEvents, progress.value.offThread) }

    init(psm: CBL2CAPPSM, payload: Data) {
        self.psm = psm
        self.payload = payload
        super.init(service: l2capServiceUUID)
    }

    override func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.openL2CAPChannel(psm)
    }

    override func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {
        self.channel = channel
        guard let output = channel?.outputStream, let loop = streamThread.loop else { return }
        output.delegate = self
        output.schedule(in: loop, forMode: .default)
        output.open()
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        if Thread.current !== streamThread.thread { progress.value.offThread += 1 }
        guard eventCode.contains(.hasSpaceAvailable), let output = aStream as? OutputStream else { return }
        progress.value.spaceEvents += 1
        let written = progress.value.written
        guard written < payload.count else { return }
        let chunk = [UInt8](payload[written..<min(payload.count, written + 1000)])
        let count = output.write(chunk, maxLength: chunk.count)
        if count > 0 { progress.value.written += count }
    }
}

@Suite struct HostBackendL2CAPTests {
    /// A published channel (dynamic LE_PSM 0x0080 upwards) opened by the central through two host stacks: 60 KB
    /// written through the output stream as its space allows arrive whole and in order on the peripheral's input
    /// stream.
    @Test func channelCarriesALongStreamInOrder() async throws {
        let provider = HostBackend.privateAirProvider(seed: 77)
        let payload = Data((0..<60_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) })
        let peripheral = await makeOnMain(with: provider) { ChannelPeripheral() }
        try await waitFor("the channel's publication", until: { peripheral.value.psm != nil },
                          seen: { "state \(peripheral.value.manager.state.rawValue), no PSM" })
        let published = try #require(await onMain { peripheral.value.psm })
        #expect(published == 0x0080)
        let central = await makeOnMain(with: provider) { ChannelCentral(psm: published, payload: payload) }
        try await waitFor("the whole payload through the channel", until: { peripheral.value.received.count >= payload.count },
                          seen: {
                              "received \(peripheral.value.received.count) of \(payload.count) bytes, written \(central.value.written), "
                                  + "channel \(central.value.channel == nil ? "not open" : "open"), ended \(peripheral.value.ended)"
                          })
        let received = await onMain { peripheral.value.received }
        #expect(received.count == payload.count)
        #expect(received == payload)
        let (written, channelPSM) = await onMain { (central.value.written, central.value.channel?.psm) }
        #expect(written == payload.count)
        #expect(channelPSM == published)
        let (peripheralEvents, centralEvents) = await onMain { (peripheral.value.streamEvents, central.value.streamEvents) }
        #expect(peripheralEvents.all > 1)
        #expect(peripheralEvents.offThread == 0, "the input stream's events run on the thread it was scheduled in")
        #expect(centralEvents.space >= 60, "one write of 1,000 bytes per hasSpaceAvailable")
        #expect(centralEvents.offThread == 0, "the output stream's events run on the thread it was scheduled in")
        await onMain {
            peripheral.value.channel?.inputStream.close()
            central.value.channel?.outputStream.close()
        }
        #expect(peripheral.value.streamThread.stop())
        #expect(central.value.streamThread.stop())
    }
}

private nonisolated(unsafe) let securedServiceUUID = CBUUID(string: "5E1F0000-0000-4000-8000-00000000C0C1")

/// Publishes a channel that needs encryption (`withEncryption: true`), advertises, keeps the channels opened, and
/// unpublishes on demand.
private final class SecuredChannelPeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    var manager: CBPeripheralManager!
    var psm: CBL2CAPPSM?
    var channels: [CBL2CAPChannel] = []
    var unpublished: (any Error)??

    override init() {
        super.init()
        manager = CBPeripheralManager(delegate: self, queue: nil)
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        peripheral.publishL2CAPChannel(withEncryption: true)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?) {
        guard error == nil else { return }
        psm = PSM
        peripheral.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [securedServiceUUID]])
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {
        if let channel {
            channels.append(channel)
            channel.inputStream.open()
        }
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didUnpublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?) {
        unpublished = .some(error)
    }
}

/// Connects and opens the channel on the PSM; keeps it with its input stream open (polled, not scheduled).
private final class ChannelOpener: ConnectingCentral, @unchecked Sendable {
    let psm: CBL2CAPPSM
    var channel: CBL2CAPChannel?
    var openError: (any Error)?

    init(psm: CBL2CAPPSM) {
        self.psm = psm
        super.init(service: securedServiceUUID)
    }

    override func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.openL2CAPChannel(psm)
    }

    override func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {
        self.channel = channel
        openError = error
        channel?.inputStream.open()
    }
}

@Suite struct PublishedChannelSecurityTests {
    /// `publishL2CAPChannel(withEncryption: true)`: the central's first request is refused (its link is not
    /// encrypted: Insufficient Authentication), its stack pairs and asks again, and the channel opens on the
    /// encrypted link, as between two Apple devices. `unpublishL2CAPChannel` then closes the channel open on the
    /// PSM (Apple's header), on both sides.
    @Test func anEncryptedChannelOpensAfterPairingAndUnpublishingClosesIt() async throws {
        let provider = HostBackend.privateAirProvider(seed: 78)
        let peripheral = await makeOnMain(with: provider) { SecuredChannelPeripheral() }
        try await waitFor("the channel's publication", until: { peripheral.value.psm != nil },
                          seen: { "state \(peripheral.value.manager.state.rawValue), no PSM" })
        let published = try #require(await onMain { peripheral.value.psm })
        let central = await makeOnMain(with: provider) { ChannelOpener(psm: published) }
        try await waitFor("the channel, after pairing", until: { central.value.channel != nil || central.value.openError != nil },
                          seen: { "central \(central.value.log), peripheral channels \(peripheral.value.channels.count)" })
        let openError = await onMain { central.value.openError.map { "\($0)" } }
        #expect(openError == nil)
        try await waitFor("the peripheral's side of the channel", until: { peripheral.value.channels.count == 1 },
                          seen: { "\(peripheral.value.channels.count) channels" })

        await onMain { peripheral.value.manager.unpublishL2CAPChannel(published) }
        try await waitFor("the unpublication", until: { peripheral.value.unpublished != nil }, seen: { "not yet" })
        let unpublishError = await onMain { peripheral.value.unpublished.flatMap { $0 }.map { "\($0)" } }
        #expect(unpublishError == nil)
        try await waitFor("the channel's end on both sides", until: {
            central.value.channel?.inputStream.streamStatus == .atEnd
                && peripheral.value.channels.first?.inputStream.streamStatus == .atEnd
        }, seen: {
            "central \(String(describing: central.value.channel?.inputStream.streamStatus.rawValue)), "
                + "peripheral \(String(describing: peripheral.value.channels.first?.inputStream.streamStatus.rawValue))"
        })
    }
}
