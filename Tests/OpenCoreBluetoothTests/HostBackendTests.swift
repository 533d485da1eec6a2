import Dispatch
import Foundation
import StackLauncher
import Testing
@testable import OpenCoreBluetooth

private final class SeedEar: PeripheralBlueEar, CentralBlueEar, @unchecked Sendable {
    private let lock = NSLock()
    private var _events: [String] = []
    var events: [String] { lock.withLock { _events } }
    private func add(_ event: String) { lock.withLock { _events.append(event) } }

    func didStartConfiguration() { add("configuration") }
    func didStartAdvertising() { add("advertising") }
    func didSendData() { add("send") }
    func didReceiveData() { add("receive") }
    func didStartScanningPeripherals() { add("scanning") }
    func didConnectPeripheral(name: String?) { add("connect \(name ?? "")") }
    func didDisconnectPeripheral(name: String?) { add("disconnect \(name ?? "")") }
    func didFailConnection() { add("fail") }
}

@Suite struct HostBackendTests {
    /// Seed 001's iOS peripheral and macOS central, unchanged, against each other through the host backend: two
    /// host stacks over two virtual controllers on a private in-process air. The central finds the peripheral by
    /// its advertised service (name from the scan response), connects, subscribes, reads {"Hello": "Darkness"}
    /// from the notification, writes {"Yo": "Lo"} with response (a deferred request the peripheral app
    /// answers), then disconnects.
    @Test func seed001ManagersExchangeBothPlistsThroughHostStacks() async throws {
        let gapName = EnginePeripheralBackend.deviceName
        let peripheralEar = SeedEar(), centralEar = SeedEar()
        let apps = await makeOnMain(with: HostBackend.privateAirProvider(seed: 11)) {
            let peripheral = PeripheralBluetoothManager(delegate: peripheralEar)
            let central = CentralBluetoothManager(delegate: centralEar)
            central.scan()
            return (peripheral, central)
        }
        try await waitFor("the exchange, to the central's disconnection", until: {
            centralEar.events.contains("disconnect \(gapName)") && peripheralEar.events.contains("receive")
        }, seen: { "central \(centralEar.events), peripheral \(peripheralEar.events)" })
        // Connected under its advertised name; once connected, its GAP Device Name is read and is the name from then
        // on, as iOS shows an iPhone's name rather than the app's advertised one (issue 32 item 3).
        #expect(centralEar.events == ["configuration", "scanning", "connect Peripheral - iOS", "receive", "send",
                                      "disconnect \(gapName)"])
        #expect(peripheralEar.events == ["configuration", "advertising", "send", "receive"])
        // (CoreBluetooth drops a peripheral's services when it disconnects: the value read is gone with them; the
        // ear's "receive" is the seed decoding it as a [String: String] property list.)
        let misuse = await onMain { () -> [String] in
            let (peripheral, central) = apps.value
            return (central.centralManager?.misuseLog ?? []) + (peripheral.peripheralManager?.misuseLog ?? [])
        }
        #expect(misuse == [])
        // Our controller has LE Extended Advertising and its commands, which the host drives (every HostBackend
        // stack of the suite is on our controller).
        #expect(await onMain { CBCentralManager.supports(.extendedScanAndConnect) })
    }

    /// Seed 002's transfer: a long text in chunks of maximumUpdateValueLength ending with "EOM", paced by
    /// updateValue returning false and peripheralManagerIsReady; then the central's messages as writes without
    /// response, paced by canSendWriteWithoutResponse and peripheralIsReady(toSendWriteWithoutResponse:).
    @Test(arguments: [(517, 40_000, 200), (23, 3_000, 60)])
    func seed002TransferMovesALongTextIntact(mtu: Int, length: Int, messages: Int) async throws {
        try await Self.transfer(with: HostBackend.privateAirProvider(seed: UInt64(mtu), preferredATTMTU: mtu), mtu: mtu,
                                length: length, messages: messages)
    }

    /// Issue 32 item 6: the ATT_MTU a whole program's managers offer, as an iPhone's (185): both ends offer it, so
    /// seed 002's chunks are 182 octets.
    @Test func programWideATTMTUIsWhatEveryManagerOffers() async throws {
        let air = InProcessAir(seed: 185, label: "HostBackendTests.attMTU")
        let provider = HostBackend.provider(.inProcess(air), application: OCBApplication(), preferredATTMTU: 185)
        try await Self.transfer(with: provider, mtu: 185, length: 5_000, messages: 20)
    }

    /// `OCB_ATT_MTU`: a number from 23 to 517 (white space ignored); anything else is ignored (the default is offered).
    @Test func attMTUFromTheEnvironment() {
        let variable = HostBackend.attMTUEnvironmentVariable
        #expect(HostBackend.environmentATTMTU([:]) == nil)
        #expect(HostBackend.environmentATTMTU([variable: ""]) == nil)
        #expect(HostBackend.environmentATTMTU([variable: "185"]) == 185)
        #expect(HostBackend.environmentATTMTU([variable: " 23 "]) == 23)
        #expect(HostBackend.environmentATTMTU([variable: "517"]) == 517)
        for refused in ["22", "518", "0", "-185", "abc", "185 octets"] {
            #expect(HostBackend.environmentATTMTU([variable: refused]) == nil, "\(refused)")
        }
    }

    static func transfer(with provider: CBBackendProvider, mtu: Int, length: Int, messages: Int) async throws {
        let words = ["Bluetooth", "Low", "Energy", "chunk", "núcleo", "señal", "📡", "end-of-message", "EOM?"]
        var text = ""
        var index = 0
        while text.utf8.count < length {
            text += words[index % words.count] + (index % 7 == 6 ? "\n" : " ")
            index += 1
        }
        let expected = text
        let apps = await makeOnMain(with: provider) { (TransferPeripheral(text: expected), TransferCentral(messages: messages)) }
        try await waitFor("the text and every message, to the central's disconnection", within: .seconds(60), until: {
            let (peripheral, central) = apps.value
            return central.disconnected && peripheral.messagesReceived.count == messages
        }, seen: {
            let (peripheral, central) = apps.value
            return "text \(central.receivedText?.utf8.count ?? 0) of \(expected.utf8.count) bytes, chunks sent \(peripheral.chunksSent), "
                + "messages \(peripheral.messagesReceived.count) of \(messages), disconnected \(central.disconnected)"
        })
        let report = await onMain { () -> (String?, Int, Int, Int, [String]) in
            let (peripheral, central) = apps.value
            return (central.receivedText, peripheral.chunksSent, peripheral.refusedUpdates, peripheral.readyCallbacks,
                    peripheral.messagesReceived)
        }
        #expect(report.0 == expected)
        // Every chunk but the last is maximumUpdateValueLength (MTU - 3) long.
        #expect(report.1 == (expected.utf8.count + mtu - 4) / (mtu - 3))
        // The queue filled at least once, and every refusal was followed by a ready callback.
        #expect(report.2 >= 1)
        #expect(report.3 == report.2)
        #expect(report.4 == (0..<messages).map { "message \($0)" })
    }
}
