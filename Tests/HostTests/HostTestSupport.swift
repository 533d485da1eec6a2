import BluetoothCore
import BluetoothRuntime
import HCI
import Host
import Testing
import BluetoothEngine

/// A host on a manual loop over a scripted controller, started and initialised.
struct Rig {
    let loop = ManualEventLoop()
    let controller = ScriptedController()
    let host: HostStack
    let events = Recorder<HostEvent>()
    let pdus = Recorder<(Connection, [UInt8])>()
    let info: ControllerInfo?

    init(model: ControllerModel = ControllerModel(), configuration: HostConfiguration = Rig.defaultConfiguration,
         keepResponder: Bool = true) {
        host = HostStack(transport: controller, eventLoop: loop, configuration: configuration)
        let events = self.events, pdus = self.pdus
        host.setEventHandler { events.append($0) }
        host.setL2CAPHandler { pdus.append(($0, $1)) }
        controller.setResponder { model.answer($0) }
        let result = Recorder<Result<ControllerInfo, HostError>>()
        host.start { result.append($0) }
        loop.run()
        info = try? result.last?.get()
        if !keepResponder { controller.setResponder(nil) }
        controller.clearSent()
    }

    static var defaultConfiguration: HostConfiguration {
        HostConfiguration(commandTimeout: .seconds(2), address: .randomStatic(seed: 7))
    }

    /// The peer's side of a new connection, delivered and processed.
    @discardableResult
    func connect(handle: UInt16, role: LERole = .peripheral,
                 peer: BluetoothAddress = BluetoothAddress(0xC1_2233_4455_66, type: .random)) -> Connection? {
        controller.deliver(.leMeta(.connectionComplete(LEConnectionComplete(
            handle: handle, role: role, peerAddressType: LEAddressType(peer.type), peerAddress: peer,
            connectionInterval: 0x0018, supervisionTimeout: 0x01F4))))
        loop.run()
        return host.openConnections.first { $0.handle == handle }
    }

    /// The leak check: nothing left on the loop and nothing pending in the host (connections may stay open).
    func expectNothingLeft(sourceLocation: SourceLocation = #_sourceLocation) {
        loop.run()
        #expect(loop.pendingWorkDescription == "nothing", sourceLocation: sourceLocation)
        #expect(host.resources.isQuiescent, "\(host.resources)", sourceLocation: sourceLocation)
    }
}

extension HCIEvent {
    static func complete(_ opcode: HCIOpcode, _ returned: HCIReturnParameters = .status(.success), credits: UInt8 = 1) -> HCIEvent {
        .commandComplete(numHCICommandPackets: credits, opcode: opcode, returnParameters: returned)
    }

    static func status(_ opcode: HCIOpcode, _ status: HCIStatus = .success, credits: UInt8 = 1) -> HCIEvent {
        .commandStatus(status: status, numHCICommandPackets: credits, opcode: opcode)
    }
}
