import BluetoothCore
import BluetoothRuntime
import HCI
import Testing
@testable import VirtualController

@Suite struct HCICommandTests {
    @Test func initSequenceAnswersWithCreditsAndReturnParameters() {
        let world = World(devices: 1)
        let host = world.hosts[0]
        let commands: [HCICommand] = [
            .reset, .readLocalVersionInformation, .readLocalSupportedCommands, .readLocalSupportedFeatures, .readBDADDR,
            .leReadBufferSize, .leReadBufferSizeV2, .leReadLocalSupportedFeatures, .leReadSupportedStates,
            .leReadMaximumDataLength, .leReadSuggestedDefaultDataLength, .leReadFilterAcceptListSize, .leRand,
            .hostBufferSize(HostBufferSize(aclDataPacketLength: 251, totalNumACLDataPackets: 10)),
            .setControllerToHostFlowControl(0),
        ]
        for command in commands { host.send(command) }
        world.loop.run()
        let events = host.drain()
        #expect(events.count == commands.count)
        for (command, event) in zip(commands, events) {
            guard case .commandComplete(let credits, let opcode, let returned) = event else {
                Issue.record("\(command.name): \(event)")
                continue
            }
            #expect(credits == 1)
            #expect(opcode == command.opcode)
            #expect(returned.status == .success)
        }
        #expect(events[1] == .commandComplete(numHCICommandPackets: 1, opcode: .readLocalVersionInformation,
                                              returnParameters: .readLocalVersionInformation(status: .success, version: ControllerCapabilities.version)))
        #expect(events[4] == .commandComplete(numHCICommandPackets: 1, opcode: .readBDADDR,
                                              returnParameters: .readBDADDR(status: .success, address: host.controller.publicAddress)))
        #expect(events[5] == .commandComplete(numHCICommandPackets: 1, opcode: .leReadBufferSize,
                                              returnParameters: .leReadBufferSize(status: .success, leACLDataPacketLength: 251, totalNumLEACLDataPackets: 8)))
        // The supported-commands mask has exactly the implemented commands.
        if case .commandComplete(_, _, .readLocalSupportedCommands(_, let mask)) = events[2] {
            #expect(mask[5] & 0xC0 == 0xC0)       // Set Event Mask, Reset
            #expect(mask[26] == 0xFF)             // scan response ... clear filter accept list
            #expect(mask[34] & 0x02 == 0)         // no LE Read Local P-256 Public Key
            #expect(mask.reduce(0) { $0 + $1.nonzeroBitCount } == ControllerCapabilities.implementedCommands.count)
        } else {
            Issue.record("no supported commands")
        }
        #expect(world.loop.pendingWorkDescription == "nothing")
    }

    @Test func unknownBadAndWrongStateCommands() {
        let world = World(devices: 1)
        let host = world.hosts[0]
        host.send(.unknown(opcode: HCIOpcode(0xFC55), parameters: [1, 2, 3]))
        world.loop.run()
        #expect(host.drain().map { $0.encode() } == [[0x0E, 0x04, 0x01, 0x55, 0xFC, 0x01]])

        // Bad parameters: interval min > max; a truncated packet of a known opcode; a bad enable value.
        host.send(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 0x100, intervalMax: 0x80)))
        host.sendRaw([0x06, 0x20, 0x02, 0x00, 0x01])
        host.sendRaw([0x0A, 0x20, 0x01, 0x07])
        host.sendRaw([0x0D, 0x20, 0x00])  // LE Create Connection, no parameters: Command Status 0x12
        host.sendRaw([0x01])               // no opcode at all: ignored
        world.loop.run()
        #expect(host.drain() == [
            .commandComplete(numHCICommandPackets: 1, opcode: .leSetAdvertisingParameters, returnParameters: .status(.invalidCommandParameters)),
            .commandComplete(numHCICommandPackets: 1, opcode: .leSetAdvertisingParameters, returnParameters: .status(.invalidCommandParameters)),
            .commandComplete(numHCICommandPackets: 1, opcode: .leSetAdvertisingEnable, returnParameters: .status(.invalidCommandParameters)),
            .commandStatus(status: .invalidCommandParameters, numHCICommandPackets: 1, opcode: .leCreateConnection),
        ])

        // Wrong state: parameters while advertising; a second create connection; cancel with none pending.
        host.send(.leSetAdvertisingEnable(true))
        host.send(.leSetAdvertisingParameters(LEAdvertisingParameters()))
        host.send(.leSetAdvertisingEnable(false))
        host.send(.leCreateConnectionCancel)
        host.send(.leCreateConnection(LECreateConnectionParameters(peer: BluetoothAddress(0x1234))))
        host.send(.leCreateConnection(LECreateConnectionParameters(peer: BluetoothAddress(0x1234))))
        host.send(.disconnect(handle: 0x0040, reason: .remoteUserTerminatedConnection))
        world.loop.run()
        #expect(host.status(.leSetAdvertisingParameters) == .commandDisallowed)
        #expect(host.status(.leCreateConnectionCancel) == .commandDisallowed)
        #expect(host.drain().suffix(3) == [
            .commandStatus(status: .success, numHCICommandPackets: 1, opcode: .leCreateConnection),
            .commandStatus(status: .commandDisallowed, numHCICommandPackets: 1, opcode: .leCreateConnection),
            .commandStatus(status: .unknownConnectionIdentifier, numHCICommandPackets: 1, opcode: .disconnect),
        ])
        // Cancel now works and reports the failed connection; connecting again is accepted.
        host.send(.leCreateConnectionCancel)
        host.send(.leCreateConnection(LECreateConnectionParameters(peer: BluetoothAddress(0x1234))))
        world.loop.run()
        let events = host.drain()
        #expect(events.count == 3)
        #expect(events.first?.commandResponse?.status == .success)
        if case .leMeta(.connectionComplete(let complete)) = events[1] {
            #expect(complete.status == .unknownConnectionIdentifier)
        } else {
            Issue.record("no connection complete after cancel: \(events)")
        }
        #expect(events[2] == .commandStatus(status: .success, numHCICommandPackets: 1, opcode: .leCreateConnection))
        host.send(.reset)
        world.loop.run()
        #expect(world.loop.pendingWorkDescription == "nothing")
    }

    @Test func hostileCommandBytesNeverCrash() {
        let world = World(devices: 1)
        let host = world.hosts[0]
        var random = SeededRandom(seed: 7)
        for _ in 0..<2000 {
            let opcodes = Array(HCICommand.table.keys).sorted()
            let opcode = random.next() % 4 == 0 ? HCIOpcode(UInt16(truncatingIfNeeded: random.next()))
                : opcodes[Int(random.next() % UInt64(opcodes.count))]
            let count = Int(random.next() % 40)
            let parameters = (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            host.sendRaw([UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8), UInt8(count)] + parameters)
            host.controller.receiveFromHost(H4Frame(type: .aclData, packet: parameters))
        }
        world.loop.run()
        world.loop.advance(by: .seconds(5))
        // Every command got exactly one answer.
        #expect(host.events.filter { $0.commandResponse != nil }.count == 2000)
        host.send(.reset)
        world.loop.run()
        #expect(world.loop.pendingWorkDescription == "nothing")
    }

    @Test func leEncryptAndRand() {
        let world = World(devices: 1)
        let host = world.hosts[0]
        // Core Vol 3 Part H §2.2.1 style check against the toolbox: key = plaintext = zero.
        host.send(.leEncrypt(key: [UInt8](repeating: 0, count: 16), plaintext: [UInt8](repeating: 0, count: 16)))
        host.send(.leRand)
        host.send(.leRand)
        world.loop.run()
        let events = host.drain()
        // AES-128(0, 0) = 66e94bd4ef8a2c3b884cfa59ca342b2e (FIPS-197), least significant octet first.
        #expect(events[0] == .commandComplete(numHCICommandPackets: 1, opcode: .leEncrypt, returnParameters:
            .leEncrypt(status: .success, encryptedData: Array(hexBytes("66e94bd4ef8a2c3b884cfa59ca342b2e").reversed()))))
        #expect(events[1] != events[2])
    }
}

/// SplitMix64 for the tests (same as TestSupport's SeededGenerator).
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func hexBytes(_ text: String) -> [UInt8] { (try? Hex.decode(text)) ?? [] }
