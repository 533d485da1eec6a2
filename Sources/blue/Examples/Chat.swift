#if CoreBluetoothPrograms
import ArgumentParser
import Dispatch
import Foundation
import OpenCoreBluetooth
import StackLauncher

/// `blue chat send|receive`: seed 002's text transfer (Apple's BTLE Transfer sample) between two processes, on
/// the CoreBluetooth API (issue 5 item 4). The sender is the sample's peripheral: it publishes the transfer
/// service (the UUIDs of `blue serve --profile chat`), advertises it, and when a central subscribes sends the text
/// in chunks of the central's maximumUpdateValueLength followed by "EOM", pausing when updateValue returns false
/// until peripheralManagerIsReady(toUpdateSubscribers:). The receiver is the sample's central: it scans for the
/// service, connects, subscribes, collects the chunks until "EOM", prints the text on standard output,
/// unsubscribes and disconnects. Both run on the main queue (`queue: nil`), as the sample does.
///
/// One addition to the sample, so that neither end can report success for a text that did not arrive: the receiver
/// writes "EOM" back (Write Command) before it unsubscribes, and the sender exits 0 only after that confirmation.
/// A link lost before it (dropped, out of range, the peer killed) is one line on standard error and exit 1 at both
/// ends, with how far the transfer got.
///
/// Transport: `--hci`, else `$OCB_HCI`, else `virtual` (the shared air: the `blue air` hub at `$OCB_AIR_SOCKET`
/// or its default socket, started when none runs, as for every command).
struct Chat: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat",
        abstract: "Seed 002's text transfer: send a text to, or receive one from, another process.",
        discussion: """
            `blue chat receive` waits for a sender, prints the text it receives on standard output and exits after \
            the end-of-message marker. `blue chat send TEXT` (or --file F, or standard input with `-`) advertises \
            the transfer service and sends the text to the first receiver, with a progress bar on standard error \
            for long texts. Both ends default to the `blue air` hub (start one with `blue air`).
            """,
        subcommands: [ChatSend.self, ChatReceive.self])
}

/// The options both ends share.
struct ChatOptions: ParsableArguments {
    @Option(name: .customLong("hci"), help: ArgumentHelp(
        "The controller: virtual (the shared air: the `blue air` hub at $OCB_AIR_SOCKET or its default socket), "
            + "air:PATH, tcp:HOST:PORT, unix:PATH, serial:…, hciN, or bluez[:hciN] (bluetoothd's). Default: $OCB_HCI, else virtual.",
        valueName: "transport"))
    var hci: String?

    @Option(help: "Seconds before giving up (exit 1).")
    var timeout: Double = 60

    @OptionGroup var log: LogOptions

    func validate() throws {
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be between 0 and 86400 seconds") }
    }

    /// Installs the backend on the chosen transport; returns its name for messages.
    func installTransport() -> String {
        let name = StackSpecification.name(given: hci, default: "virtual")
        CBBackendRegistry.setDefault(HostBackend.provider(HostBackend.transport(named: name)))
        return name
    }
}

/// The transfer service of seed 002 (Apple's BTLE Transfer sample UUIDs, as `blue serve --profile chat`).
enum ChatTransferService {
    nonisolated(unsafe) static let serviceUUID = CBUUID(string: "E20A39F4-73F5-4BC4-A12F-17D1AD07A961")
    nonisolated(unsafe) static let characteristicUUID = CBUUID(string: "08590F7E-DB05-467E-8757-72F6FAEB13D4")
    static let endOfMessage = Data("EOM".utf8)
}

struct ChatSend: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send", abstract: "Advertise the transfer service and send a text to the first receiver.")

    @OptionGroup var options: ChatOptions

    @Option(help: ArgumentHelp("Send the contents of this file (UTF-8).", valueName: "file"))
    var file: String?

    @Argument(help: "The text to send (`-` reads standard input).")
    var text: String?

    @Flag(help: "No progress bar.")
    var quiet = false

    func validate() throws {
        if file != nil, text != nil { throw ValidationError("give either TEXT or --file, not both") }
        if file == nil, text == nil { throw ValidationError("give the TEXT to send, or --file F") }
    }

    func run() throws {
        let data: Data
        if let file {
            guard let contents = FileManager.default.contents(atPath: file) else {
                ChatProcess.fail("blue chat send: cannot read \(file)", code: 64)
            }
            data = contents
        } else if text == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            data = Data((text ?? "").utf8)
        }
        guard String(data: data, encoding: .utf8) != nil else { ChatProcess.fail("blue chat send: the text is not UTF-8", code: 64) }
        let transport = options.installTransport()
        CommandRun.exitOnLoss(name: "blue chat send")
        let seconds = options.timeout
        let progress = ChatProgress(total: data.count, enabled: !quiet && data.count >= 1024)
        DispatchQueue.main.async {
            ChatProcess.sender = ChatSender(data: data, progress: progress)
        }
        ChatProcess.failWhenUnsupported(transport: transport)
        DispatchQueue.main.asyncAfter(deadline: .now() + seconds) {
            let stage = ChatProcess.sender.map { $0.sendDataIndex == 0 ? "no receiver subscribed" : "\($0.sendDataIndex) of \(data.count) bytes sent" } ?? "not started"
            ChatProcess.fail("blue chat send: timed out after \(seconds) s: \(stage)")
        }
        dispatchMain()
    }
}

