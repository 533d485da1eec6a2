import BluetoothCore
@testable import BluetoothLE
import GATT
import Host
import Testing

@Suite(.serialized)
struct AsyncHandlerTests {
    @Test func asyncReadHandlersAnswerEachPartOfALongRead() async throws {
        var centralConfiguration = HostConfiguration(address: .randomStatic(seed: 2))
        centralConfiguration.exchangesMTUOnConnect = false
        let air = try await TestAir.started(central: centralConfiguration)
        let offsets = Recorded<Int>()
        let whole = (0..<60).map { UInt8($0) }
        let counter = Characteristic(BluetoothUUID(0xFFC1), properties: [.read]).onRead { read in
            offsets.append(read.offset)
            try await Task.sleep(for: .milliseconds(5))  // an async handler: it may await anything
            return whole
        }
        let refusing = Characteristic(BluetoothUUID(0xFFC2), properties: [.read]).onRead { _ in
            throw GATTAttributeError(ATTErrorCode(0x80))
        }
        try await air.peripheral.publish { Service(BluetoothUUID(0xFFC0)) { counter; refusing } }
        let (remote, local) = try await air.connect()
        let characteristics = try await remote.discoverCharacteristics(of: try #require(remote.discoverServices([BluetoothUUID(0xFFC0)]).first))
        // ATT_MTU 23: Read Request (22 octets), then Read Blobs at 22 and 44 (16 octets, shorter: the end).
        #expect(try await withTimeout { try await remote.read(characteristics[0]) } == whole)
        #expect(offsets.values == [0, 22, 44])
        do {
            _ = try await remote.read(characteristics[1])
            Issue.record("the refusing handler's read succeeded")
        } catch let error as BluetoothLEError {
            #expect(error.attError == ATTErrorCode(0x80))
        }
        #expect(air.loop.sync { air.peripheralHost.localGATTServer.pendingDeferredRequestCount } == 0)
        #expect(local.isConnected)
        await air.finish([remote])
    }

    @Test func asyncWriteHandlersAcceptOrRefuseWrites() async throws {
        var centralConfiguration = HostConfiguration(address: .randomStatic(seed: 2))
        centralConfiguration.exchangesMTUOnConnect = false
        let air = try await TestAir.started(central: centralConfiguration)
        let reported = Recorded<[UInt8]>()
        let guarded = Characteristic(BluetoothUUID(0xFFB1), properties: [.read, .write], value: [0])
            .onWriteRequest { write in
                try await Task.sleep(for: .milliseconds(5))
                if write.value.first == 0xFF { throw GATTAttributeError(ATTErrorCode(0x81)) }
            }
            .onWrite { write in reported.append(write.value) }
        try await air.peripheral.publish { Service(BluetoothUUID(0xFFB0)) { guarded } }
        let (remote, _) = try await air.connect()
        let characteristic = try await remote.characteristic(BluetoothUUID(0xFFB1), service: BluetoothUUID(0xFFB0))
        try await withTimeout { try await remote.write(characteristic, value: [1, 2, 3]) }
        #expect(guarded.value == [1, 2, 3])
        do {
            try await remote.write(characteristic, value: [0xFF])
            Issue.record("the refused write succeeded")
        } catch let error as BluetoothLEError {
            #expect(error.attError == ATTErrorCode(0x81))
        }
        #expect(guarded.value == [1, 2, 3])
        // A long write (prepared writes, then Execute Write) reaches the handler whole.
        let long = (0..<50).map { UInt8($0) }
        try await withTimeout { try await remote.write(characteristic, value: long) }
        #expect(guarded.value == long)
        // Reads of a characteristic with only a write handler are answered from the stored value.
        #expect(try await remote.read(characteristic) == long)
        #expect(await eventually { reported.values == [[1, 2, 3], long] })
        await air.finish([remote])
    }
}
