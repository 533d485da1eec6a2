import ATT
import BluetoothCore
import GATT
import Testing

/// A Client Characteristic Configuration descriptor the application answers for, as Android's
/// `BluetoothGattServer` makes apps do (Core 5.4 Vol 3 Part G §3.3.3.3): the write is deferred, the subscription
/// changes only when the application answers success, an error or no answer leaves it off; and a characteristic
/// built without a CCCD (an Android app that forgot its descriptor) cannot be subscribed to.
@Suite struct GATTServerApplicationCCCDTests {
    static let connection = GATTConnectionID(0x0040)

    static func database(addsCCCD: Bool = true) throws -> (GATTDatabase, GATTCharacteristicHandles) {
        var database = GATTDatabase()
        var definition = GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .notify], value: .stored([1]))
        definition.addsClientConfiguration = addsCCCD
        let handles = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [definition]))
        return (database, handles.characteristics[0])
    }

    @Test("a deferred CCCD write subscribes when answered success, with its event")
    func deferredCCCDWriteAppliesOnSuccess() throws {
        let (database, characteristic) = try Self.database()
        let cccd = try #require(characteristic.clientConfiguration)
        var server = GATTServer(database: database)
        server.connect(Self.connection)
        server.deferral = GATTDeferral(handles: [cccd]) { _ in }
        let reply = server.handleRequest(.writeRequest(handle: cccd, value: [0x01, 0x00]), from: Self.connection)
        let pending = try #require(reply.deferred)
        #expect(pending.kind == .write(handle: cccd, value: [0x01, 0x00]))
        // Not subscribed until the application answers.
        #expect(server.clientConfiguration(valueHandle: characteristic.value, for: Self.connection).isEmpty)
        #expect(server.notify(handle: characteristic.value, value: [2]).isEmpty)
        let answered = server.respond(toDeferred: pending.id, on: Self.connection, result: .success([]))
        let answer = try #require(answered)
        #expect(answer.response == .writeResponse)
        #expect(answer.events == [.subscriptionChanged(connection: Self.connection, valueHandle: characteristic.value,
                                                        configuration: .notification)])
        #expect(server.notify(handle: characteristic.value, value: [2]).map(\.pdu) == [.handleValueNotification(handle: characteristic.value, value: [2])])
    }

    @Test("an error answer leaves the subscription off; a bad length is refused when the application accepts it")
    func deferredCCCDWriteRefused() throws {
        let (database, characteristic) = try Self.database()
        let cccd = try #require(characteristic.clientConfiguration)
        var server = GATTServer(database: database)
        server.connect(Self.connection)
        server.deferral = GATTDeferral(handles: [cccd]) { _ in }
        let refusedReply = server.handleRequest(.writeRequest(handle: cccd, value: [0x01, 0x00]), from: Self.connection)
        let refused = try #require(refusedReply.deferred)
        let answer = server.respond(toDeferred: refused.id, on: Self.connection, result: .failure(GATTAttributeError(ATTErrorCode(0x80))))
        #expect(answer?.response == .errorResponse(requestOpcode: .writeRequest, handle: cccd, error: ATTErrorCode(0x80)))
        #expect(answer?.events.isEmpty == true)
        #expect(server.clientConfiguration(valueHandle: characteristic.value, for: Self.connection).isEmpty)
        // One octet is not a CCCD value: accepted by the application, still refused by the server.
        let shortReply = server.handleRequest(.writeRequest(handle: cccd, value: [0x01]), from: Self.connection)
        let short = try #require(shortReply.deferred)
        let shortAnswer = server.respond(toDeferred: short.id, on: Self.connection, result: .success([]))
        #expect(shortAnswer?.response == .errorResponse(requestOpcode: .writeRequest, handle: cccd, error: .invalidAttributeValueLength))
        #expect(server.clientConfiguration(valueHandle: characteristic.value, for: Self.connection).isEmpty)
        // Never answered: still pending, still not subscribed (the client meets its ATT timeout).
        _ = server.handleRequest(.writeRequest(handle: cccd, value: [0x01, 0x00]), from: Self.connection)
        #expect(server.pendingDeferredRequestCount == 1)
        #expect(server.clientConfiguration(valueHandle: characteristic.value, for: Self.connection).isEmpty)
    }

    @Test("a characteristic built without its CCCD has no descriptor to find or write, and notifies no one")
    func characteristicWithoutCCCD() throws {
        let (database, characteristic) = try Self.database(addsCCCD: false)
        #expect(characteristic.clientConfiguration == nil)
        #expect(!database.attributes.contains { $0.type == GATTUUID.clientCharacteristicConfiguration })
        var server = GATTServer(database: database)
        server.connect(Self.connection)
        let information = server.handleRequest(.findInformationRequest(ATTHandleRange(start: characteristic.value + 1, end: 0xFFFF)),
                                               from: Self.connection)
        #expect(information.response == .errorResponse(requestOpcode: .findInformationRequest, handle: characteristic.value + 1,
                                                       error: .attributeNotFound))
        #expect(server.notify(handle: characteristic.value, value: [2]).isEmpty)
    }
}
