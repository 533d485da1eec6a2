import BluetoothCore
import BluetoothRuntime
import HCI
import Host
import TestSupport
import Testing
import BluetoothEngine

@Suite("HCI command pipe")
struct CommandPipeTests {
    @Test("a second command waits for the credit of the first one's answer; credits follow the latest event")
    func credits() {
        let rig = Rig(keepResponder: false)
        let results = Recorder<Result<HCIReturnParameters, HostError>>()
        rig.host.send(.leRand) { results.append($0) }
        rig.host.send(.leReadAdvertisingPhysicalChannelTxPower) { results.append($0) }
        rig.host.send(.leReadFilterAcceptListSize) { results.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentBytes == [hex("01 18 20 00")])
        // The answer grants no credit: nothing more goes out.
        rig.controller.deliver(.complete(.leRand, .leRand(status: .success, randomNumber: 0x1122), credits: 0))
        rig.loop.run()
        #expect(rig.controller.sentBytes.count == 1)
        #expect(results.count == 1)
        if case .success(.leRand(_, let random)) = results.values.first { #expect(random == 0x1122) } else {
            Issue.record("LE Rand result: \(results.values)")
        }
        // A No Operation Command Complete grants two credits: both waiting commands go.
        rig.controller.deliver(.complete(.noOperation, .raw([]), credits: 2))
        rig.loop.run()
        #expect(rig.controller.sentBytes == [hex("01 18 20 00"), hex("01 07 20 00"), hex("01 0F 20 00")])
        rig.controller.deliver(.complete(.leReadFilterAcceptListSize, .leReadFilterAcceptListSize(status: .success, size: 8)))
        rig.controller.deliver(.complete(.leReadAdvertisingPhysicalChannelTxPower,
                                         .leReadAdvertisingPhysicalChannelTxPower(status: .success, txPowerLevel: -4)))
        rig.loop.run()
        #expect(results.count == 3)
        #expect(rig.host.statistics.unmatchedCommandResponses == 0)
        rig.expectNothingLeft()
    }

    @Test("an ignored command fails as an unresponsive controller after the timeout; the pipe goes on")
    func timeoutAndRecovery() throws {
        var model = ControllerModel()
        model.ignored = [.leEncrypt]
        let rig = Rig(model: model)
        let encrypt = Recorder<Result<HCIReturnParameters, HostError>>()
        let rand = Recorder<Result<HCIReturnParameters, HostError>>()
        rig.host.send(.leEncrypt(key: [UInt8](repeating: 1, count: 16), plaintext: [UInt8](repeating: 2, count: 16))) {
            encrypt.append($0)
        }
        rig.host.send(.leRand) { rand.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentCommands.map(\.opcode) == [.leEncrypt])
        rig.loop.advance(by: .milliseconds(1999))
        #expect(encrypt.count == 0)
        rig.loop.advance(by: .milliseconds(1))
        guard case .failure(let error) = encrypt.last else {
            Issue.record("LE Encrypt should have failed")
            return
        }
        #expect(error.code == .unresponsiveController)
        #expect(error.opcode == .leEncrypt)
        #expect(error.reason.contains("LE Encrypt"))
        // The pipe continued with one credit: LE Rand went out and was answered.
        #expect(rig.controller.sentCommands.map(\.opcode) == [.leEncrypt, .leRand])
        #expect(rand.count == 1)
        #expect((try? rand.last?.get()) != nil)
        guard case .controllerError(let reported) = rig.events.values.first else {
            Issue.record("the timeout should be reported as a controller error")
            return
        }
        #expect(reported == error)
        // A late answer to the timed-out command is tolerated and counted.
        rig.controller.deliver(.complete(.leEncrypt, .leEncrypt(status: .success, encryptedData: [UInt8](repeating: 0, count: 16))))
        rig.loop.run()
        #expect(rig.host.statistics.unmatchedCommandResponses == 1)
        rig.expectNothingLeft()
    }

