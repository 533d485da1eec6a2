import ATT
import BluetoothCore
import BluetoothRuntime
import GATT
import Testing
import TestSupport

/// The client on the real ATT bearer, talking bytes to a second bearer in front of the in-test server: the
/// contract between GATTClient and ATTBearer, end to end (Core 5.4 Vol 3 Part F §3.3, Part G §4).
struct ClientTestLink {
    var client = GATTClient()
    var clientBearer: ATTBearer
    var serverBearer: ATTBearer
    var server: ClientTestServer
    var now = StackInstant.zero
    var toServer: [[UInt8]] = []
    var toClient: [[UInt8]] = []
    var clientRequestIDs: Set<ATTBearerRequestID> = []
    var results: [GATTOperationID: Result<GATTProcedureResult, GATTClientError>] = [:]
    var events: [GATTClientAction] = []
    var confirmed: [UInt16] = []
    var disconnects: [ATTBearerDisconnectReason] = []
    var deliverToServer = true

    init(server: ClientTestServer, clientMTU: Int, serverMTU: Int) {
        self.server = server
        clientBearer = ATTBearer(preferredMTU: clientMTU)
        serverBearer = ATTBearer(preferredMTU: serverMTU)
    }

    mutating func perform(_ actions: [GATTClientAction]) {
        for action in actions {
            switch action {
            case .sendRequest(let pdu):
                let (id, bearerActions) = clientBearer.enqueue(request: pdu, now: now)
                clientRequestIDs.insert(id)
                performClientBearer(bearerActions)
            case .sendCommand(let pdu):
                do { performClientBearer(try clientBearer.send(pdu)) } catch { Issue.record("command refused: \(error)") }
            case .complete(let id, let result):
                results[id] = result
            case .notification:
                events.append(action)
            case .indication:
                events.append(action)
                performClientBearer(clientBearer.confirmIndication())
            }
        }
    }

    mutating func performClientBearer(_ actions: [ATTBearerAction]) {
        for action in actions {
            if let clientActions = client.handle(bearerAction: action) {
                perform(clientActions)
                continue
            }
            switch action {
            case .send(let bytes): toServer.append(bytes)
            case .response(let id, let result):
                guard clientRequestIDs.remove(id) != nil else { continue }  // our own MTU exchange
                perform(client.receive(bearerResult: result))
            case .disconnectLink(let reason): disconnects.append(reason)
            default: break
            }
        }
    }

    mutating func performServerBearer(_ actions: [ATTBearerAction]) {
        for action in actions {
            switch action {
            case .send(let bytes): toClient.append(bytes)
            case .request(let pdu):
                guard let answer = server.answer(pdu) else { continue }
                do { performServerBearer(try serverBearer.respond(answer, now: now)) } catch { Issue.record("\(error)") }
            case .command(let pdu): _ = server.answer(pdu)
            case .mtuChanged(let mtu): server.mtu = mtu
            case .indicationConfirmed(let handle): confirmed.append(handle)
            default: break
            }
        }
    }

    /// Moves bytes both ways until nothing is in flight.
    mutating func pump() {
        var rounds = 0
        while !(toServer.isEmpty && toClient.isEmpty), rounds < 100_000 {
            rounds += 1
            if !toServer.isEmpty {
                let bytes = toServer.removeFirst()
                if deliverToServer { performServerBearer(serverBearer.receive(bytes, now: now)) }
            }
            if !toClient.isEmpty {
                let bytes = toClient.removeFirst()
                performClientBearer(clientBearer.receive(bytes, now: now))
            }
        }
    }

    mutating func run(_ procedure: GATTProcedure) -> Result<GATTProcedureResult, GATTClientError>? {
        let (id, actions) = client.enqueue(procedure)
        perform(actions)
        pump()
        return results[id]
    }
}

