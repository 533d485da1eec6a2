import AdvertisingData
import BluetoothCore
import HCI
import BluetoothEngine

/// Controller initialisation (Core 5.4 Vol 4 Part E §7.3.2 Reset, §7.4.1 / §7.4.3 / §7.4.2 local version,
/// features and supported commands, §7.8.2 / §7.8.93 LE buffer size v1 / v2, §7.4.5 Read Buffer Size when LE has
/// no buffers of its own, §7.4.6 BD_ADDR, §7.3.1 / §7.8.1 event masks, §7.8.3 LE features, §7.8.4 random
/// address; the address is a random static one by default, Vol 6 Part B §1.3.2.1; §7.8.35 the suggested default data
/// length, ``HostConfiguration/suggestedDataLength``, when the controller has LE Data Packet Length Extension;
/// §7.8.57 the maximum advertising data length when the host will use the extended advertising commands).
///
/// Only Reset must succeed; any later step that fails or times out is noted in ``ControllerInfo/warnings`` and
/// the sequence goes on (Bumble's controller, for one, answers some commands oddly or not at all). But a second
/// step failing as an unresponsive controller (no answer, or no command credit, within the command timeout) ends
/// the initialisation: that controller is not usable, and going on would cost a timeout per remaining step.
extension HostStack {
    enum InitStep: CaseIterable {
        case reset, readLocalVersion, readLocalFeatures, readLocalCommands
        case leReadBufferSizeV2, leReadBufferSize, readBufferSize
        case readBDADDR, leReadLocalFeatures, setEventMask, leSetEventMask, setRandomAddress
        case leWriteSuggestedDefaultDataLength, leReadMaximumAdvertisingDataLength
    }

    func initialise(completion: @escaping (Result<ControllerInfo, HostError>) -> Void) {
        info = ControllerInfo()
        leBuffersRead = false
        run(.reset, unresponsive: 0, completion)
    }

    /// Runs `step` and the ones after it; `unresponsive` counts the steps that failed as an unresponsive controller.
    private func run(_ step: InitStep?, unresponsive: Int, _ completion: @escaping (Result<ControllerInfo, HostError>) -> Void) {
        guard lifecycle == .starting else { return }
        guard let step else {
            finishInitialisation(completion)
            return
        }
        guard let command = initCommand(step) else {
            run(nextStep(after: step), unresponsive: unresponsive, completion)
            return
        }
        self.command(command, timeout: configuration.initialisationCommandTimeout) { [self] result in
            guard lifecycle == .starting else {
                if case .failure(let error) = result { completion(.failure(error)) }
                return
            }
            var unresponsive = unresponsive
            switch result {
            case .success(let returned):
                apply(returned, of: step)
            case .failure(let error):
                if error.code == .unresponsiveController { unresponsive += 1 }
                if step == .reset || unresponsive >= 2 {
                    tearDown(HostError(error.code, "controller initialisation failed: \(error.reason)",
                                       status: error.status, opcode: error.opcode))
                    flushWrites()
                    transport.close()
                    completion(.failure(error))
                    return
                }
                info.warnings.append("\(command.name): \(error.reason)")
                failed(step)
            }
            run(nextStep(after: step), unresponsive: unresponsive, completion)
        }
    }

