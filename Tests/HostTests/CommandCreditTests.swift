import BluetoothCore
import BluetoothRuntime
import HCI
import HCITransport
import Host
import TestSupport
import Testing
import BluetoothEngine

/// Issue 10 item 4: a controller that withholds command credits (Core 5.4 Vol 4 Part E §4.4 sets no limit). A
/// command that can never be sent fails like one that was never answered, after the command timeout; the
/// starvation is reported once as an unresponsive controller; the pipe goes on with one credit. Virtual time.
@Suite("HCI command credits")
struct CommandCreditTests {
    /// The hostile controller's reproducer: Command Complete for LE Read Buffer Size [v2] (0x2060, never sent: the
    /// model does not support it) with Num_HCI_Command_Packets = 0 and not even a status.
    static let starvingComplete = H4Frame(type: .event, packet: hex("0E 03 00 60 20"))

    static func unresponsive(_ result: Result<Void, HostError>?) -> HostError? {
        if case .failure(let error) = result, error.code == .unresponsiveController { return error }
        return nil
    }

    /// The controller errors reported as an unresponsive controller (the reproducer is also reported as an
    /// undecodable event: a Command Complete without even a status).
    static func controllerErrors(_ events: Recorder<HostEvent>) -> [HostError] {
        events.values.compactMap {
            if case .controllerError(let error) = $0, error.code == .unresponsiveController { error } else { nil }
        }
    }

    @Test("04 0E 03 00 60 20 while scanning: stopping the scan fails after the command timeout instead of waiting forever")
    func reproducer() {
        let rig = Rig()
        let started = Recorder<Result<Void, HostError>>()
        rig.host.startScanning(ScanOptions()) { started.append($0) }
        rig.loop.run()
        #expect((try? started.last?.get()) != nil)
        rig.controller.clearSent()
        rig.events.removeAll()

        rig.controller.deliver(Self.starvingComplete)
        rig.loop.run()
        let stopped = Recorder<Result<Void, HostError>>()
        rig.host.stopScanning { stopped.append($0) }
        rig.loop.run()
        // No credit: LE Set Scan Enable waits, unsent.
        #expect(rig.controller.sentCommands.isEmpty)
        #expect(rig.host.resources.pendingCommands == 1)
        rig.loop.advance(by: .milliseconds(1999))
        #expect(stopped.count == 0)
        rig.loop.advance(by: .milliseconds(1))
        guard let error = Self.unresponsive(stopped.last) else {
            Issue.record("stopping should fail as an unresponsive controller, got \(stopped.values)")
            return
        }
        #expect(error.opcode == .leSetScanEnable)
        #expect(error.reason.contains("LE Set Scan Enable"))
        #expect(error.reason.contains("granted no command credit"))
        #expect(rig.controller.sentCommands.isEmpty)
        // Reported once, as an unresponsive controller naming the command.
        let reported = Self.controllerErrors(rig.events)
        #expect(reported.count == 1)
        #expect(reported.first?.code == .unresponsiveController)
        #expect(reported.first?.reason.contains("LE Set Scan Enable") == true)

        // The pipe goes on with one credit: the next command is sent and answered.
        let rand = Recorder<Result<HCIReturnParameters, HostError>>()
        rig.host.send(.leRand) { rand.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentCommands.map(\.opcode) == [.leRand])
        #expect((try? rand.last?.get()) != nil)
        rig.expectNothingLeft()
    }

    @Test("shutting down during a starvation fails the waiting command at once and leaves no timer")
    func shutdownDuringStarvation() {
        let rig = Rig()
        rig.controller.deliver(Self.starvingComplete)
        rig.loop.run()
        let rand = Recorder<Result<HCIReturnParameters, HostError>>()
        rig.host.send(.leRand) { rand.append($0) }
        rig.loop.run()
        #expect(rig.loop.pendingWorkDescription != "nothing")
        rig.host.shutdown()
        rig.loop.run()
        if case .failure(let error) = rand.last { #expect(error.code == .notReady) } else {
            Issue.record("expected notReady, got \(rand.values)")
        }
        #expect(rig.loop.pendingWorkDescription == "nothing")
        rig.expectNothingLeft()
    }

