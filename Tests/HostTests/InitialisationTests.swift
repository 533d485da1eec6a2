import BluetoothCore
import BluetoothRuntime
import HCI
import Host
import TestSupport
import Testing
import BluetoothEngine

@Suite("Controller initialisation")
struct InitialisationTests {
    @Test("the init sequence sends these exact commands, in this order, one at a time")
    func exactSequence() throws {
        let loop = ManualEventLoop()
        let controller = ScriptedController()
        let host = HostStack(transport: controller, eventLoop: loop, configuration: Rig.defaultConfiguration)
        let result = Recorder<Result<ControllerInfo, HostError>>()
        host.start { result.append($0) }
        loop.run()
        // No answer yet: only Reset went out (one credit).
        #expect(controller.sentBytes == [hex("01 03 0C 00")])
        let model = ControllerModel()
        controller.setResponder { model.answer($0) }
        controller.deliver(.complete(.reset))
        loop.run()
        let address = RandomStaticAddress.generate(seed: 7)
        #expect(controller.sentBytes == [
            hex("01 03 0C 00"),  // Reset
            hex("01 01 10 00"),  // Read Local Version Information
            hex("01 03 10 00"),  // Read Local Supported Features
            hex("01 02 10 00"),  // Read Local Supported Commands
            hex("01 02 20 00"),  // LE Read Buffer Size [v1] (v2 not in the supported commands)
            hex("01 09 10 00"),  // Read BD_ADDR
            hex("01 03 20 00"),  // LE Read Local Supported Features
            hex("01 01 0C 08 90 88 00 02 00 80 00 20"),  // Set Event Mask
            hex("01 01 20 08 FF 0F 00 00 00 00 00 00"),  // LE Set Event Mask (no extended advertising: bits 0–11)
            [0x01, 0x05, 0x20, 0x06] + address.littleEndianBytes,  // LE Set Random Address
            hex("01 24 20 04 FB 00 48 08"),  // LE Write Suggested Default Data Length: 251 octets, 2120 µs
        ])
        let info = try #require(try result.last?.get())
        #expect(info.leACLDataPacketLength == 27)
        #expect(info.totalNumLEACLDataPackets == 3)
        #expect(info.publicAddress == BluetoothAddress(0x0011_2233_4455))
        #expect(info.ownAddress == address)
        #expect(address.isValidRandomStatic && address.value >> 46 == 0b11)
        #expect(info.version?.companyIdentifier == CompanyIdentifier(0x05F1))
        #expect(info.leFeatures == 0x3F)
        #expect(info.warnings.isEmpty)
        #expect(host.freeACLBuffers == 3)
        host.shutdown()
        loop.run()
        #expect(controller.isClosed)
        #expect(loop.pendingWorkDescription == "nothing")
        #expect(host.resources.isQuiescent)
    }

    @Test("LE Read Buffer Size v2 when supported; zero LE buffers fall back to Read Buffer Size")
    func bufferSizeFallbacks() throws {
        var model = ControllerModel()
        model.supportsLEReadBufferSizeV2 = true
        let withV2 = Rig(model: model)
        #expect(withV2.info?.leACLDataPacketLength == 251)
        #expect(withV2.info?.totalNumLEACLDataPackets == 4)
        withV2.expectNothingLeft()

        model.v2BufferLength = 0
        model.v2BufferCount = 0
        model.leBufferLength = 0
        model.leBufferCount = 0
        let loop = ManualEventLoop()
        let controller = ScriptedController()
        let host = HostStack(transport: controller, eventLoop: loop, configuration: Rig.defaultConfiguration)
        controller.setResponder { [model] in model.answer($0) }
        let result = Recorder<Result<ControllerInfo, HostError>>()
        host.start { result.append($0) }
        loop.run()
        let opcodes = controller.sentCommands.map(\.opcode)
        #expect(opcodes.prefix(7) == [.reset, .readLocalVersionInformation, .readLocalSupportedFeatures,
                                      .readLocalSupportedCommands, .leReadBufferSizeV2, .leReadBufferSize, .readBufferSize])
        let info = try #require(try result.last?.get())
        #expect(info.leACLDataPacketLength == 1021)
        #expect(info.totalNumLEACLDataPackets == 8)
        #expect(loop.pendingWorkDescription == "nothing")
    }

    @Test("no buffers anywhere: 27 × 1 with a warning")
    func noBuffersAtAll() {
        var model = ControllerModel()
        model.leBufferLength = 0
        model.sharedBufferLength = 0
        let rig = Rig(model: model)
        #expect(rig.info?.leACLDataPacketLength == 27)
        #expect(rig.info?.totalNumLEACLDataPackets == 1)
        #expect(rig.info?.warnings.contains { $0.contains("27 octets × 1") } == true)
        rig.expectNothingLeft()
    }

    @Test("an ignored init command times out, is reported, and initialisation goes on")
    func ignoredCommandDuringInit() throws {
        let loop = ManualEventLoop()
        let controller = ScriptedController()
        let host = HostStack(transport: controller, eventLoop: loop, configuration: Rig.defaultConfiguration)
        var model = ControllerModel()
        model.ignored = [.readLocalSupportedCommands]
        controller.setResponder { [model] in model.answer($0) }
        let events = Recorder<HostEvent>()
        host.setEventHandler { events.append($0) }
        let result = Recorder<Result<ControllerInfo, HostError>>()
        host.start { result.append($0) }
        loop.run()
        #expect(result.count == 0)
        #expect(controller.sentCommands.last == .readLocalSupportedCommands)
        // Initialisation commands wait initialisationCommandTimeout (5 s), not the 2 s of a running controller.
        #expect(loop.pendingWorkDescription == "0 jobs, 1 timer (next at 5.000000s)")
        loop.advance(by: .milliseconds(4999))
        #expect(result.count == 0)
        loop.advance(by: .milliseconds(1))
        let info = try #require(try result.last?.get())
        #expect(info.warnings == ["Read Local Supported Commands: the controller did not answer Read Local Supported Commands within 5.0 seconds"])
        guard case .controllerError(let error) = events.values.first else {
            Issue.record("expected a controller error, got \(events.values)")
            return
        }
        #expect(error.code == .unresponsiveController)
        #expect(error.opcode == .readLocalSupportedCommands)
        #expect(info.ownAddress.isValidRandomStatic)
        #expect(loop.pendingWorkDescription == "nothing")
        #expect(host.resources.isQuiescent)
    }

    @Test("Reset unanswered: start fails as an unresponsive controller and the transport is closed")
    func resetUnanswered() {
        let loop = ManualEventLoop()
        let controller = ScriptedController()
        let host = HostStack(transport: controller, eventLoop: loop, configuration: Rig.defaultConfiguration)
        let result = Recorder<Result<ControllerInfo, HostError>>()
        host.start { result.append($0) }
        loop.advance(by: .milliseconds(4999))
        #expect(result.count == 0, "Reset waits the initialisation timeout (a hub just started on a busy machine)")
        loop.advance(by: .milliseconds(1))
        guard case .failure(let error) = result.last else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .unresponsiveController)
        #expect(error.reason.hasSuffix("the controller did not answer Reset within 5.0 seconds"), "\(error.reason)")
        #expect(controller.isClosed)
        #expect(loop.pendingWorkDescription == "nothing")
        #expect(host.resources.isQuiescent)
    }

    @Test("public address policy sends no LE Set Random Address; fixed random addresses are used as given")
    func addressPolicies() {
        let publicRig = Rig(configuration: HostConfiguration(address: .publicAddress))
        #expect(publicRig.info?.ownAddress == BluetoothAddress(0x0011_2233_4455))
        #expect(publicRig.info?.ownAddressType == .public)
        publicRig.expectNothingLeft()

        let fixed = BluetoothAddress(0xC0FF_EE00_1122, type: .random)
        let fixedRig = Rig(configuration: HostConfiguration(address: .fixedRandom(fixed)))
        #expect(fixedRig.info?.ownAddress == fixed)
        fixedRig.expectNothingLeft()
    }

    @Test("random static addresses from many seeds have 0b11 on top and a valid random part")
    func randomStaticAddresses() {
        var generator = SeededGenerator(seed: 42)
        for _ in 0..<1000 {
            let address = RandomStaticAddress.generate(using: &generator)
            #expect(address.isValidRandomStatic)
            #expect(address.type == .random)
        }
        #expect(RandomStaticAddress.generate(seed: 1) == RandomStaticAddress.generate(seed: 1))
        #expect(RandomStaticAddress.generate(seed: 1) != RandomStaticAddress.generate(seed: 2))
    }
}
