import ATT
import BluetoothCore
import BluetoothRuntime
import GATT
import Testing
import TestSupport

private let connection = GATTConnectionID(1)

private func serverRead(_ server: inout GATTServer, _ text: String, from id: GATTConnectionID = connection) -> String {
    guard let pdu = try? ATTPDU(decoding: hex(text)) else { return "undecodable request" }
    return Hex.encode(server.handleRequest(pdu, from: id).response.encode())
}

private func le16(_ value: UInt16) -> String { Hex.encode([UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]) }

@Suite("GATT server permissions")
struct GATTServerPermissionTests {
    static let requirements: [(String, GATTPermissions)] = [
        ("none", .readWrite),
        ("encryption", GATTPermissions(readable: true, writable: true, read: .encrypted, write: .encrypted)),
        ("authentication", GATTPermissions(readable: true, writable: true, read: .authenticated, write: .authenticated)),
        ("authorization", GATTPermissions(readable: true, writable: true, read: .authorized, write: .authorized)),
        ("key size 16", GATTPermissions(readable: true, writable: true,
                                        read: GATTSecurityRequirement(encryption: true, minimumKeySize: 16),
                                        write: GATTSecurityRequirement(encryption: true, minimumKeySize: 16))),
        ("not permitted", GATTPermissions.none),
    ]
    static let links: [(String, GATTLinkSecurity)] = [
        ("open", .open),
        ("encrypted 16", GATTLinkSecurity(encrypted: true, keySize: 16)),
        ("encrypted 7", GATTLinkSecurity(encrypted: true, keySize: 7)),
        ("authenticated 16", GATTLinkSecurity(encrypted: true, authenticated: true, keySize: 16)),
        ("authorized, open", GATTLinkSecurity(authorized: true)),
    ]
    /// Expected error per requirement (rows) and link (columns); nil = allowed. The last row differs for read
    /// (0x02) and write (0x03).
    static let expected: [[UInt8?]] = [
        [nil, nil, nil, nil, nil],
        [0x0F, nil, nil, nil, 0x0F],
        [0x05, 0x05, 0x05, nil, 0x05],
        [0x08, 0x08, 0x08, 0x08, nil],
        [0x0F, nil, 0x0C, nil, 0x0F],
        [0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
    ]

    static func database() throws -> GATTDatabase {
        var database = GATTDatabase()
        try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: requirements.enumerated().map { index, entry in
            GATTCharacteristicDefinition(uuid: BluetoothUUID(UInt16(0xFFF1 + index)), properties: [.read, .write],
                                         permissions: entry.1, value: .stored([0xAB]))
        }))
        return database
    }

    @Test("security state × permission → exact error, for reads, writes, prepared writes and read by type")
    func matrix() throws {
        let database = try Self.database()
        for (column, link) in Self.links.enumerated() {
            var server = GATTServer(database: database)
            server.connect(connection, security: link.1)
            for (row, requirement) in Self.requirements.enumerated() {
                let handle = UInt16(3 + 2 * row)
                let h = le16(handle)
                let label = "\(requirement.0) on \(link.0)"
                let code = Self.expected[row][column]
                let readCode = code == 0xFF ? 0x02 : code
                let writeCode = code == 0xFF ? 0x03 : code
                let read = serverRead(&server, "0a" + h)
                #expect(read == (readCode.map { "010a" + h + Hex.encode([$0]) } ?? "0bab"), "\(label): read")
                let byType = serverRead(&server, "08" + h + h + le16(UInt16(0xFFF1 + row)))
                #expect(byType == (readCode.map { "0108" + h + Hex.encode([$0]) } ?? "0903" + h + "ab"), "\(label): read by type")
                let write = serverRead(&server, "12" + h + "cd")
                #expect(write == (writeCode.map { "0112" + h + Hex.encode([$0]) } ?? "13"), "\(label): write")
                let prepare = serverRead(&server, "16" + h + "0000" + "ef")
                #expect(prepare == (writeCode.map { "0116" + h + Hex.encode([$0]) } ?? "17" + h + "0000ef"), "\(label): prepare")
                _ = serverRead(&server, "1800")
            }
            #expect(server.pendingPreparedWriteCount == 0)
        }
    }

    @Test("a dynamic handler can answer authorization or an application error")
    func handlerErrors() throws {
        var database = GATTDatabase()
        let service = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .write], value: .dynamic(
                read: { request in request.security.authorized ? request.answer(wholeValue: [1, 2, 3]) : .failure(GATTAttributeError(.insufficientAuthorization)) },
                write: { request in request.value == [0] ? ATTErrorCode(0x80) : nil })),
        ]))
        let value = try #require(service.characteristics.first?.value)
        var server = GATTServer(database: database)
        server.connect(connection)
        #expect(serverRead(&server, "0a" + le16(value)) == "010a" + le16(value) + "08")
        server.setSecurity(GATTLinkSecurity(authorized: true), for: connection)
        #expect(serverRead(&server, "0a" + le16(value)) == "0b010203")
        #expect(serverRead(&server, "0c" + le16(value) + "0200") == "0d03")
        #expect(serverRead(&server, "0c" + le16(value) + "0400") == "010c" + le16(value) + "07")
        #expect(serverRead(&server, "12" + le16(value) + "00") == "0112" + le16(value) + "80")
        #expect(serverRead(&server, "12" + le16(value) + "01") == "13")
    }
}

