import ATT
import BluetoothCore
import GATT
import Testing
import TestSupport

@Suite("GATT client: reads and writes")
struct GATTClientReadWriteTests {
    /// A server with one characteristic whose value is `value`; returns it and the value handle.
    static func server(mtu: Int, value: [UInt8]) -> (ClientTestServer, UInt16) {
        var server = ClientTestServer(mtu: mtu)
        server.service(BluetoothUUID(0x180D))
        let handle = server.characteristic(BluetoothUUID(0x2A37), properties: 0x0A, value: value)
        server.descriptor(BluetoothUUID(0x2902), value: [0, 0])
        server.finish()
        return (server, handle)
    }

    static func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) } }

    @Test("long reads return every value of 0 to 600 octets whole", arguments: [23, 185])
    func longReads(mtu: Int) throws {
        for blobEnd in [ClientTestBlobEnd.emptyPart, .invalidOffset, .attributeNotLong] {
            for length in 0...600 {
                let value = Self.pattern(length)
                var (server, handle) = Self.server(mtu: mtu, value: value)
                server.blobEnd = blobEnd
                var client = GATTClient(mtu: mtu)
                let (result, run) = runClientProcedure(.readLongCharacteristicValue(handle: handle), on: &client, &server)
                #expect(try result?.get() == .value(value), "length \(length), MTU \(mtu), \(blobEnd)")
                // One Read, then Read Blobs at multiples of ATT_MTU − 1 while the parts were full.
                let part = mtu - 1
                let expectedRequests = 1 + length / part
                #expect(run.requests.count == expectedRequests, "length \(length), MTU \(mtu)")
                for (index, request) in run.requests.enumerated() {
                    let expected: ATTPDU = index == 0
                        ? .readRequest(handle: handle)
                        : .readBlobRequest(handle: handle, offset: UInt16(index * part))
                    #expect(request == expected.encode())
                }
                expectClientIdle(client)
            }
        }
    }

    @Test("a plain read returns the first ATT_MTU − 1 octets; a long descriptor read reads it all")
    func readAndDescriptors() throws {
        var (server, handle) = Self.server(mtu: 23, value: Self.pattern(40))
        var client = GATTClient()
        let (short, run) = runClientProcedure(.readCharacteristicValue(handle: handle), on: &client, &server)
        #expect(try short?.get() == .value(Array(Self.pattern(40).prefix(22))))
        #expect(clientHexList(run.requests) == ["0a0300"])
        let descriptor = handle + 1
        _ = runClientProcedure(.writeLongDescriptor(handle: descriptor, value: Self.pattern(30)), on: &client, &server)
        let (long, _) = runClientProcedure(.readLongDescriptor(handle: descriptor), on: &client, &server)
        #expect(try long?.get() == .value(Self.pattern(30)))
        let (plain, _) = runClientProcedure(.readDescriptor(handle: descriptor), on: &client, &server)
        #expect(try plain?.get() == .value(Array(Self.pattern(30).prefix(22))))
        let (written, _) = runClientProcedure(.writeDescriptor(handle: descriptor, value: [1, 0]), on: &client, &server)
        #expect(try written?.get() == .written)
        #expect(server.value(at: descriptor) == [1, 0])
        expectClientIdle(client)
    }

    @Test("an Error Response fails the read with its code and handle")
    func readErrors() {
        var server = ClientTestServer(mtu: 23)
        server.service(BluetoothUUID(0x180D))
        let secret = server.characteristic(BluetoothUUID(0x2A37), value: [1], readable: false)
        server.finish()
        var client = GATTClient()
        let (denied, _) = runClientProcedure(.readCharacteristicValue(handle: secret), on: &client, &server)
        #expect(denied == .failure(.attError(.readNotPermitted, handle: secret)))
        let (missing, _) = runClientProcedure(.readLongCharacteristicValue(handle: 0x0099), on: &client, &server)
        #expect(missing == .failure(.attError(.invalidHandle, handle: 0x0099)))
        let (zero, zeroRun) = runClientProcedure(.readCharacteristicValue(handle: 0), on: &client, &server)
        guard case .failure(.invalidParameter)? = zero else {
            Issue.record("handle 0 must be refused before sending: \(String(describing: zero))")
            return
        }
        #expect(zeroRun.requests.isEmpty)
        expectClientIdle(client)
    }

    @Test("read by UUID, read multiple and read multiple variable")
    func readMany() throws {
        var server = ClientTestServer(mtu: 23)
        server.service(BluetoothUUID(0x180F))
        let first = server.characteristic(BluetoothUUID(0x2A19), value: [10])
        let second = server.characteristic(BluetoothUUID(0x2A19), value: [20])
        let third = server.characteristic(BluetoothUUID(0x2A1A), value: Self.pattern(30))
        server.finish()
        var client = GATTClient()
        let (byUUID, byUUIDRun) = runClientProcedure(.readUsingCharacteristicUUID(uuid: BluetoothUUID(0x2A19), range: .all), on: &client, &server)
        #expect(try byUUID?.get() == .handleValues([ATTHandleValue(handle: first, value: [10]), ATTHandleValue(handle: second, value: [20])]))
        #expect(clientHexList(byUUIDRun.requests) == ["080100ffff192a"])
        let (multiple, _) = runClientProcedure(.readMultipleCharacteristicValues(handles: [first, second]), on: &client, &server)
        #expect(try multiple?.get() == .value([10, 20]))
        let (variable, _) = runClientProcedure(.readMultipleVariableCharacteristicValues(handles: [first, third]), on: &client, &server)
        let tuples = try #require(ATTReadMultipleVariableResponse.packing([[10], Self.pattern(30)], mtu: 23)).tuples
        #expect(try variable?.get() == .lengthValues(tuples))
        #expect(tuples.last?.isTruncated == true)
        let (tooMany, _) = runClientProcedure(.readMultipleCharacteristicValues(handles: Array(1...12)), on: &client, &server)
        guard case .failure(.invalidParameter)? = tooMany else {
            Issue.record("12 handles do not fit a Read Multiple at MTU 23")
            return
        }
        let (tooFew, _) = runClientProcedure(.readMultipleVariableCharacteristicValues(handles: [first]), on: &client, &server)
        guard case .failure(.invalidParameter)? = tooFew else {
            Issue.record("one handle is not a read multiple")
            return
        }
        expectClientIdle(client)
    }

    @Test("write, write without response and subscriptions change the server's values")
    func writes() throws {
        var (server, handle) = Self.server(mtu: 23, value: [0])
        var client = GATTClient()
        let (written, run) = runClientProcedure(.writeCharacteristicValue(handle: handle, value: [1, 2, 3]), on: &client, &server)
        #expect(try written?.get() == .written)
        #expect(clientHexList(run.requests) == ["1203000102" + "03"])
        #expect(server.value(at: handle) == [1, 2, 3])
        let (command, commandRun) = runClientProcedure(.writeWithoutResponse(handle: handle, value: Self.pattern(20)), on: &client, &server)
        #expect(try command?.get() == .written)
        #expect(commandRun.requests.isEmpty)
        #expect(commandRun.commands == [ATTPDU.writeCommand(handle: handle, value: Self.pattern(20)).encode()])
        #expect(server.value(at: handle) == Self.pattern(20))
        let cccd = handle + 1
        _ = runClientProcedure(.subscribe(cccdHandle: cccd, configuration: .indications), on: &client, &server)
        #expect(server.value(at: cccd) == [2, 0])
        _ = runClientProcedure(.unsubscribe(cccdHandle: cccd), on: &client, &server)
        #expect(server.value(at: cccd) == [0, 0])
        let (tooLong, tooLongRun) = runClientProcedure(.writeCharacteristicValue(handle: handle, value: Self.pattern(21)), on: &client, &server)
        guard case .failure(.invalidParameter)? = tooLong else {
            Issue.record("21 octets do not fit a Write Request at MTU 23")
            return
        }
        #expect(tooLongRun.requests.isEmpty)
        let (tooLongCommand, _) = runClientProcedure(.writeWithoutResponse(handle: handle, value: Self.pattern(21)), on: &client, &server)
        guard case .failure(.invalidParameter)? = tooLongCommand else {
            Issue.record("21 octets do not fit a Write Command at MTU 23")
            return
        }
        expectClientIdle(client)
    }

    @Test("write long sends ATT_MTU − 5 octet parts at growing offsets, then Execute Write", arguments: [23, 185])
    func writeLong(mtu: Int) throws {
        for length in [0, 1, 17, 18, 19, 100, 179, 180, 181, 512] {
            var (server, handle) = Self.server(mtu: mtu, value: [0xEE])
            var client = GATTClient(mtu: mtu)
            let value = Self.pattern(length)
            let (result, run) = runClientProcedure(.writeLongCharacteristicValue(handle: handle, value: value), on: &client, &server)
            #expect(try result?.get() == .written)
            #expect(server.value(at: handle) == value, "length \(length)")
            let part = mtu - 5
            var expected: [[UInt8]] = []
            var offset = 0
            repeat {
                let chunk = Array(value[offset..<min(offset + part, length)])
                expected.append(ATTPDU.prepareWriteRequest(handle: handle, offset: UInt16(offset), partValue: chunk).encode())
                offset += part
            } while offset < length
            expected.append(hex("1801"))
            #expect(run.requests == expected, "length \(length), MTU \(mtu)")
            expectClientIdle(client)
        }
    }

    @Test("a wrong Prepare Write echo cancels with Execute Write 0x00 and fails", arguments: [0, 1, 3])
    func writeLongEchoMismatch(tamperedPart: Int) throws {
        var (server, handle) = Self.server(mtu: 23, value: [0xEE])
        server.tamperPrepareEchoAt = tamperedPart
        var client = GATTClient()
        let (result, run) = runClientProcedure(.writeLongCharacteristicValue(handle: handle, value: Self.pattern(80)), on: &client, &server)
        #expect(result == .failure(.prepareWriteEchoMismatch(handle: handle, offset: UInt16(tamperedPart * 18))))
        #expect(run.requests.count == tamperedPart + 2)
        #expect(run.requests.last == hex("1800"))
        #expect(server.value(at: handle) == [0xEE], "nothing written")
        #expect(server.prepared.isEmpty)
        expectClientIdle(client)
    }

    @Test("a refused part cancels the parts already queued; a refused first part needs no cancel")
    func writeLongRefused() throws {
        var (server, handle) = Self.server(mtu: 23, value: [0xEE])
        server.prepareQueueLimit = 2
        var client = GATTClient()
        let (result, run) = runClientProcedure(.writeLongCharacteristicValue(handle: handle, value: Self.pattern(80)), on: &client, &server)
        #expect(result == .failure(.attError(.prepareQueueFull, handle: handle)))
        #expect(run.requests.count == 4)
        #expect(run.requests.last == hex("1800"))
        #expect(server.value(at: handle) == [0xEE])
        let (missing, missingRun) = runClientProcedure(.writeLongCharacteristicValue(handle: 0x0077, value: Self.pattern(80)), on: &client, &server)
        #expect(missing == .failure(.attError(.invalidHandle, handle: 0x0077)))
        #expect(missingRun.requests.count == 1)
        expectClientIdle(client)
    }

    @Test("reliable writes prepare every value (split at ATT_MTU − 5), verify each echo, then execute")
    func reliableWrites() throws {
        var server = ClientTestServer(mtu: 23)
        server.service(BluetoothUUID(0x180D))
        let first = server.characteristic(BluetoothUUID(0x2A39), value: [0])
        let second = server.characteristic(BluetoothUUID(0x2A3A), value: [0])
        server.finish()
        var client = GATTClient()
        let items = [GATTReliableWriteItem(handle: first, value: [1, 2]), GATTReliableWriteItem(handle: second, value: Self.pattern(30))]
        let (result, run) = runClientProcedure(.reliableWrite(items), on: &client, &server)
        #expect(try result?.get() == .written)
        #expect(run.requests == [
            ATTPDU.prepareWriteRequest(handle: first, offset: 0, partValue: [1, 2]).encode(),
            ATTPDU.prepareWriteRequest(handle: second, offset: 0, partValue: Array(Self.pattern(30).prefix(18))).encode(),
            ATTPDU.prepareWriteRequest(handle: second, offset: 18, partValue: Array(Self.pattern(30).dropFirst(18))).encode(),
            hex("1801"),
        ])
        #expect(server.value(at: first) == [1, 2])
        #expect(server.value(at: second) == Self.pattern(30))

        server.tamperPrepareEchoAt = server.prepareCount + 1
        let (tampered, tamperedRun) = runClientProcedure(.reliableWrite([GATTReliableWriteItem(handle: first, value: [9]), GATTReliableWriteItem(handle: second, value: [9])]), on: &client, &server)
        #expect(tampered == .failure(.prepareWriteEchoMismatch(handle: second, offset: 0)))
        #expect(tamperedRun.requests.last == hex("1800"))
        #expect(server.value(at: first) == [1, 2], "all or nothing")
        let (empty, _) = runClientProcedure(.reliableWrite([]), on: &client, &server)
        guard case .failure(.invalidParameter)? = empty else {
            Issue.record("an empty reliable write is refused")
            return
        }
        expectClientIdle(client)
    }

    @Test("the MTU set after the exchange sizes the next requests")
    func mtuChange() throws {
        var (server, handle) = Self.server(mtu: 100, value: Self.pattern(150))
        var client = GATTClient()
        #expect(client.mtu == 23)
        client.mtu = 100
        let (result, run) = runClientProcedure(.readLongCharacteristicValue(handle: handle), on: &client, &server)
        #expect(try result?.get() == .value(Self.pattern(150)))
        #expect(clientHexList(run.requests) == ["0a0300", "0c03006300"])
        expectClientIdle(client)
    }
}