    @Test("Command Status and Command Complete are matched to their own commands")
    func statusVersusComplete() {
        let rig = Rig(keepResponder: false)
        rig.controller.deliver(.complete(.noOperation, .raw([]), credits: 3))
        rig.loop.run()
        let create = Recorder<Result<Connection, HostError>>()
        let rand = Recorder<Result<HCIReturnParameters, HostError>>()
        let power = Recorder<Result<HCIReturnParameters, HostError>>()
        rig.host.connect(to: BluetoothAddress(0xC1_0000_0000_01, type: .random)) { create.append($0) }
        rig.host.send(.leRand) { rand.append($0) }
        rig.host.send(.leReadAdvertisingPhysicalChannelTxPower) { power.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentCommands.map(\.opcode) == [.leCreateConnection, .leRand, .leReadAdvertisingPhysicalChannelTxPower])
        // A successful Command Status for a command answered by Command Complete does not complete it.
        rig.controller.deliver(.status(.leRand, credits: 3))
        rig.loop.run()
        #expect(rand.count == 0)
        #expect(rig.host.resources.pendingCommands == 3)
        // Command Complete of LE Rand completes LE Rand only.
        rig.controller.deliver(.complete(.leRand, .leRand(status: .success, randomNumber: 5), credits: 3))
        rig.loop.run()
        #expect(rand.count == 1)
        #expect(rig.host.resources.pendingCommands == 2)
        // Command Status of LE Create Connection ends its command; the connect waits for Connection Complete.
        rig.controller.deliver(.status(.leCreateConnection, credits: 3))
        rig.loop.run()
        #expect(create.count == 0)
        #expect(rig.host.resources.pendingCommands == 1)
        #expect(rig.host.resources.pendingOperations == 1)
        // An error in a Command Status fails a Command Complete command too.
        rig.controller.deliver(.status(.leReadAdvertisingPhysicalChannelTxPower, .commandDisallowed, credits: 3))
        rig.loop.run()
        if case .failure(let error) = power.last {
            #expect(error.code == .commandFailed)
            #expect(error.status == .commandDisallowed)
        } else {
            Issue.record("expected Command Disallowed")
        }
        rig.controller.deliver(.leMeta(.connectionComplete(LEConnectionComplete(
            handle: 0x0001, role: .central, peerAddressType: .random, peerAddress: BluetoothAddress(0xC1_0000_0000_01, type: .random),
            connectionInterval: 0x18, supervisionTimeout: 0x1F4))))
        rig.loop.run()
        #expect((try? create.last?.get())?.handle == 0x0001)
        rig.expectNothingLeft()
    }

    @Test("Unknown Command is remembered: the next use fails at once without asking the controller")
    func unknownCommandRemembered() {
        var model = ControllerModel()
        model.unknown = [.leReadSupportedStates]
        let rig = Rig(model: model)
        let results = Recorder<Result<HCIReturnParameters, HostError>>()
        rig.host.send(.leReadSupportedStates) { results.append($0) }
        rig.loop.run()
        rig.host.send(.leReadSupportedStates) { results.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentCommands.count == 1)
        #expect(results.values.allSatisfy {
            if case .failure(let error) = $0 { error.code == .unsupported && error.status == .unknownCommand } else { false }
        })
        #expect(results.count == 2)
        rig.expectNothingLeft()
    }

    @Test("an undecodable Command Complete fails its command with a protocol error and keeps the credits")
    func malformedCommandComplete() {
        let rig = Rig(keepResponder: false)
        let results = Recorder<Result<HCIReturnParameters, HostError>>()
        rig.host.send(.readLocalVersionInformation) { results.append($0) }
        rig.loop.run()
        // Success status but 3 octets of return parameters instead of 9.
        rig.controller.deliver(H4Frame(type: .event, packet: hex("0E 06 01 01 10 00 0D 01")))
        rig.loop.run()
        if case .failure(let error) = results.last { #expect(error.code == .protocolError) } else {
            Issue.record("expected a protocol error, got \(results.values)")
        }
        #expect(rig.host.statistics.undecodableEvents == 1)
        let next = Recorder<Result<HCIReturnParameters, HostError>>()
        rig.host.send(.leRand) { next.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentCommands.last == .leRand)
        rig.controller.deliver(.complete(.leRand, .leRand(status: .success, randomNumber: 1)))
        rig.expectNothingLeft()
    }

    @Test("the transport closing fails everything pending and stops the timer")
    func transportClosed() {
        let rig = Rig(keepResponder: false)
        let results = Recorder<Result<HCIReturnParameters, HostError>>()
        rig.host.send(.leRand) { results.append($0) }
        rig.host.send(.leRand) { results.append($0) }
        rig.loop.run()
        rig.controller.hangUp()
        rig.loop.run()
        #expect(results.count == 2)
        #expect(results.values.allSatisfy { if case .failure(let error) = $0 { error.code == .transportFailed } else { false } })
        let after = Recorder<Result<HCIReturnParameters, HostError>>()
        rig.host.send(.leRand) { after.append($0) }
        rig.loop.run()
        if case .failure(let error) = after.last { #expect(error.code == .notReady) } else { Issue.record("expected notReady") }
        rig.expectNothingLeft()
    }
}