    @Test("a credit granted during the starvation ends it: the command goes out with its own full timeout")
    func creditEndsStarvation() {
        let rig = Rig(keepResponder: false)
        rig.controller.deliver(Self.starvingComplete)
        let rand = Recorder<Result<HCIReturnParameters, HostError>>()
        rig.host.send(.leRand) { rand.append($0) }
        rig.loop.run()
        rig.loop.advance(by: .milliseconds(1500))
        rig.controller.deliver(.complete(.noOperation, .raw([]), credits: 1))
        rig.loop.run()
        #expect(rig.controller.sentCommands.map(\.opcode) == [.leRand])
        // Past the starvation's end, before the command's own timeout.
        rig.loop.advance(by: .milliseconds(1999))
        #expect(rand.count == 0)
        rig.controller.deliver(.complete(.leRand, .leRand(status: .success, randomNumber: 9)))
        rig.loop.run()
        #expect((try? rand.last?.get()) != nil)
        #expect(Self.controllerErrors(rig.events).isEmpty)
        rig.expectNothingLeft()
    }

    @Test("more answers granting no credit do not move the starvation's deadline; every waiting command fails, reported once")
    func repeatedZeroCreditsKeepTheDeadline() {
        let rig = Rig(keepResponder: false)
        rig.controller.deliver(Self.starvingComplete)
        let results = Recorder<Result<HCIReturnParameters, HostError>>()
        rig.host.send(.leRand) { results.append($0) }
        rig.host.send(.leReadFilterAcceptListSize) { results.append($0) }
        rig.loop.run()
        for _ in 0..<3 {
            rig.loop.advance(by: .milliseconds(500))
            rig.controller.deliver(Self.starvingComplete)
            rig.controller.deliver(.complete(.noOperation, .raw([]), credits: 0))
            rig.host.send(.leReadSupportedStates) { results.append($0) }
            rig.loop.run()
        }
        #expect(results.count == 0)
        rig.loop.advance(by: .milliseconds(500))
        #expect(results.count == 5)
        #expect(results.values.allSatisfy {
            if case .failure(let error) = $0 { error.code == .unresponsiveController } else { false }
        })
        let reported = Self.controllerErrors(rig.events)
        #expect(reported.count == 1)
        #expect(reported.first?.reason.contains("5 commands") == true)
        #expect(rig.controller.sentCommands.isEmpty)
        #expect(rig.host.statistics.unmatchedCommandResponses == 4)
        rig.expectNothingLeft()
    }

    @Test("an answer granting no credit while another command is in flight: that one times out, then the rest")
    func zeroCreditWithCommandInFlight() {
        let rig = Rig(keepResponder: false)
        let first = Recorder<Result<HCIReturnParameters, HostError>>()
        let second = Recorder<Result<HCIReturnParameters, HostError>>()
        rig.host.send(.leRand) { first.append($0) }
        rig.host.send(.leReadSupportedStates) { second.append($0) }
        rig.loop.run()
        rig.controller.deliver(Self.starvingComplete)
        rig.loop.run()
        rig.loop.advance(by: .seconds(2))
        if case .failure(let error) = first.last { #expect(error.code == .unresponsiveController) } else {
            Issue.record("LE Rand should have timed out, got \(first.values)")
        }
        // The pipe went on with one credit: the second command went out and has its own timeout.
        #expect(rig.controller.sentCommands.map(\.opcode) == [.leRand, .leReadSupportedStates])
        rig.loop.advance(by: .seconds(2))
        if case .failure(let error) = second.last { #expect(error.code == .unresponsiveController) } else {
            Issue.record("LE Read Supported States should have timed out, got \(second.values)")
        }
        rig.expectNothingLeft()
    }

    @Test("a controller answering Reset with no credit: initialisation goes on after one timeout, with a warning")
    func starvationDuringInitialisation() {
        let loop = ManualEventLoop()
        let controller = ScriptedController()
        let host = HostStack(transport: controller, eventLoop: loop, configuration: Rig.defaultConfiguration)
        let model = ControllerModel()
        controller.setResponder { command in
            if command == .reset { return [.complete(.reset, credits: 0)] }
            return model.answer(command)
        }
        let result = Recorder<Result<ControllerInfo, HostError>>()
        host.start { result.append($0) }
        loop.run()
        #expect(result.count == 0)
        loop.advance(by: .seconds(2))
        guard case .success(let info) = result.last else {
            Issue.record("initialisation should finish, got \(result.values)")
            return
        }
        #expect(info.warnings.contains { $0.contains("Read Local Version Information") && $0.contains("granted no command credit") })
        #expect(info.totalNumLEACLDataPackets == 3)
        host.shutdown()
        loop.run()
        #expect(loop.pendingWorkDescription == "nothing")
    }

    @Test("a controller that answers every init command with no credit: start fails at the second starvation")
    func initialisationGivesUpOnAStarvingController() {
        let loop = ManualEventLoop()
        let controller = ScriptedController()
        let host = HostStack(transport: controller, eventLoop: loop, configuration: Rig.defaultConfiguration)
        let model = ControllerModel()
        controller.setResponder { command in
            model.answer(command).map { $0.map { event -> HCIEvent in
                if case .commandComplete(_, let opcode, let returned) = event {
                    return .commandComplete(numHCICommandPackets: 0, opcode: opcode, returnParameters: returned)
                }
                return event
            } }
        }
        let result = Recorder<Result<ControllerInfo, HostError>>()
        host.start { result.append($0) }
        loop.run()
        // Reset answered (no credit); Read Local Version Information starves and fails; Read Local Supported
        // Features goes out with the credit given back, answered with no credit; Read Local Supported Commands
        // starves: the second unresponsive step ends the initialisation.
        loop.advance(by: .milliseconds(3999))
        #expect(result.count == 0)
        loop.advance(by: .milliseconds(1))
        guard case .failure(let error) = result.last else {
            Issue.record("start should fail, got \(result.values)")
            return
        }
        #expect(error.code == .unresponsiveController)
        #expect(error.reason.contains("granted no command credit"))
        #expect(controller.sentCommands.map(\.opcode) == [.reset, .readLocalSupportedFeatures])
        #expect(controller.isClosed)
        #expect(loop.pendingWorkDescription == "nothing")
        #expect(host.resources.isQuiescent)
    }

    @Test("a controller that starves every command still lets each one end within about one timeout")
    func everyAnswerWithoutCredit() {
        let rig = Rig(keepResponder: false)
        let model = ControllerModel()
        rig.controller.setResponder { command in
            model.answer(command).map { $0.map { event -> HCIEvent in
                if case .commandComplete(_, let opcode, let returned) = event {
                    return .commandComplete(numHCICommandPackets: 0, opcode: opcode, returnParameters: returned)
                }
                return event
            } }
        }
        let results = Recorder<Result<HCIReturnParameters, HostError>>()
        for _ in 0..<4 { rig.host.send(.leRand) { results.append($0) } }
        rig.loop.run()
        // The first is answered (and takes the credit away); the three others starve and fail together.
        #expect(results.count == 1)
        rig.loop.advance(by: .seconds(2))
        #expect(results.count == 4)
        #expect(results.values.dropFirst().allSatisfy {
            if case .failure(let error) = $0 { error.code == .unresponsiveController } else { false }
        })
        // One credit again: a new command is sent and answered.
        rig.host.send(.leRand) { results.append($0) }
        rig.loop.run()
        #expect((try? results.last?.get()) != nil)
        rig.expectNothingLeft()
    }
}
