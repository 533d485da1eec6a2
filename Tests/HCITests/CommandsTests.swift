import BluetoothCore
import HCI
import PropertyBased
import Testing
import TestSupport

@Suite struct CommandsTests {
    @Test func goldenVectorsBothWays() throws {
        for (command, text) in CommandVectors.all {
            let bytes = hex(text)
            #expect(!bytes.isEmpty, "bad hex for \(command.name)")
            #expect(command.encode() == bytes, "encode \(command.name)")
            #expect(try HCICommand(decoding: bytes) == command, "decode \(command.name)")
        }
    }

    @Test func leEncryptSpecSample() throws {
        // Core Vol 6 Part C §1.1: key 4c68...01bf, plaintext 0213...0213, both sent least significant octet first.
        let bytes = hex("172020 bf01fb9d4ef3bc36d874f5394138684c 1302f1e0dfcebdac7968574635241302")
        let command = try HCICommand(decoding: bytes)
        guard case .leEncrypt(let key, let plaintext) = command else {
            Issue.record("not LE Encrypt: \(command)")
            return
        }
        #expect(Array(key.reversed()) == hex("4c68384139f574d836bcf34e9dfb01bf"))
        #expect(Array(plaintext.reversed()) == hex("0213243546576879acbdcedfe0f10213"))
        #expect(command.opcode == .leEncrypt)
        #expect(command.opcode.ogf == 0x08 && command.opcode.ocf == 0x0017)
    }

    @Test func everyTableOpcodeHasAGoldenVectorAndACodec() throws {
        let covered = Set(CommandVectors.all.map(\.0.opcode))
        for (opcode, info) in HCICommand.table {
            #expect(covered.contains(opcode), "no golden vector for \(info.name)")
            // Zero-filled parameters of the spec length decode to the typed case and encode back unchanged.
            let bytes = [UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8), UInt8(info.parameterLength)]
                + [UInt8](repeating: 0, count: info.parameterLength)
            let command = try HCICommand(decoding: bytes)
            if case .unknown = command, command.extendedCommand == nil { Issue.record("\(info.name) decoded as unknown") }
            #expect(command.opcode == opcode)
            #expect(command.name == info.name)
            #expect(command.encode() == bytes, "\(info.name) zero round trip")
            #expect(opcode.description == "\(info.name) (\(opcode.hexValue))")
        }
        #expect(HCICommand.table.count == 73)
    }

    @Test func opcodeFields() {
        let opcode = HCIOpcode(ogf: 0x08, ocf: 0x0006)
        #expect(opcode == .leSetAdvertisingParameters)
        #expect(opcode.rawValue == 0x2006)
        #expect(opcode.description == "LE Set Advertising Parameters (0x2006)")
        #expect(HCIOpcode(0xFC01).description == "Unknown HCI command (0xFC01)")
        #expect(HCIOpcode(0xFC01).ogf == 0x3F)
        #expect(HCIOpcode.noOperation.description == "No Operation (0x0000)")
    }

    @Test func dissectionUsesSpecNames() {
        let dissection = HCICommand.leSetAdvertisingParameters(LEAdvertisingParameters()).dissection
        #expect(dissection.label == "LE Set Advertising Parameters")
        let fields = Dictionary(dissection.children.map { ($0.label, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
        #expect(fields["Advertising_Interval_Min"] == "0x0800 (1280.000 ms)")
        #expect(fields["Advertising_Type"] == "ADV_IND (0x00)")
        #expect(fields["Advertising_Channel_Map"] == "0x07 (channels 37, 38, 39)")
        #expect(fields["Opcode"]?.hasPrefix("LE Set Advertising Parameters (0x2006)") == true)
        let connect = HCICommand.leConnectionUpdate(handle: 0x40, parameters: CommandVectors.connection).dissection
        let text = connect.renderText()
        #expect(text.contains("Connection_Interval_Min: 0x0006 (7.500 ms)"))
        #expect(text.contains("Supervision_Timeout: 0x00C8 (2000 ms)"))
        #expect(text.contains("Connection_Handle: 0x0040"))
        for (command, _) in CommandVectors.all {
            let d = command.dissection
            #expect(d.label == command.name)
            #expect(!d.renderJSON().isEmpty)
        }
    }

    @Test func advertisingDataIsExposedRaw() throws {
        let command = try HCICommand(decoding: hex("0820 20 03 020106" + CommandVectors.zeros(28)))
        #expect(command == .leSetAdvertisingData([0x02, 0x01, 0x06]))
        // Longer data is truncated to 31 octets when encoding.
        let long = HCICommand.leSetAdvertisingData([UInt8](repeating: 7, count: 40)).encode()
        #expect(long.count == 35)
        #expect(long[3] == 31)
    }

    @Test func fixedSizeFieldsEncodeToSpecSize() {
        let short = HCICommand.leLongTermKeyRequestReply(handle: 1, longTermKey: [1, 2]).encode()
        #expect(short == hex("1a20 12 0100 0102") + [UInt8](repeating: 0, count: 14))
        let long = HCICommand.leEncrypt(key: [UInt8](repeating: 1, count: 20), plaintext: []).encode()
        #expect(long.count == 35)
    }

    @Test func propertyRoundTrips() async {
        await propertyCheck(
            count: 300,
            input: Gen.uint16(in: 0...0x0EFF), Gen.uint16(), Gen.uint8(), Gen.uint64(), Gen.int(in: 0...31), Gen.bool
        ) { handle, value, byte, wide, length, flag in
            let address = BluetoothAddress(wide, type: flag ? .random : .public)
            let data = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(byte)) }
            let parameters = LEConnectionParameters(intervalMin: value, intervalMax: value &+ 1, maxLatency: UInt16(byte),
                                                    supervisionTimeout: value, minCELength: 1, maxCELength: 2)
            let commands: [HCICommand] = [
                .disconnect(handle: handle, reason: HCIStatus(byte)),
                .setEventMask(wide),
                .leSetAdvertisingData(data), .leSetScanResponseData(data),
                .leSetRandomAddress(BluetoothAddress(wide, type: .random)),
                .leSetAdvertisingParameters(LEAdvertisingParameters(
                    intervalMin: value, intervalMax: value, advertisingType: LEAdvertisingType(byte),
                    ownAddressType: LEAddressType(byte & 3), peerAddressType: LEAddressType(address.type),
                    peerAddress: address, channelMap: byte, filterPolicy: byte)),
                .leCreateConnection(LECreateConnectionParameters(peer: address, connection: parameters)),
                .leConnectionUpdate(handle: handle, parameters: parameters),
                .leEnableEncryption(handle: handle, randomNumber: wide, encryptedDiversifier: value,
                                    longTermKey: (0..<16).map { UInt8(truncatingIfNeeded: $0 &+ Int(byte)) }),
                .leAddDeviceToFilterAcceptList(addressType: LEAddressType(address.type), address: address),
                .leSetScanEnable(enable: flag, filterDuplicates: !flag),
                .leSetPHY(handle: handle, allPHYs: byte, txPHYs: byte, rxPHYs: byte, phyOptions: value),
                .leSetDataLength(handle: handle, txOctets: value, txTime: value),
                .unknown(opcode: HCIOpcode(ogf: 0x3F, ocf: value), parameters: data),
            ]
            for command in commands {
                #expect((try? HCICommand(decoding: command.encode())) == command)
            }
        }
    }
}