@Suite("GATT server prepared writes")
struct GATTServerPreparedWriteTests {
    static func setUp() throws -> (GATTServer, GATTServiceHandles) {
        var database = GATTDatabase()
        let service = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .write], extendedProperties: .reliableWrite, value: .stored([1, 2, 3])),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF2), properties: [.read, .write], value: .stored([4, 5]), maximumLength: 4),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF3), properties: [.read, .write], value: .stored([])),
        ]))
        var server = GATTServer(database: database, maximumPreparedWrites: 4)
        server.connect(connection)
        return (server, service)
    }

    @Test("a long write across parts builds the whole value; reliable write of two characteristics")
    func longWrite() throws {
        var (server, service) = try Self.setUp()
        let a = le16(service.characteristics[0].value), b = le16(service.characteristics[1].value)
        let value = Array(0..<40).map { UInt8($0) }
        for offset in stride(from: 0, to: 40, by: 18) {
            let part = Array(value[offset..<min(offset + 18, 40)])
            let request = "16" + a + le16(UInt16(offset)) + Hex.encode(part)
            #expect(serverRead(&server, request) == "17" + request.dropFirst(2))
        }
        #expect(serverRead(&server, "16" + b + "0000" + "0909") == "17" + b + "00000909")
        #expect(server.pendingPreparedWriteCount == 4)
        let reply = server.handleRequest(.executeWriteRequest(flags: .write), from: connection)
        #expect(reply.response == .executeWriteResponse)
        #expect(reply.events == [
            .valueWritten(connection: connection, handle: service.characteristics[0].value, value: value),
            .valueWritten(connection: connection, handle: service.characteristics[1].value, value: [9, 9]),
        ])
        #expect(server.database.attribute(service.characteristics[0].value)?.storedValue == value)
        #expect(server.pendingPreparedWriteCount == 0)
        // Queue full at 4 entries.
        for _ in 0..<4 { _ = serverRead(&server, "16" + b + "0000" + "01") }
        #expect(serverRead(&server, "16" + b + "0000" + "01") == "0116" + b + "09")
        #expect(serverRead(&server, "1800") == "19")
        #expect(server.database.attribute(service.characteristics[1].value)?.storedValue == [9, 9])
        // Execute with nothing queued.
        #expect(serverRead(&server, "1801") == "19")
    }

    @Test("one bad entry and nothing is applied: invalid offset, too long")
    func atomicity() throws {
        var (server, service) = try Self.setUp()
        let a = le16(service.characteristics[0].value), b = le16(service.characteristics[1].value)
        // Good write to a, then a write to b at an offset past its value.
        _ = serverRead(&server, "16" + a + "0000" + "aaaa")
        _ = serverRead(&server, "16" + b + "0300" + "01")
        #expect(serverRead(&server, "1801") == "0118" + b + "07")
        #expect(server.database.attribute(service.characteristics[0].value)?.storedValue == [1, 2, 3])
        #expect(server.pendingPreparedWriteCount == 0)
        // Too long for b (maximum 4).
        _ = serverRead(&server, "16" + a + "0000" + "aaaa")
        _ = serverRead(&server, "16" + b + "0000" + "0102030405")
        #expect(serverRead(&server, "1801") == "0118" + b + "0d")
        #expect(server.database.attribute(service.characteristics[0].value)?.storedValue == [1, 2, 3])
        // Over 512 octets in total for a (parts of 100).
        for index in 0..<4 { _ = serverRead(&server, "16" + a + le16(UInt16(index * 130)) + String(repeating: "11", count: 130)) }
        #expect(serverRead(&server, "1801") == "0118" + a + "0d")
        #expect(server.database.attribute(service.characteristics[0].value)?.storedValue == [1, 2, 3])
        // Cancel clears a pending write.
        _ = serverRead(&server, "16" + a + "0000" + "aaaa")
        #expect(serverRead(&server, "1800") == "19")
        #expect(serverRead(&server, "1801") == "19")
        #expect(server.database.attribute(service.characteristics[0].value)?.storedValue == [1, 2, 3])
    }

    @Test("dynamic handlers see validation before any application")
    func dynamicValidation() throws {
        let log = LockedValue<[String]>([])
        var database = GATTDatabase()
        let service = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .write], value: .dynamic(read: nil, write: { request in
                log.withLock { $0.append("\(request.kind.rawValue) \(request.offset) \(Hex.encode(request.value))") }
                return request.value.first == 0xEE ? .valueNotAllowed : nil
            })),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF2), properties: [.read, .write], value: .stored([])),
        ]))
        var server = GATTServer(database: database)
        let d = le16(service.characteristics[0].value), s = le16(service.characteristics[1].value)
        _ = serverRead(&server, "16" + s + "0000" + "01")
        _ = serverRead(&server, "16" + d + "0000" + "0102")
        _ = serverRead(&server, "16" + d + "0200" + "03")
        #expect(serverRead(&server, "1801") == "19")
        #expect(log.withLock { $0 } == ["preparedValidation 0 010203", "prepared 0 010203"])
        #expect(server.database.attribute(service.characteristics[1].value)?.storedValue == [1])
        log.withLock { $0 = [] }
        _ = serverRead(&server, "16" + s + "0000" + "02")
        _ = serverRead(&server, "16" + d + "0000" + "ee")
        #expect(serverRead(&server, "1801") == "0118" + d + "13")
        #expect(log.withLock { $0 } == ["preparedValidation 0 ee"])
        #expect(server.database.attribute(service.characteristics[1].value)?.storedValue == [1])
    }
}

