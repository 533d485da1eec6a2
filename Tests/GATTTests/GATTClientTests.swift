import ATT
import BluetoothCore
import BluetoothRuntime
import GATT
import Testing
import TestSupport

/// The BlueZ exchange of spec-vectors.md §2.2 (unit/test-gatt.c SERVICE_DATA_1_PDUS): our discovery must send
/// exactly the client requests there, given exactly the server responses there.
@Suite("GATT client: exact bytes")
struct GATTClientExactBytesTests {
    @Test("discover all primary services sends BlueZ's requests and ends on Attribute Not Found")
    func bluezPrimaryServices() throws {
        var client = GATTClient()
        var script = ClientTestScript([
            ("100100ffff0028", "1106010004000118"),
            ("100500ffff0028", "1106050008000d18"),
            ("100900ffff0028", "011009000a"),
        ])
        let (result, _) = runClientProcedure(.discoverAllPrimaryServices, on: &client, &script)
        #expect(script.mismatches.isEmpty, "\(script.mismatches)")
        #expect(script.isFinished)
        let services = try #require(try result?.get())
        #expect(services == .services([
            GATTDiscoveredService(range: ATTHandleRange(start: 0x0001, end: 0x0004), uuid: BluetoothUUID(0x1801)),
            GATTDiscoveredService(range: ATTHandleRange(start: 0x0005, end: 0x0008), uuid: BluetoothUUID(0x180D)),
        ]))
        expectClientIdle(client)
    }

    @Test("includes, characteristics and descriptors of the BlueZ GATT service")
    func bluezServiceContents() throws {
        var client = GATTClient()
        let service = GATTDiscoveredService(range: ATTHandleRange(start: 0x0001, end: 0x0004), uuid: BluetoothUUID(0x1801))
        var script = ClientTestScript([
            ("08010004000228", "010801000a"),
            ("08010004000328", "09070200020300002a"),
            ("08030004000328", "010803000a"),
            ("0404000400", "050104000129"),
        ])
        let (includes, _) = runClientProcedure(.findIncludedServices(of: service), on: &client, &script)
        #expect(try includes?.get() == .includedServices([]))
        let (characteristics, _) = runClientProcedure(.discoverAllCharacteristics(of: service), on: &client, &script)
        let expected = GATTDiscoveredCharacteristic(
            declarationHandle: 0x0002, properties: .read, valueHandle: 0x0003, uuid: BluetoothUUID(0x2A00), endHandle: 0x0004)
        #expect(try characteristics?.get() == .characteristics([expected]))
        let (descriptors, _) = runClientProcedure(.discoverAllDescriptors(of: expected), on: &client, &script)
        #expect(try descriptors?.get() == .descriptors([GATTDiscoveredDescriptor(handle: 0x0004, uuid: BluetoothUUID(0x2901))]))
        #expect(script.mismatches.isEmpty, "\(script.mismatches)")
        #expect(script.isFinished)
        expectClientIdle(client)
    }

    @Test("BlueZ's 128-bit service and characteristic PDUs decode into the right results")
    func bluez128Bit() throws {
        var client = GATTClient()
        var script = ClientTestScript([
            ("100100ffff0028", "110610f018f00018ffffffff0a18"),
        ])
        let (result, _) = runClientProcedure(.discoverAllPrimaryServices, on: &client, &script)
        #expect(try result?.get() == .services([
            GATTDiscoveredService(range: ATTHandleRange(start: 0xF010, end: 0xF018), uuid: BluetoothUUID(0x1800)),
            GATTDiscoveredService(range: ATTHandleRange(start: 0xFFFF, end: 0xFFFF), uuid: BluetoothUUID(0x180A)),
        ]))
        var script128 = ClientTestScript([
            ("100100ffff0028", "111490009600efcdab8967452301000000000ca00000"),
            ("109700ffff0028", "011097000a"),
            // spec-vectors.md's BlueZ characteristic PDU `0915 14f0 82 15f0 ...` is one octet too long for its
            // Length 0x15 (24 octets for 23); this is the same declaration moved inside the service's range.
            ("08900096000328", "09159100829200efcdab8967452301000000000ca00000"),
            ("08920096000328", "010892000a"),
        ])
        let (services, _) = runClientProcedure(.discoverAllPrimaryServices, on: &client, &script128)
        let uuid = try BluetoothUUID(littleEndianBytes: hex("efcdab8967452301000000000ca00000"))
        let service = GATTDiscoveredService(range: ATTHandleRange(start: 0x0090, end: 0x0096), uuid: uuid)
        #expect(try services?.get() == .services([service]))
        let (characteristics, _) = runClientProcedure(.discoverAllCharacteristics(of: service), on: &client, &script128)
        #expect(try characteristics?.get() == .characteristics([
            GATTDiscoveredCharacteristic(declarationHandle: 0x0091, properties: [.read, .extendedProperties], valueHandle: 0x0092, uuid: uuid, endHandle: 0x0096),
        ]))
        #expect(script128.mismatches.isEmpty, "\(script128.mismatches)")
        #expect(script128.isFinished)
        expectClientIdle(client)
    }

    @Test("canonical request bytes of every single-request procedure")
    func canonicalRequests() {
        func firstAction(_ procedure: GATTProcedure) -> [String] {
            var client = GATTClient(signer: { _ in ATTAuthenticationSignature(bytes: Array(1...12)) })
            let (_, actions) = client.enqueue(procedure)
            return actions.compactMap {
                switch $0 {
                case .sendRequest(let pdu), .sendCommand(let pdu): return Hex.encode(pdu.encode())
                default: return nil
                }
            }
        }
        #expect(firstAction(.discoverPrimaryServices(uuid: BluetoothUUID(0x180D))) == ["060100ffff00280d18"])
        #expect(firstAction(.readCharacteristicValue(handle: 3)) == ["0a0300"])
        #expect(firstAction(.readDescriptor(handle: 3)) == ["0a0300"])
        #expect(firstAction(.readLongCharacteristicValue(handle: 3)) == ["0a0300"])
        #expect(firstAction(.readMultipleCharacteristicValues(handles: [3, 5])) == ["0e03000500"])
        #expect(firstAction(.readMultipleVariableCharacteristicValues(handles: [3, 5])) == ["2003000500"])
        #expect(firstAction(.writeCharacteristicValue(handle: 3, value: [0x01, 0x00])) == ["1203000100"])
        #expect(firstAction(.subscribe(cccdHandle: 3, configuration: .notifications)) == ["1203000100"])
        #expect(firstAction(.subscribe(cccdHandle: 3, configuration: .indications)) == ["1203000200"])
        #expect(firstAction(.subscribe(cccdHandle: 3, configuration: [.notifications, .indications])) == ["1203000300"])
        #expect(firstAction(.unsubscribe(cccdHandle: 3)) == ["1203000000"])
        #expect(firstAction(.writeWithoutResponse(handle: 3, value: [0x01, 0x02])) == ["5203000102"])
        #expect(firstAction(.signedWriteWithoutResponse(handle: 3, value: [0x01, 0x02])) == ["d203000102" + "0102030405060708090a0b0c"])
        #expect(firstAction(.writeLongCharacteristicValue(handle: 3, value: [1, 2, 3])) == ["1603000000010203"])
        #expect(firstAction(.readUsingCharacteristicUUID(uuid: BluetoothUUID(0x2A37), range: .all)) == ["080100ffff372a"])
        #expect(firstAction(.discoverAllDescriptors(range: ATTHandleRange(start: 4, end: 4))) == ["0404000400"])
    }

    @Test("a signed write passes opcode ‖ handle ‖ value to the signer; without one it fails")
    func signedWrite() {
        let seen = LockedValue<[UInt8]>([])
        var client = GATTClient(signer: { message in
            seen.withLock { $0 = message }
            return ATTAuthenticationSignature(signCounter: 7, mac: [0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7])
        })
        let (id, actions) = client.enqueue(.signedWriteWithoutResponse(handle: 0x0010, value: [0xCA, 0xFE]))
        #expect(seen.withLock { $0 } == [0xD2, 0x10, 0x00, 0xCA, 0xFE])
        #expect(actions == [
            .sendCommand(.signedWriteCommand(handle: 0x10, value: [0xCA, 0xFE], signature: ATTAuthenticationSignature(bytes: hex("07000000a0a1a2a3a4a5a6a7"))!)),
            .complete(id, .success(.written)),
        ])
        var unsigned = GATTClient()
        let (other, refused) = unsigned.enqueue(.signedWriteWithoutResponse(handle: 0x0010, value: [1]))
        #expect(refused == [.complete(other, .failure(.signingUnavailable))])
        var tooLong = GATTClient(signer: { _ in nil })
        let (third, longActions) = tooLong.enqueue(.signedWriteWithoutResponse(handle: 0x0010, value: Array(repeating: 0, count: 9)))
        guard case .complete(third, .failure(.invalidParameter))? = longActions.first else {
            Issue.record("a 9-octet signed write at MTU 23 must be refused: \(longActions)")
            return
        }
        expectClientIdle(client)
        expectClientIdle(unsigned)
        expectClientIdle(tooLong)
    }
}