@Suite("GATT client over the ATT bearer")
struct GATTClientBearerTests {
    @Test("MTU exchange, discovery, a 512-octet long read, long write, notification and indication")
    func endToEnd() throws {
        var database = GATTClientDiscoveryTests.database(mtu: 23)
        let big = (0..<512).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        database.service(BluetoothUUID(0x180A))
        let bigHandle = database.characteristic(BluetoothUUID(0x2A29), value: big)
        database.finish()
        var link = ClientTestLink(server: database, clientMTU: 185, serverMTU: 247)
        link.performClientBearer(link.clientBearer.exchangeMTU(now: link.now).actions)
        link.pump()
        #expect(link.client.mtu == 185)
        #expect(link.server.mtu == 185)

        guard case .services(let services)? = try link.run(.discoverAllPrimaryServices)?.get() else {
            Issue.record("no services")
            return
        }
        #expect(services.map(\.uuid) == [BluetoothUUID(0x1800), BluetoothUUID(0x180D), GATTDiscoveredService.customForTests, BluetoothUUID(0x180A)])
        let requestsBefore = link.server.requests.count
        #expect(try link.run(.readLongCharacteristicValue(handle: bigHandle))?.get() == .value(big))
        #expect(link.server.requests.count - requestsBefore == 1 + 512 / 184)
        let replacement = Array(big.reversed())
        #expect(try link.run(.writeLongCharacteristicValue(handle: bigHandle, value: replacement))?.get() == .written)
        #expect(link.server.value(at: bigHandle) == replacement)

        link.performServerBearer(try link.serverBearer.send(.handleValueNotification(handle: 15, value: [0, 80])))
        link.performServerBearer(try link.serverBearer.sendIndication(handle: 19, value: [2], now: link.now))
        link.pump()
        #expect(link.events == [.notification(handle: 15, value: [0, 80]), .indication(handle: 19, value: [2])])
        #expect(link.confirmed == [19])
        #expect(link.disconnects.isEmpty)
        expectClientIdle(link.client)
        #expect(link.clientBearer.pendingRequestCount == 0)
        #expect(link.clientRequestIDs.isEmpty)
    }

    @Test("an Error Response reaches the procedure with its code and handle")
    func errorThroughBearer() {
        var link = ClientTestLink(server: GATTClientDiscoveryTests.database(mtu: 23), clientMTU: 23, serverMTU: 23)
        #expect(link.run(.readCharacteristicValue(handle: 0x0200)) == .failure(.attError(.invalidHandle, handle: 0x0200)))
        #expect(link.run(.readCharacteristicValue(handle: 3)) == .success(.value(Array("Device".utf8))))
        expectClientIdle(link.client)
    }

    @Test("a request the bearer refuses fails only its procedure")
    func refusedRequest() {
        var link = ClientTestLink(server: GATTClientDiscoveryTests.database(mtu: 23), clientMTU: 23, serverMTU: 23)
        link.client.mtu = 100  // wrong on purpose: the bearer still has 23
        let (refused, refusedActions) = link.client.enqueue(.writeCharacteristicValue(handle: 3, value: Array(repeating: 1, count: 90)))
        let (next, nextActions) = link.client.enqueue(.readCharacteristicValue(handle: 3))
        link.perform(refusedActions + nextActions)
        link.pump()
        guard case .failure(.requestRefused)? = link.results[refused] else {
            Issue.record("expected a refused request, got \(String(describing: link.results[refused]))")
            return
        }
        #expect(link.results[next] == .success(.value(Array("Device".utf8))))
        #expect(link.disconnects.isEmpty)
        expectClientIdle(link.client)
    }

    @Test("the 30 s transaction timeout fails the current and queued procedures")
    func timeout() {
        var link = ClientTestLink(server: GATTClientDiscoveryTests.database(mtu: 23), clientMTU: 23, serverMTU: 23)
        link.deliverToServer = false
        let (first, firstActions) = link.client.enqueue(.discoverAllPrimaryServices)
        let (second, secondActions) = link.client.enqueue(.readCharacteristicValue(handle: 3))
        link.perform(firstActions + secondActions)
        link.pump()
        #expect(link.results.isEmpty)
        #expect(link.clientBearer.nextDeadline == StackInstant.zero + .seconds(30))
        link.now = StackInstant.zero + .seconds(30)
        link.performClientBearer(link.clientBearer.handleTimeout(now: link.now))
        #expect(link.results[first] == .failure(.bearerFailed(.transactionTimeout)))
        #expect(link.results[second] == .failure(.bearerFailed(.transactionTimeout)))
        #expect(link.disconnects == [.transactionTimeout])
        expectClientIdle(link.client)
        #expect(link.clientBearer.nextDeadline == nil)
    }
}

extension GATTDiscoveredService {
    static var customForTests: BluetoothUUID { GATTClientDiscoveryTests.custom }
}