struct ChatReceive: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive", abstract: "Find a sender, print the text it sends, exit after the end-of-message marker.")

    @OptionGroup var options: ChatOptions

    func run() throws {
        let transport = options.installTransport()
        CommandRun.exitOnLoss(name: "blue chat receive")
        let seconds = options.timeout
        DispatchQueue.main.async {
            ChatProcess.receiver = ChatReceiver()
        }
        ChatProcess.failWhenUnsupported(transport: transport)
        DispatchQueue.main.asyncAfter(deadline: .now() + seconds) {
            let stage = ChatProcess.receiver.map { $0.connected ? "\($0.data.count) bytes received, no end-of-message marker" : "no sender found" } ?? "not started"
            ChatProcess.fail("blue chat receive: timed out after \(seconds) s: \(stage)")
        }
        dispatchMain()
    }
}

/// The chat ends of this process (touched on the main queue only).
@MainActor enum ChatProcess {
    static var sender: ChatSender?
    static var receiver: ChatReceiver?

    nonisolated static func fail(_ message: String, code: Int32 = 1) -> Never {
        Console.error(message)
        CommandRun.exitNow(code)
    }

    /// Exits 69 as soon as a manager reports `.unsupported` (no stack on the transport; the reason is already on
    /// standard error).
    nonisolated static func failWhenUnsupported(transport: String) {
        DispatchQueue.main.asyncAfter(deadline: .now() + 0.1) {
            let states = [sender?.peripheralManager?.state, receiver?.centralManager?.state]
            guard states.contains(.unsupported) else { return failWhenUnsupported(transport: transport) }
            fail("blue chat: no Bluetooth stack on \(transport)", code: 69)
        }
    }
}

/// A progress bar on standard error: `[#######-------]  48%  9.6 kB  12.3 kB/s`, redrawn in place.
final class ChatProgress: @unchecked Sendable {
    let total: Int
    let enabled: Bool
    private let start = Date()
    private var lastDraw = Date.distantPast

    init(total: Int, enabled: Bool) {
        self.total = total
        self.enabled = enabled
    }

    func update(_ done: Int, final: Bool = false) {
        guard enabled else { return }
        let now = Date()
        guard final || now.timeIntervalSince(lastDraw) >= 0.1 else { return }
        lastDraw = now
        let fraction = total > 0 ? Double(done) / Double(total) : 1
        let width = 30
        let filled = min(width, max(0, Int(fraction * Double(width))))
        let elapsed = max(now.timeIntervalSince(start), 0.001)
        let rate = Double(done) / elapsed
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let percent = String(Int(fraction * 100))
        let padded = String(repeating: " ", count: max(0, 3 - percent.count)) + percent
        let line = "\r[\(bar)] \(padded)%  \(Self.bytes(Double(done)))  \(Self.bytes(rate))/s"
        Console.errorText(line + (final ? "\n" : ""))
    }

    static func bytes(_ value: Double) -> String {
        if value >= 1_000_000 { return String(format: "%.1f MB", value / 1_000_000) }
        if value >= 1_000 { return String(format: "%.1f kB", value / 1_000) }
        return String(format: "%.0f B", value)
    }
}