@Suite("GATT server reads, discovery, notifications")
struct GATTServerReadTests {
    @Test("long reads: Read then Read Blob at every offset, Invalid Offset past the end, Attribute Not Long for declarations")
    func longReads() throws {
        var database = GATTDatabase()
        let value = Array(0..<100).map { UInt8($0) }
        let service = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: .read, value: .stored(value)),
        ]))
        var server = GATTServer(database: database)
        let h = le16(service.characteristics[0].value)
        #expect(serverRead(&server, "0a" + h) == "0b" + Hex.encode(value.prefix(22)))
        #expect(serverRead(&server, "0c" + h + "1600") == "0d" + Hex.encode(value[22..<44]))
        #expect(serverRead(&server, "0c" + h + "5a00") == "0d" + Hex.encode(value[90...]))
        #expect(serverRead(&server, "0c" + h + "6400") == "0d")
        #expect(serverRead(&server, "0c" + h + "6500") == "010c" + h + "07")
        #expect(serverRead(&server, "0c" + "0200" + "0100") == "010c02000b")
        #expect(serverRead(&server, "0c" + "0900" + "0000") == "010c090001")
    }

    @Test("Read By Type packs same-length elements up to the MTU and stops at a different length; 128-bit UUIDs")
    func readByTypePacking() throws {
        var database = GATTDatabase()
        let wide = try BluetoothUUID(string: "0CDBE648-EED0-11E6-BC64-92361F002671")
        try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: .read, value: .stored([1])),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF2), properties: [.read, .notify], value: .stored([2])),
            GATTCharacteristicDefinition(uuid: wide, properties: [.read, .writeWithoutResponse], value: .stored([3])),
        ]))
        var server = GATTServer(database: database)
        // Handles: 1 service, 2/3 FFF1, 4/5 FFF2, 6 CCCD, 7/8 wide.
        #expect(serverRead(&server, "08" + "0100ffff" + "0328") == "0907" + "0200" + "020300f1ff" + "0400" + "120500f2ff")
        #expect(serverRead(&server, "08" + "0700ffff" + "0328") == "0915" + "0700" + "060800" + Hex.encode(wide.littleEndianBytes128))
        #expect(serverRead(&server, "04" + "0700ffff") == "0501" + "07000328")
        #expect(serverRead(&server, "04" + "0800ffff") == "0502" + "0800" + Hex.encode(wide.littleEndianBytes128))
        #expect(serverRead(&server, "10" + "0100ffff" + "0028") == "1106" + "01000800f0ff")
    }

    @Test("notifications and indications follow each client's CCCD, cut to ATT_MTU − 3")
    func cccdPerClient() throws {
        var database = GATTDatabase()
        try database.addGAPService(deviceName: "Swift", appearance: 0x0340)
        let gatt = try database.addGATTService(serviceChanged: true, clientSupportedFeatures: true)
        let service = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0x180D), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0x2A37), properties: [.notify, .indicate], value: .stored([0])),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0x2A38), properties: [.read, .notify], value: .stored([1])),
        ]))
        let harness = GATTServerTestHarness(database: database)
        let second = GATTConnectionID(2)
        harness.connect(second)
        let measurement = service.characteristics[0], location = service.characteristics[1]
        let cccd = try #require(measurement.clientConfiguration)
        #expect(harness.exchange("12" + le16(cccd) + "0100") == ["13"])
        #expect(harness.exchange("12" + le16(cccd) + "0200", on: second) == ["13"])
        #expect(harness.exchange("0a" + le16(cccd)) == ["0b0100"])
        #expect(harness.exchange("0a" + le16(cccd), on: second) == ["0b0200"])
        let long = Array(repeating: UInt8(0x5A), count: 30)
        harness.push(harness.server.updateValue(long, handle: measurement.value))
        #expect(harness.takeSent() == ["1b" + le16(measurement.value) + String(repeating: "5a", count: 20)])
        #expect(harness.takeSent(second) == ["1d" + le16(measurement.value) + String(repeating: "5a", count: 20)])
        // A second indication waits for the confirmation of the first.
        harness.push(harness.server.notify(handle: measurement.value, value: [7]))
        #expect(harness.takeSent(second).isEmpty)
        harness.receive([0x1E], on: second)
        #expect(harness.takeSent(second) == ["1d" + le16(measurement.value) + "07"])
        _ = harness.takeSent()
        harness.receive([0x1E], on: second)
        // Nobody subscribed to the location: nothing to send.
        #expect(harness.server.notify(handle: location.value, value: [1]).isEmpty)
        // Service Changed: only to clients that enabled its indications.
        let serviceChanged = try #require(gatt.characteristic(GATTUUID.serviceChanged))
        let serviceChangedCCCD = try #require(serviceChanged.clientConfiguration)
        #expect(harness.exchange("12" + le16(serviceChangedCCCD) + "0200", on: second) == ["13"])
        harness.push(harness.server.serviceChanged(ATTHandleRange(start: service.start, end: service.end)))
        #expect(harness.takeSent().isEmpty)
        #expect(harness.takeSent(second) == ["1d" + le16(serviceChanged.value) + le16(service.start) + le16(service.end)])
        // Service Changed is not readable.
        #expect(harness.exchange("0a" + le16(serviceChanged.value)) == ["010a" + le16(serviceChanged.value) + "02"])
        // Multiple Handle Value Notification only after the client sets bit 2 of Client Supported Features.
        let features = try #require(gatt.characteristic(GATTUUID.clientSupportedFeatures))
        #expect(harness.exchange("12" + le16(location.clientConfiguration ?? 0) + "0100") == ["13"])
        #expect(harness.server.multipleNotification([(measurement.value, [1]), (location.value, [2, 3])], to: GATTConnectionID(1)) == nil)
        #expect(harness.exchange("12" + le16(features.value) + "04") == ["13"])
        let multiple = harness.server.multipleNotification([(measurement.value, [1]), (location.value, [2, 3])], to: GATTConnectionID(1))
        harness.push(multiple.map { [$0] } ?? [])
        #expect(harness.takeSent() == ["23" + le16(measurement.value) + "010001" + le16(location.value) + "02000203"])
        // Confirmation timeout ends the bearer of the second connection only.
        harness.push(harness.server.notify(handle: measurement.value, value: [9]))
        _ = harness.takeSent()
        _ = harness.takeSent(second)
        harness.loop.advance(by: .seconds(30))
        #expect(harness.bearerFailures.last == .disconnectLink(.confirmationTimeout))
        #expect(harness.bearers[second]?.isOpen == false)
        #expect(harness.bearers[GATTConnectionID(1)]?.isOpen == true)
        harness.server.disconnect(second)
        harness.expectClean()
    }

    @Test("signed writes go through the verification hook")
    func signedWrite() throws {
        var database = GATTDatabase()
        let service = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .authenticatedSignedWrites], value: .stored([])),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF2), properties: [.read, .writeWithoutResponse], value: .stored([])),
        ]))
        let seen = LockedValue<[[UInt8]]>([])
        var server = GATTServer(database: database, signatureVerifier: { _, message, signature in
            seen.withLock { $0.append(message) }
            return signature.signCounter == 1 ? .accepted : .rejected(.replayedCounter)
        })
        let handle = service.characteristics[0].value
        let good = try #require(ATTAuthenticationSignature(signCounter: 1, mac: [1, 2, 3, 4, 5, 6, 7, 8]))
        let bad = try #require(ATTAuthenticationSignature(signCounter: 2, mac: [1, 2, 3, 4, 5, 6, 7, 8]))
        #expect(server.handleCommand(.signedWriteCommand(handle: handle, value: [0xAB], signature: bad), from: connection)
                == [.signedWriteRejected(connection: connection, handle: handle, reason: .replayedCounter)])
        #expect(server.handleCommand(.signedWriteCommand(handle: handle, value: [0xAB], signature: good), from: connection)
                == [.valueWritten(connection: connection, handle: handle, value: [0xAB])])
        #expect(seen.withLock { $0 } == [[0xD2] + hex(le16(handle)) + [0xAB], [0xD2] + hex(le16(handle)) + [0xAB]])
        // Not allowed by the characteristic's properties.
        let other = service.characteristics[1].value
        #expect(server.handleCommand(.signedWriteCommand(handle: other, value: [1], signature: good), from: connection)
                == [.signedWriteRejected(connection: connection, handle: other, reason: .notPermitted)])
        #expect(server.handleCommand(.signedWriteCommand(handle: 0, value: [1], signature: good), from: connection)
                == [.signedWriteRejected(connection: connection, handle: 0, reason: .notPermitted)])
        // The verifier's reason passes through; a Boolean verifier's false is a bad signature.
        server.signatureVerifier = { _, _, _ in false }
        #expect(server.handleCommand(.signedWriteCommand(handle: handle, value: [0xEE], signature: good), from: connection)
                == [.signedWriteRejected(connection: connection, handle: handle, reason: .badSignature)])
        // A good signature whose value is too long for the attribute: the write is refused with the ATT error.
        server.signatureVerifier = { _, _, _ in true }
        #expect(server.handleCommand(.signedWriteCommand(handle: handle, value: [UInt8](repeating: 1, count: 600), signature: good), from: connection)
                == [.signedWriteRejected(connection: connection, handle: handle, reason: .writeRefused(.invalidAttributeValueLength))])
        // No verifier on an unencrypted link.
        server.signatureVerifier = nil
        #expect(server.handleCommand(.signedWriteCommand(handle: handle, value: [0xEF], signature: good), from: connection)
                == [.signedWriteRejected(connection: connection, handle: handle, reason: .noVerifier)])
        // Encrypted: the signature is not checked (Vol 3 Part C §10.4.2), the write applies.
        server.setSecurity(GATTLinkSecurity(encrypted: true, authenticated: false, keySize: 16, authorized: false), for: connection)
        #expect(server.handleCommand(.signedWriteCommand(handle: handle, value: [0xF0], signature: bad), from: connection)
                == [.valueWritten(connection: connection, handle: handle, value: [0xF0])])
        // Write Command: silent either way.
        #expect(server.handleCommand(.writeCommand(handle: other, value: [1]), from: connection) == [.valueWritten(connection: connection, handle: other, value: [1])])
        #expect(server.handleCommand(.writeCommand(handle: 0x0999, value: [1]), from: connection).isEmpty)
    }

    @Test("included and secondary services, extended properties, user description, presentation format")
    func structure() throws {
        var database = GATTDatabase()
        let secondary = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xAAAA), isPrimary: false, characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xAAA1), properties: .read, value: .stored([1])),
        ]))
        let primary = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xBBBB), includes: [secondary], characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0x2A6E), properties: [.read, .write], extendedProperties: [.reliableWrite, .writableAuxiliaries],
                                         value: .stored([0x10, 0x09]),
                                         descriptors: [.userDescription("Temperature", writable: true), .presentationFormat(GATTPresentationFormat(format: 0x0E, exponent: -2, unit: 0x272F))]),
        ]))
        // 1 secondary, 2/3 AAA1, 4 primary, 5 include, 6/7 2A6E, 8 ext props, 9 user description, 10 format.
        #expect(primary.start == 4 && primary.end == 10)
        var server = GATTServer(database: database)
        #expect(serverRead(&server, "10" + "0100ffff" + "0128") == "1106" + "01000300aaaa")
        #expect(serverRead(&server, "08" + "0400ffff" + "0228") == "0908" + "0500" + "01000300aaaa")
        #expect(serverRead(&server, "08" + "0400ffff" + "0328") == "0907" + "0600" + "8a0700" + "6e2a")
        #expect(serverRead(&server, "04" + "0800" + "0a00") == "0501" + "08000029" + "09000129" + "0a000429")
        #expect(serverRead(&server, "0a0800") == "0b0300")
        #expect(serverRead(&server, "0a0900") == "0b" + Hex.encode(Array("Temperature".utf8)))
        #expect(serverRead(&server, "0a0a00") == "0b" + "0efe2f27010000")
        #expect(serverRead(&server, "12" + "0900" + Hex.encode(Array("Temp".utf8))) == "13")
        #expect(serverRead(&server, "0a0900") == "0b" + Hex.encode(Array("Temp".utf8)))
        #expect(serverRead(&server, "06" + "0100ffff" + "0028" + "bbbb") == "07" + "04000a00")
        #expect(serverRead(&server, "06" + "0100ffff" + "0028" + "cccc") == "01060100" + "0a")
    }
}