    private func initCommand(_ step: InitStep) -> HCICommand? {
        switch step {
        case .reset: return .reset
        case .readLocalVersion: return .readLocalVersionInformation
        case .readLocalFeatures: return .readLocalSupportedFeatures
        case .readLocalCommands: return .readLocalSupportedCommands
        case .leReadBufferSizeV2:
            let bit = SupportedCommandBit.leReadBufferSizeV2
            return info.supportsCommand(octet: bit.octet, bit: bit.bit) ? .leReadBufferSizeV2 : nil
        case .leReadBufferSize:
            return leBuffersKnown ? nil : .leReadBufferSize
        case .readBufferSize:
            return leBuffersKnown ? nil : .readBufferSize
        case .readBDADDR: return .readBDADDR
        case .setEventMask: return .setEventMask(configuration.eventMask)
        case .leSetEventMask:
            // With the extended commands: LE Extended Advertising Report (bit 12), LE Scan Timeout (16) and LE
            // Advertising Set Terminated (17) too (§7.8.1).
            // (LE features come first for this, as in Linux's init.)
            let extended = configuration.usesExtendedAdvertising && info.hasExtendedAdvertisingCommands
            return .leSetEventMask(configuration.leEventMask | (extended ? 1 << 12 | 1 << 16 | 1 << 17 : 0))
        case .leReadLocalFeatures: return .leReadLocalSupportedFeatures
        case .setRandomAddress:
            switch configuration.address {
            case .publicAddress:
                info.ownAddress = info.publicAddress
                return nil
            case .randomStatic(let seed):
                info.ownAddress = RandomStaticAddress.generate(seed: seed)
            case .fixedRandom(let address):
                info.ownAddress = BluetoothAddress(address.value, type: .random)
            }
            return .leSetRandomAddress(info.ownAddress)
        case .leWriteSuggestedDefaultDataLength:
            let bit = SupportedCommandBit.leWriteSuggestedDefaultDataLength
            guard let octets = configuration.suggestedDataLength.map({ min(max($0, 27), 251) }), octets > 27,
                  info.leFeatures & (1 << 5) != 0, info.supportsCommand(octet: bit.octet, bit: bit.bit) else { return nil }
            return .leWriteSuggestedDefaultDataLength(txOctets: octets, txTime: (octets + 14) * 8)
        case .leReadMaximumAdvertisingDataLength:
            info.usesExtendedAdvertising = configuration.usesExtendedAdvertising && info.hasExtendedAdvertisingCommands
            return info.usesExtendedAdvertising ? .extended(.leReadMaximumAdvertisingDataLength) : nil
        }
    }

    /// Whether an LE buffer size with at least one buffer was read.
    private var leBuffersKnown: Bool { leBuffersRead }

    private func nextStep(after step: InitStep) -> InitStep? {
        let all = InitStep.allCases
        guard let index = all.firstIndex(of: step), index + 1 < all.count else { return nil }
        return all[index + 1]
    }

    private func apply(_ returned: HCIReturnParameters, of step: InitStep) {
        switch returned {
        case .readLocalVersionInformation(_, let version):
            info.version = version
        case .readLocalSupportedFeatures(_, let features):
            info.lmpFeatures = features
        case .readLocalSupportedCommands(_, let commands):
            info.supportedCommands = commands
        case .leReadBufferSize(_, let length, let count), .leReadBufferSizeV2(_, let length, let count, _, _):
            takeBufferSize(length: Int(length), count: Int(count), from: step)
        case .readBufferSize(_, let length, _, let count, _):
            takeBufferSize(length: Int(length), count: Int(count), from: step)
        case .readBDADDR(_, let address):
            info.publicAddress = address
        case .leReadLocalSupportedFeatures(_, let features):
            info.leFeatures = features
        case .leReadMaximumAdvertisingDataLength(_, let length):
            info.maximumAdvertisingDataLength = max(31, min(Int(length), AdvertisingData.Kind.extended.maximumLength))
        default:
            break
        }
    }

    private func takeBufferSize(length: Int, count: Int, from step: InitStep) {
        if length > 0, count > 0 {
            info.leACLDataPacketLength = min(length, Int(UInt16.max))
            info.totalNumLEACLDataPackets = count
            leBuffersRead = true
        } else if step == .readBufferSize {
            info.warnings.append("the controller reports no ACL buffers; assuming 27 octets × 1")
            useDefaultBuffers()
        }
    }

    private func failed(_ step: InitStep) {
        if step == .readBufferSize, !leBuffersRead {
            info.warnings.append("no ACL buffer size could be read; assuming 27 octets × 1")
            useDefaultBuffers()
        }
        if step == .setRandomAddress {
            info.warnings.append("falling back to the public address \(info.publicAddress)")
            info.ownAddress = info.publicAddress
        }
    }

    private func useDefaultBuffers() {
        info.leACLDataPacketLength = 27
        info.totalNumLEACLDataPackets = 1
        leBuffersRead = true
    }

    private func finishInitialisation(_ completion: (Result<ControllerInfo, HostError>) -> Void) {
        fragmenter = try? ACLFragmenter(maximumDataLength: info.leACLDataPacketLength)
        outbound = ACLOutbound(totalBuffers: info.totalNumLEACLDataPackets)
        lifecycle = .ready
        loggers.hci.debug("controller ready on \(transport.name)", metadata: [
            "address": "\(info.ownAddress)", "aclBuffers": "\(info.totalNumLEACLDataPackets)x\(info.leACLDataPacketLength)",
        ])
        for warning in info.warnings { loggers.hci.debug("\(warning)") }
        completion(.success(info))
    }
}
