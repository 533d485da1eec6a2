import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

private nonisolated(unsafe) let errorServiceUUID = CBUUID(string: "5E1F0000-0000-4000-8000-00000000E000")
private nonisolated(unsafe) let errorCharacteristicUUID = CBUUID(string: "5E1F0001-0000-4000-8000-00000000E000")

/// Refuses the first read and every write with ATT errors, and leaves the second read unanswered.
private final class RefusingPeripheral: MainQueuePeripheral, @unchecked Sendable {
    var reads = 0
    var events: [String] = []

    override func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        publishAndAdvertise(errorServiceUUID, [CBMutableCharacteristic(type: errorCharacteristicUUID, properties: [.read, .write],
                                                                       value: nil, permissions: [.readable, .writeable])])
    }

    override func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        reads += 1
        events.append("read \(reads)")
        if reads == 1 { peripheral.respond(to: request, withResult: .unlikelyError) }
    }

    override func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        events.append("write \(requests.count)")
        if let first = requests.first { peripheral.respond(to: first, withResult: .invalidAttributeValueLength) }
    }
}

/// Discovers every service, reads, writes, reads again; logs each outcome and the disconnection.
private final class ProbingCentral: ConnectingCentral, @unchecked Sendable {
    init() { super.init(service: errorServiceUUID) }

    override func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.discoverServices(nil)
    }

    override func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        log.append("disconnected")
    }

    override func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == errorServiceUUID }) else { return }
        peripheral.discoverCharacteristics([errorCharacteristicUUID], for: service)
    }

    override func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        guard let characteristic = service.characteristics?.first else { return }
        peripheral.readValue(for: characteristic)
    }

    private func describe(_ error: (any Error)?) -> String {
        if let error = error as? CBATTError { return "ATT \(error.code)" }
        if let error = error as? CBError { return "CB \(error.code)" }
        return error.map { "\($0)" } ?? "ok"
    }

    override func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        log.append("read \(describe(error))")
        if log.count == 1 { peripheral.writeValue(Data([1, 2, 3]), for: characteristic, type: .withResponse) }
    }

    override func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        log.append("write \(describe(error))")
        peripheral.readValue(for: characteristic)
    }
}

@Suite struct HostBackendErrorTests {
    /// The app's ATT errors reach the central as `CBATTError`s; a request the app never answers holds the
    /// central's read until the link ends, and then nothing of it is left in the peripheral backend.
    @Test func appErrorsReachTheCentralAndUnansweredRequestsEndWithTheLink() async throws {
        let apps = await makeOnMain(with: HostBackend.privateAirProvider(seed: 5)) { (RefusingPeripheral(), ProbingCentral()) }
        try await waitFor("the second read reaching the peripheral app", until: { apps.value.0.reads >= 2 },
                          seen: { "peripheral \(apps.value.0.events), central \(apps.value.1.log)" })
        let backend = await onMain { apps.value.0.manager.backend as? EnginePeripheralBackend }
        let peripheralBackend = try #require(backend)
        #expect(peripheralBackend.pendingRequestCount == 1)
        #expect(await onMain { apps.value.1.log } == ["read ATT unlikelyError", "write ATT invalidAttributeValueLength"])

        await onMain {
            let central = apps.value.1
            if let peripheral = central.peripheral { central.manager.cancelPeripheralConnection(peripheral) }
        }
        try await waitFor("the central's disconnection", until: { apps.value.1.log.contains("disconnected") },
                          seen: { "central \(apps.value.1.log)" })
        let log = await onMain { apps.value.1.log }
        #expect(log.first == "read ATT unlikelyError")
        #expect(log.last == "disconnected")
        #expect(log.count == 4 && log[2].hasPrefix("read CB"), "the held read fails with the link: \(log)")
        #expect(await onMain { apps.value.0.events } == ["read 1", "write 1", "read 2"])
        // The peripheral's side of the link ends on its own stack, a moment later.
        try await waitFor("the held request ending on the peripheral's stack", until: { peripheralBackend.pendingRequestCount == 0 },
                          seen: { "\(peripheralBackend.pendingRequestCount) requests pending" })
        #expect(peripheralBackend.pendingRequestCount == 0)
    }
}
