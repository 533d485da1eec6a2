import BluetoothCore
import BluetoothRuntime
import HCI
import Host
import Testing
import BluetoothEngine

/// A connect that fails with Connection Failed to be Established (0x3E) is attempted again
/// (``HostStack/connectRetryLimit`` times, ``HostStack/connectRetryDelay`` apart), within the connect's own time limit;
/// a cancel or the time limit between two attempts ends it without a cancel command (found on BlueZ's emulator,
/// which fails a connect at once while the peer re-enables advertising: Scripts/vm/scenarios/uchan-pairing.sh).
@Suite("Connect retries after 0x3E")
struct ConnectRetryTests {
    static let peer = BluetoothAddress(0xC1_2233_4455_66, type: .random)
    static let createConnection: [UInt8] = [0x01, 0x0D, 0x20]
    static let cancelConnection: [UInt8] = [0x01, 0x0E, 0x20]

    static func failed(_ status: HCIStatus = .connectionFailedToBeEstablished) -> HCIEvent {
        .leMeta(.connectionComplete(LEConnectionComplete(
            status: status, handle: 0, role: .central, peerAddressType: .random, peerAddress: peer,
            connectionInterval: 0, supervisionTimeout: 0)))
    }

    static func established(handle: UInt16 = 0x0040) -> HCIEvent {
        .leMeta(.connectionComplete(LEConnectionComplete(
            handle: handle, role: .central, peerAddressType: .random, peerAddress: peer,
            connectionInterval: 0x0018, supervisionTimeout: 0x01F4)))
    }

    func createCount(_ rig: Rig) -> Int {
        rig.controller.sentBytes.filter { $0.starts(with: Self.createConnection) }.count
    }

    @Test("a 0x3E failure is retried after the delay, and the retry's connection completes the connect")
    func retrySucceeds() throws {
        let rig = Rig()
        let connect = Recorder<Result<Connection, HostError>>()
        rig.host.connect(to: Self.peer, options: ConnectOptions(timeout: .seconds(10))) { connect.append($0) }
        rig.loop.run()
        #expect(createCount(rig) == 1)
        rig.controller.deliver(Self.failed())
        rig.loop.run()
        #expect(connect.count == 0)
        #expect(createCount(rig) == 1)  // not at once: after the delay
        rig.loop.advance(by: HostStack.connectRetryDelay)
        #expect(createCount(rig) == 2)
        rig.controller.deliver(Self.established())
        rig.loop.run()
        let connection = try #require(try connect.last?.get())
        #expect(connection.handle == 0x0040)
        #expect(rig.host.statistics.connectRetries == 1)
        rig.expectNothingLeft()
    }

    @Test("after the last retry the connect fails with 0x3E")
    func retriesRunOut() {
        let rig = Rig()
        let connect = Recorder<Result<Connection, HostError>>()
        rig.host.connect(to: Self.peer) { connect.append($0) }
        rig.loop.run()
        for _ in 0..<HostStack.connectRetryLimit {
            rig.controller.deliver(Self.failed())
            rig.loop.run()
            rig.loop.advance(by: HostStack.connectRetryDelay)
        }
        #expect(createCount(rig) == HostStack.connectRetryLimit + 1)
        #expect(connect.count == 0)
        rig.controller.deliver(Self.failed())
        rig.loop.run()
        guard case .failure(let error)? = connect.last else {
            Issue.record("expected the connect to fail")
            return
        }
        #expect(error.code == .commandFailed && error.status == .connectionFailedToBeEstablished)
        #expect(createCount(rig) == HostStack.connectRetryLimit + 1)
        rig.expectNothingLeft()
    }

    @Test("other failures are not retried", arguments: [HCIStatus.rejectedLimitedResources, .unspecifiedError, .connectionTimeout])
    func otherFailuresEndTheConnect(status: HCIStatus) {
        let rig = Rig()
        let connect = Recorder<Result<Connection, HostError>>()
        rig.host.connect(to: Self.peer) { connect.append($0) }
        rig.loop.run()
        rig.controller.deliver(Self.failed(status))
        rig.loop.run()
        #expect((try? connect.last?.get()) == nil && connect.count == 1)
        rig.loop.advance(by: .seconds(1))
        #expect(createCount(rig) == 1)
        rig.expectNothingLeft()
    }

    @Test("a cancel between two attempts ends the connect at once, with no cancel command")
    func cancelBetweenAttempts() {
        let rig = Rig()
        let connect = Recorder<Result<Connection, HostError>>()
        let cancelled = Recorder<Result<Void, HostError>>()
        rig.host.connect(to: Self.peer) { connect.append($0) }
        rig.loop.run()
        rig.controller.deliver(Self.failed())
        rig.loop.run()
        rig.host.cancelConnect(to: Self.peer) { cancelled.append($0) }
        rig.loop.run()
        guard case .failure(let error)? = connect.last else {
            Issue.record("expected the connect to end")
            return
        }
        #expect(error.code == .cancelled)
        #expect((try? cancelled.last?.get()) != nil)
        rig.loop.advance(by: .seconds(1))
        #expect(createCount(rig) == 1)
        #expect(!rig.controller.sentBytes.contains { $0.starts(with: Self.cancelConnection) })
        rig.expectNothingLeft()
    }

    @Test("the connect's time limit passing between two attempts ends it with timedOut")
    func timeLimitBetweenAttempts() {
        let rig = Rig()
        let connect = Recorder<Result<Connection, HostError>>()
        rig.host.connect(to: Self.peer, options: ConnectOptions(timeout: .milliseconds(100))) { connect.append($0) }
        rig.loop.run()
        rig.loop.advance(by: .milliseconds(50))
        rig.controller.deliver(Self.failed())
        rig.loop.run()
        rig.loop.advance(by: .milliseconds(60))  // past the limit, before the retry
        guard case .failure(let error)? = connect.last else {
            Issue.record("expected the connect to time out")
            return
        }
        #expect(error.code == .timedOut)
        rig.loop.advance(by: .seconds(1))
        #expect(createCount(rig) == 1)
        #expect(!rig.controller.sentBytes.contains { $0.starts(with: Self.cancelConnection) })
        rig.expectNothingLeft()
    }
}
