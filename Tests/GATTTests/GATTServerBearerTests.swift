import ATT
import BluetoothCore
import GATT
import Testing
import TestSupport

/// The GATT server over several ATT bearers of one connection (Core 5.4 Vol 3 Part F §3.2.11, Part G §7.2,
/// §7.4): responses sized per bearer, deferred requests per bearer, notifications on the first Enhanced ATT
/// bearer, CCCDs and Client Supported Features shared by the connection; the Server Supported Features
/// characteristic.
@Suite struct GATTServerBearerTests {
    static let connection = GATTConnectionID(0x0040)
    static let eatt = GATTBearerID(0x0041)

    static func database() throws -> (GATTDatabase, GATTServiceHandles) {
        var database = GATTDatabase()
        try database.addGATTService(serverSupportedFeatures: .enhancedATT)
        let handles = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .notify],
                                         value: .stored(Array(0..<200).map { UInt8($0) }), maximumLength: 512),
        ]))
        return (database, handles)
    }

    @Test func gattServiceOffersClientAndServerSupportedFeatures() throws {
        let (database, _) = try Self.database()
        let uuids = database.attributes.map(\.type)
        #expect(uuids.contains(GATTUUID.clientSupportedFeatures) && uuids.contains(GATTUUID.serverSupportedFeatures))
        var server = GATTServer(database: database)
        server.connect(Self.connection)
        // Read By Type 0x2B3A over the whole range: the value is 0x01 (EATT supported).
        let reply = server.handleRequest(.readByTypeRequest(range: ATTHandleRange(start: 1, end: 0xFFFF), attributeType: GATTUUID.serverSupportedFeatures), from: Self.connection)
        guard case .readByTypeResponse(let response) = reply.response else {
            Issue.record("unexpected \(reply.response)")
            return
        }
        #expect(response.elements.map(\.value) == [[0x01]])
        // It is read-only.
        let handle = response.elements[0].handle
        let write = server.handleRequest(.writeRequest(handle: handle, value: [0x00]), from: Self.connection)
        #expect(write.response == .errorResponse(requestOpcode: .writeRequest, handle: handle, error: .writeNotPermitted))
        // Without the option the service has neither.
        var plain = GATTDatabase()
        try plain.addGATTService()
        #expect(!plain.attributes.contains { $0.type == GATTUUID.serverSupportedFeatures || $0.type == GATTUUID.clientSupportedFeatures })
    }

    @Test func responsesAreSizedPerBearer() throws {
        let (database, handles) = try Self.database()
        var server = GATTServer(database: database)
        server.connect(Self.connection)
        server.openBearer(Self.eatt, mtu: 100, for: Self.connection)
        guard let value = handles.characteristic(BluetoothUUID(0xFFF1))?.value else { return }
        let onFixed = server.handleRequest(.readRequest(handle: value), from: Self.connection)
        let onEATT = server.handleRequest(.readRequest(handle: value), from: Self.connection, on: Self.eatt)
        #expect(onFixed.response == .readResponse(value: Array(0..<22)))
        #expect(onEATT.response == .readResponse(value: Array(0..<99)))
        #expect(server.mtu(for: Self.connection, bearer: Self.eatt) == 100 && server.mtu(for: Self.connection) == 23)
        server.setMTU(200, for: Self.connection, bearer: Self.eatt)
        #expect(server.mtu(for: Self.connection, bearer: Self.eatt) == 200)
        // An unknown enhanced bearer's MTU is not created by setMTU.
        server.setMTU(300, for: Self.connection, bearer: GATTBearerID(0x0050))
        #expect(server.enhancedBearers(for: Self.connection) == [Self.eatt])
    }

    @Test func notificationsGoOnTheFirstEnhancedBearerCutToItsMTU() throws {
        let (database, handles) = try Self.database()
        guard let characteristic = handles.characteristic(BluetoothUUID(0xFFF1)), let cccd = characteristic.clientConfiguration
        else { return }
        var server = GATTServer(database: database)
        server.connect(Self.connection)
        _ = server.handleRequest(.writeRequest(handle: cccd, value: [0x01, 0x00]), from: Self.connection)
        let value = Array(repeating: UInt8(7), count: 150)
        #expect(server.notify(handle: characteristic.value, value: value) == [
            GATTServerOutbound(connection: Self.connection, pdu: .handleValueNotification(handle: characteristic.value, value: Array(value.prefix(20))))
        ])
        server.openBearer(GATTBearerID(0x0044), mtu: 64, for: Self.connection)
        server.openBearer(Self.eatt, mtu: 100, for: Self.connection)
        #expect(server.notify(handle: characteristic.value, value: value) == [
            GATTServerOutbound(connection: Self.connection, pdu: .handleValueNotification(handle: characteristic.value, value: Array(value.prefix(97))), bearer: Self.eatt)
        ])
        // The CCCD written on the fixed bearer holds on every bearer (it is the client's); a Multiple Handle Value
        // Notification goes on the same bearer once the client set bit 2 of Client Supported Features (on EATT).
        guard let features = database.attributes.first(where: { $0.type == GATTUUID.clientSupportedFeatures })?.handle else { return }
        let written = server.handleRequest(.writeRequest(handle: features + 0, value: [0x06]), from: Self.connection, on: Self.eatt)
        #expect(written.response == .writeResponse)
        let multiple = server.multipleNotification([(characteristic.value, [1, 2]), (characteristic.value, [3])], to: Self.connection)
        #expect(multiple?.bearer == Self.eatt)
        server.closeBearer(Self.eatt, for: Self.connection)
        #expect(server.notify(handle: characteristic.value, value: value).first?.bearer == GATTBearerID(0x0044))
    }

    @Test func deferredRequestsPerBearer() throws {
        let (database, handles) = try Self.database()
        guard let value = handles.characteristic(BluetoothUUID(0xFFF1))?.value else { return }
        var server = GATTServer(database: database)
        server.connect(Self.connection)
        server.openBearer(Self.eatt, mtu: 100, for: Self.connection)
        server.deferral = GATTDeferral(handles: [value]) { _ in }
        let first = server.handleRequest(.readRequest(handle: value), from: Self.connection)
        let second = server.handleRequest(.readRequest(handle: value), from: Self.connection, on: Self.eatt)
        guard let one = first.deferred, let two = second.deferred else {
            Issue.record("both requests should be deferred")
            return
        }
        #expect(one.bearer == .unenhanced && two.bearer == Self.eatt)
        #expect(server.pendingDeferredRequestCount == 2)
        #expect(server.deferredRequest(id: two.id, on: Self.connection)?.bearer == Self.eatt)
        // The EATT answer is cut to that bearer's MTU (100 − 1).
        let answer = server.respond(toDeferred: two.id, on: Self.connection, result: .success(Array(repeating: 9, count: 150)))
        #expect(answer?.response == .readResponse(value: Array(repeating: 9, count: 99)))
        let fixed = server.respond(toDeferred: one.id, on: Self.connection, result: .success(Array(repeating: 9, count: 150)))
        #expect(fixed?.response == .readResponse(value: Array(repeating: 9, count: 22)))
        // Closing a bearer drops its deferred request.
        _ = server.handleRequest(.readRequest(handle: value), from: Self.connection, on: Self.eatt)
        #expect(server.pendingDeferredRequestCount == 1)
        server.closeBearer(Self.eatt, for: Self.connection)
        #expect(server.pendingDeferredRequestCount == 0)
    }
}
