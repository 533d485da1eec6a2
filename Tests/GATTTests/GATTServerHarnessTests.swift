import ATT
import BluetoothCore
import BluetoothRuntime
import GATT
import Testing
import TestSupport

/// One peripheral as the Host would wire it: a GATTServer, one ATTBearer per connection, one timer per owner on a
/// ManualEventLoop. Feeding client bytes in gives back the bytes the server sends, in order.
final class GATTServerTestHarness: @unchecked Sendable {
    let loop = ManualEventLoop()
    var server: GATTServer
    var bearers: [GATTConnectionID: ATTBearer] = [:]
    var sent: [GATTConnectionID: [[UInt8]]] = [:]
    var events: [GATTServerEvent] = []
    var bearerFailures: [ATTBearerAction] = []
    private var timer: ScheduledJob?

    init(database: GATTDatabase, preferredMTU: Int = 517) {
        server = GATTServer(database: database)
        connect(GATTConnectionID(1), preferredMTU: preferredMTU)
    }

    func connect(_ connection: GATTConnectionID, preferredMTU: Int = 517, security: GATTLinkSecurity = .open) {
        bearers[connection] = ATTBearer(preferredMTU: preferredMTU)
        server.connect(connection, security: security)
    }

    /// Feeds one PDU from the client of `connection` and returns what the server sent back (hex).
    @discardableResult
    func exchange(_ text: String, on connection: GATTConnectionID = GATTConnectionID(1)) -> [String] {
        receive(hex(text), on: connection)
        return takeSent(connection)
    }

    func receive(_ bytes: [UInt8], on connection: GATTConnectionID) {
        guard var bearer = bearers[connection] else { return }
        let actions = bearer.receive(bytes, now: loop.now)
        bearers[connection] = bearer
        perform(actions, on: connection)
    }

    func takeSent(_ connection: GATTConnectionID = GATTConnectionID(1)) -> [String] {
        defer { sent[connection] = [] }
        return (sent[connection] ?? []).map { Hex.encode($0) }
    }

    func perform(_ actions: [ATTBearerAction], on connection: GATTConnectionID) {
        var work = actions
        while !work.isEmpty {
            let action = work.removeFirst()
            switch action {
            case .send(let bytes):
                sent[connection, default: []].append(bytes)
            case .request(let pdu):
                let reply = server.handleRequest(pdu, from: connection)
                events += reply.events
                guard var bearer = bearers[connection] else { continue }
                do {
                    work = try bearer.respond(reply.response, now: loop.now) + work
                } catch {
                    Issue.record("respond failed: \(error)")
                }
                bearers[connection] = bearer
            case .command(let pdu):
                events += server.handleCommand(pdu, from: connection)
            case .mtuChanged(let mtu):
                server.setMTU(mtu, for: connection)
            case .indicationConfirmed, .notification, .indication, .response:
                break
            case .indicationFailed, .disconnectLink:
                bearerFailures.append(action)
            }
        }
        rearm()
    }

    /// Sends what the server wants pushed (notifications, indications) through the bearers.
    func push(_ outbound: [GATTServerOutbound]) {
        for item in outbound {
            guard var bearer = bearers[item.connection] else { continue }
            var actions: [ATTBearerAction] = []
            do {
                if case .handleValueIndication(let handle, let value) = item.pdu {
                    actions = try bearer.sendIndication(handle: handle, value: value, now: loop.now)
                } else {
                    actions = try bearer.send(item.pdu)
                }
            } catch {
                Issue.record("push failed: \(error)")
            }
            bearers[item.connection] = bearer
            perform(actions, on: item.connection)
        }
    }

    private func rearm() {
        timer?.cancel()
        timer = nil
        let deadlines = bearers.values.compactMap(\.nextDeadline)
        guard let deadline = deadlines.min() else { return }
        timer = loop.schedule(at: deadline) { [self] in
            for id in bearers.keys.sorted() {
                guard var bearer = bearers[id] else { continue }
                let actions = bearer.handleTimeout(now: loop.now)
                bearers[id] = bearer
                perform(actions, on: id)
            }
        }
    }

    /// The leak check: nothing queued in any machine, no timer left on the loop.
    func expectClean(sourceLocation: SourceLocation = #_sourceLocation) {
        for (id, bearer) in bearers {
            #expect(bearer.pendingRequestCount == 0, "\(id) requests", sourceLocation: sourceLocation)
            #expect(bearer.pendingIndicationCount == 0, "\(id) indications", sourceLocation: sourceLocation)
            #expect(bearer.pendingIncomingRequestCount == 0, "\(id) incoming", sourceLocation: sourceLocation)
        }
        #expect(server.pendingPreparedWriteCount == 0, sourceLocation: sourceLocation)
        #expect(loop.pendingWorkDescription == "nothing", sourceLocation: sourceLocation)
    }
}

/// The database BlueZ's unit/test-gatt.c `SERVICE_DATA_1_PDUS` implies (spec-vectors.md §2.2): GATT service
/// 0x0001–0x0004 (Device Name "BlueZ" with a User Description), Heart Rate 0x0005–0x0008 (Manufacturer Name,
/// read|write, with a CCCD).
func bluezServiceData1() throws -> GATTDatabase {
    var database = GATTDatabase()
    try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0x1801), characteristics: [
        GATTCharacteristicDefinition(uuid: BluetoothUUID(0x2A00), properties: .read, value: .stored(Array("BlueZ".utf8)),
                                     descriptors: [.userDescription("Device Name")]),
    ]))
    try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0x180D), characteristics: [
        GATTCharacteristicDefinition(uuid: BluetoothUUID(0x2A29), properties: [.read, .write], value: .stored([]),
                                     descriptors: [.clientConfiguration]),
    ]))
    return database
}

@Suite("GATT server harness")
struct GATTServerHarnessTests {
    @Test("the BlueZ database has the handles the exchange implies")
    func bluezHandles() throws {
        let database = try bluezServiceData1()
        #expect(database.lastHandle == 8)
        #expect(database.services.map(\.start) == [1, 5])
        #expect(database.services.map(\.end) == [4, 8])
        #expect(database.services[1].characteristics.first?.clientConfiguration == 8)
    }
}