/// Discovery against the in-test attribute server.
@Suite("GATT client: discovery")
struct GATTClientDiscoveryTests {
    static let custom = (try? BluetoothUUID(string: "0CDBE648-EED0-11E6-BC64-92361F002671")) ?? BluetoothUUID(0)
    static let customCharacteristic = (try? BluetoothUUID(string: "0CDBE649-EED0-11E6-BC64-92361F002671")) ?? BluetoothUUID(0)

    /// GAP (1 char), a 128-bit secondary service, Heart Rate including both, Battery with two characteristics.
    static func database(mtu: Int) -> ClientTestServer {
        var server = ClientTestServer(mtu: mtu)
        server.service(BluetoothUUID(0x1800))
        server.characteristic(BluetoothUUID(0x2A00), properties: 0x02, value: Array("Device".utf8))
        let secondary = server.service(custom, primary: false)
        server.characteristic(customCharacteristic, properties: 0x12, value: [1, 2, 3])
        server.descriptor(BluetoothUUID(0x2902), value: [0, 0])
        let battery16 = server.service(BluetoothUUID(0x180F), primary: false)
        server.characteristic(BluetoothUUID(0x2A19), properties: 0x02, value: [99])
        server.service(BluetoothUUID(0x180D))
        server.include(secondary)
        server.include(battery16)
        server.characteristic(BluetoothUUID(0x2A37), properties: 0x10, value: [0, 72])
        server.descriptor(BluetoothUUID(0x2902), value: [0, 0])
        server.descriptor(BluetoothUUID(0x2901), value: Array("Heart".utf8))
        server.characteristic(BluetoothUUID(0x2A38), properties: 0x02, value: [1])
        server.service(custom)
        server.characteristic(customCharacteristic, properties: 0x0A, value: [7])
        server.characteristic(BluetoothUUID(0x2A19), properties: 0x02, value: [50])
        server.finish()
        return server
    }