/// Seed 002's peripheral, sending one text.
final class ChatSender: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    var peripheralManager: CBPeripheralManager?
    var transferCharacteristic: CBMutableCharacteristic?
    var connectedCentral: CBCentral?
    let dataToSend: Data
    var sendDataIndex = 0
    var sendingEOM = false
    var finished = false
    /// The receiver wrote "EOM" back: it has the whole text.
    var confirmed = false
    let progress: ChatProgress

    init(data: Data, progress: ChatProgress) {
        dataToSend = data
        self.progress = progress
        super.init()
        peripheralManager = CBPeripheralManager(delegate: self, queue: nil)
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        let characteristic = CBMutableCharacteristic(type: ChatTransferService.characteristicUUID,
                                                     properties: [.notify, .writeWithoutResponse],
                                                     value: nil, permissions: [.readable, .writeable])
        let service = CBMutableService(type: ChatTransferService.serviceUUID, primary: true)
        service.characteristics = [characteristic]
        peripheral.add(service)
        transferCharacteristic = characteristic
        peripheral.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [ChatTransferService.serviceUUID],
                                     CBAdvertisementDataLocalNameKey: "blue chat"])
        Console.error("blue chat send: waiting for a receiver (\(dataToSend.count) bytes)")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        guard connectedCentral == nil else { return }
        connectedCentral = central
        sendDataIndex = 0
        sendingEOM = false
        peripheral.stopAdvertising()
        // A bulk transfer: ask for the short connection interval (15...30 ms), as a transfer app on iOS does.
        peripheral.setDesiredConnectionLatency(.low, for: central)
        sendData()
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {
        guard finished else {
            ChatProcess.fail("blue chat send: the receiver left after \(sendDataIndex) of \(dataToSend.count) bytes")
        }
        guard confirmed else {
            ChatProcess.fail("blue chat send: the receiver left without confirming the text "
                             + "(\(dataToSend.count) bytes sent; the link may have been lost)")
        }
        Console.error("blue chat send: sent \(dataToSend.count) bytes")
        // Leave the receiver's unsubscription its response before this device leaves the air.
        DispatchQueue.main.asyncAfter(deadline: .now() + 0.5) { Foundation.exit(0) }
    }

    func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) {
        sendData()
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        if finished, requests.contains(where: { $0.value == ChatTransferService.endOfMessage }) { confirmed = true }
    }

    private func sendEOM() {
        guard let peripheralManager, let transferCharacteristic else { return }
        if peripheralManager.updateValue(ChatTransferService.endOfMessage, for: transferCharacteristic, onSubscribedCentrals: nil) {
            sendingEOM = false
            finished = true
            progress.update(sendDataIndex, final: true)
        } else {
            sendingEOM = true
        }
    }

    func sendData() {
        guard let peripheralManager, let transferCharacteristic, !finished else { return }
        if sendingEOM { return sendEOM() }
        while sendDataIndex < dataToSend.count {
            var amountToSend = dataToSend.count - sendDataIndex
            if let mtu = connectedCentral?.maximumUpdateValueLength { amountToSend = min(amountToSend, max(mtu, 1)) }
            let chunk = dataToSend.subdata(in: sendDataIndex..<(sendDataIndex + amountToSend))
            // A chunk equal to the marker would end the transfer early: send it one byte shorter.
            let safeChunk = chunk == ChatTransferService.endOfMessage ? chunk.prefix(2) : chunk
            guard peripheralManager.updateValue(safeChunk, for: transferCharacteristic, onSubscribedCentrals: nil) else { return }
            sendDataIndex += safeChunk.count
            progress.update(sendDataIndex)
        }
        sendEOM()
    }
}

/// Seed 002's central, receiving one text.
final class ChatReceiver: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    var centralManager: CBCentralManager?
    var discoveredPeripheral: CBPeripheral?
    var data = Data()
    var receivedText: String?
    var connected = false
    private let start = Date()

    override init() {
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard central.state == .poweredOn else { return }
        central.scanForPeripherals(withServices: [ChatTransferService.serviceUUID], options: nil)
        Console.error("blue chat receive: looking for a sender")
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard discoveredPeripheral == nil else { return }
        discoveredPeripheral = peripheral
        central.stopScan()
        central.connect(peripheral, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        connected = true
        peripheral.delegate = self
        peripheral.discoverServices([ChatTransferService.serviceUUID])
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {
        ChatProcess.fail("blue chat receive: could not connect: \(error?.localizedDescription ?? "unknown error")")
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        guard let receivedText else {
            ChatProcess.fail("blue chat receive: the sender left after \(data.count) bytes")
        }
        finish(receivedText)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        for service in peripheral.services ?? [] where service.uuid == ChatTransferService.serviceUUID {
            peripheral.discoverCharacteristics([ChatTransferService.characteristicUUID], for: service)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        for characteristic in service.characteristics ?? [] where characteristic.uuid == ChatTransferService.characteristicUUID {
            peripheral.setNotifyValue(true, for: characteristic)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        guard error == nil, let chunk = characteristic.value, receivedText == nil else { return }
        if chunk == ChatTransferService.endOfMessage {
            receivedText = String(decoding: data, as: UTF8.self)
            // The confirmation the sender waits for, before the unsubscription (same bearer: it arrives first).
            peripheral.writeValue(ChatTransferService.endOfMessage, for: characteristic, type: .withoutResponse)
            peripheral.setNotifyValue(false, for: characteristic)
        } else {
            data.append(chunk)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error {
            // The sender may leave as soon as it sees the unsubscription: the text is complete then.
            if let receivedText { return finish(receivedText) }
            ChatProcess.fail("blue chat receive: could not subscribe: \(error.localizedDescription)")
        }
        guard !characteristic.isNotifying, let receivedText else { return }
        // Leave the sender a moment to see the unsubscription, then disconnect.
        centralManager?.cancelPeripheralConnection(peripheral)
        DispatchQueue.main.asyncAfter(deadline: .now() + 1) { [self] in finish(receivedText) }
    }

    private func finish(_ text: String) {
        let elapsed = max(Date().timeIntervalSince(start), 0.001)
        Console.write(text)
        Console.error("blue chat receive: \(data.count) bytes (\(ChatProgress.bytes(Double(data.count) / elapsed))/s)")
        Foundation.exit(0)
    }
}
#endif