    @Test("every discovery procedure finds the whole database", arguments: [23, 185])
    func fullDiscovery(mtu: Int) throws {
        var server = Self.database(mtu: mtu)
        var client = GATTClient(mtu: mtu)
        let (servicesResult, _) = runClientProcedure(.discoverAllPrimaryServices, on: &client, &server)
        guard case .services(let services) = try #require(try servicesResult?.get()) else {
            Issue.record("no services")
            return
        }
        #expect(services.map(\.uuid) == [BluetoothUUID(0x1800), BluetoothUUID(0x180D), Self.custom])
        #expect(services.map(\.range) == [
            ATTHandleRange(start: 1, end: 3), ATTHandleRange(start: 11, end: 19), ATTHandleRange(start: 20, end: 24),
        ])

        let heartRate = services[1]
        let (includesResult, _) = runClientProcedure(.findIncludedServices(of: heartRate), on: &client, &server)
        #expect(try includesResult?.get() == .includedServices([
            GATTDiscoveredIncludedService(declarationHandle: 12, service: GATTDiscoveredService(range: ATTHandleRange(start: 4, end: 7), uuid: Self.custom)),
            GATTDiscoveredIncludedService(declarationHandle: 13, service: GATTDiscoveredService(range: ATTHandleRange(start: 8, end: 10), uuid: BluetoothUUID(0x180F))),
        ]))

        let (characteristicsResult, _) = runClientProcedure(.discoverAllCharacteristics(of: heartRate), on: &client, &server)
        let measurement = GATTDiscoveredCharacteristic(declarationHandle: 14, properties: .notify, valueHandle: 15, uuid: BluetoothUUID(0x2A37), endHandle: 17)
        let location = GATTDiscoveredCharacteristic(declarationHandle: 18, properties: .read, valueHandle: 19, uuid: BluetoothUUID(0x2A38), endHandle: 19)
        #expect(try characteristicsResult?.get() == .characteristics([measurement, location]))

        let (descriptorsResult, _) = runClientProcedure(.discoverAllDescriptors(of: measurement), on: &client, &server)
        #expect(try descriptorsResult?.get() == .descriptors([
            GATTDiscoveredDescriptor(handle: 16, uuid: BluetoothUUID(0x2902)),
            GATTDiscoveredDescriptor(handle: 17, uuid: BluetoothUUID(0x2901)),
        ]))
        let requestsBefore = server.requests.count
        let (none, _) = runClientProcedure(.discoverAllDescriptors(range: ATTHandleRange(start: 3, end: 2)), on: &client, &server)
        #expect(try none?.get() == .descriptors([]))
        #expect(server.requests.count == requestsBefore, "an empty range needs no request")

        let (byUUID, _) = runClientProcedure(.discoverCharacteristics(range: services[2].range, uuid: BluetoothUUID(0x2A19)), on: &client, &server)
        #expect(try byUUID?.get() == .characteristics([
            GATTDiscoveredCharacteristic(declarationHandle: 23, properties: .read, valueHandle: 24, uuid: BluetoothUUID(0x2A19), endHandle: 24),
        ]))
        let (customChars, _) = runClientProcedure(.discoverAllCharacteristics(of: services[2]), on: &client, &server)
        #expect(try customChars?.get() == .characteristics([
            GATTDiscoveredCharacteristic(declarationHandle: 21, properties: [.read, .write], valueHandle: 22, uuid: Self.customCharacteristic, endHandle: 22),
            GATTDiscoveredCharacteristic(declarationHandle: 23, properties: .read, valueHandle: 24, uuid: BluetoothUUID(0x2A19), endHandle: 24),
        ]))

        let (byServiceUUID, byServiceRun) = runClientProcedure(.discoverPrimaryServices(uuid: Self.custom), on: &client, &server)
        #expect(try byServiceUUID?.get() == .services([GATTDiscoveredService(range: ATTHandleRange(start: 20, end: 24), uuid: Self.custom)]))
        #expect(clientHexList(byServiceRun.requests) == [
            "060100ffff0028" + Hex.encode(Self.custom.littleEndianBytes128),
            "061900ffff0028" + Hex.encode(Self.custom.littleEndianBytes128),
        ])
        expectClientIdle(client)
    }

    @Test("a database at the top of the handle space: no wrap-around, no request past 0xFFFF")
    func topOfHandleSpace() throws {
        var server = ClientTestServer(mtu: 23)
        server.firstHandle = 0xFFFA
        server.service(BluetoothUUID(0x180F))
        server.characteristic(BluetoothUUID(0x2A19), properties: 0x02, value: [50])
        server.descriptor(BluetoothUUID(0x2901), value: [])
        server.characteristic(BluetoothUUID(0x2A1A), properties: 0x02, value: [1])
        server.finish()
        var client = GATTClient()
        let (services, servicesRun) = runClientProcedure(.discoverAllPrimaryServices, on: &client, &server)
        let service = GATTDiscoveredService(range: ATTHandleRange(start: 0xFFFA, end: 0xFFFF), uuid: BluetoothUUID(0x180F))
        #expect(try services?.get() == .services([service]))
        #expect(clientHexList(servicesRun.requests) == ["100100ffff0028"], "a group ending at 0xFFFF ends discovery")
        let (byUUID, byUUIDRun) = runClientProcedure(.discoverPrimaryServices(uuid: BluetoothUUID(0x180F)), on: &client, &server)
        #expect(try byUUID?.get() == .services([service]))
        #expect(byUUIDRun.requests.count == 1)
        let (characteristicsResult, characteristicsRun) = runClientProcedure(.discoverAllCharacteristics(of: service), on: &client, &server)
        let battery = GATTDiscoveredCharacteristic(declarationHandle: 0xFFFB, properties: .read, valueHandle: 0xFFFC, uuid: BluetoothUUID(0x2A19), endHandle: 0xFFFD)
        let last = GATTDiscoveredCharacteristic(declarationHandle: 0xFFFE, properties: .read, valueHandle: 0xFFFF, uuid: BluetoothUUID(0x2A1A), endHandle: 0xFFFF)
        #expect(try characteristicsResult?.get() == .characteristics([battery, last]))
        #expect(clientHexList(characteristicsRun.requests) == ["08faffffff0328", "08ffffffff0328"])
        let (descriptors, descriptorsRun) = runClientProcedure(.discoverAllDescriptors(of: battery), on: &client, &server)
        #expect(try descriptors?.get() == .descriptors([GATTDiscoveredDescriptor(handle: 0xFFFD, uuid: BluetoothUUID(0x2901))]))
        #expect(clientHexList(descriptorsRun.requests) == ["04fdfffdff"])
        let (none, noneRun) = runClientProcedure(.discoverAllDescriptors(of: last), on: &client, &server)
        #expect(try none?.get() == .descriptors([]))
        #expect(noneRun.requests.isEmpty, "the value handle 0xFFFF leaves no room for descriptors")
        expectClientIdle(client)
    }

    @Test("discovery requests continue exactly after the last handle of each response")
    func continuationHandles() {
        var server = Self.database(mtu: 23)
        var client = GATTClient()
        let (_, run) = runClientProcedure(.discoverAllPrimaryServices, on: &client, &server)
        // MTU 23: two 16-bit services fit in the first response, the 128-bit one comes alone.
        #expect(clientHexList(run.requests) == ["100100ffff0028", "101400ffff0028", "101900ffff0028"])
        let (_, characteristics) = runClientProcedure(.discoverAllCharacteristics(range: ATTHandleRange(start: 11, end: 19)), on: &client, &server)
        #expect(clientHexList(characteristics.requests) == ["080b0013000328", "08130013000328"])
        let (_, includes) = runClientProcedure(.findIncludedServices(range: ATTHandleRange(start: 11, end: 19)), on: &client, &server)
        // The 128-bit include comes alone (4-octet value), its UUID read from the declaration at 0x0004.
        #expect(clientHexList(includes.requests) == ["080b0013000228", "0a0400", "080d0013000228", "080e0013000228"])
        expectClientIdle(client)
    }
}
