import HCI

extension HostStack {
    /// The commands asked for ``ControllerDetails``, in order.
    static let detailCommands: [HCICommand] = [
        .leReadSupportedStates, .leReadFilterAcceptListSize, .leReadResolvingListSize, .leReadMaximumDataLength,
        .extended(.leReadNumberOfSupportedAdvertisingSets),
    ]

    /// Asks the controller what initialisation did not (``ControllerDetails``), each command only when its
    /// Supported_Commands bit is set, one after the other; `completion` runs on the loop with what it answered.
    public func readControllerDetails(completion: @escaping @Sendable (ControllerDetails) -> Void) {
        eventLoop.execute { [self] in
            let details = ControllerDetails(info: info)
            let listed = details.supportedCommands
            // An extended advertising command only on a controller this host drives with them (a controller takes
            // one family or the other until Reset, Vol 4 Part E §3.1.1).
            let asked = Self.detailCommands.filter { command in
                if case .extended = command, !info.usesExtendedAdvertising { return false }
                return listed.contains(command.opcode)
            }
            askInTurn(asked[...], details, completion)
        }
    }

    private func askInTurn(_ commands: ArraySlice<HCICommand>, _ details: ControllerDetails,
                           _ completion: @escaping @Sendable (ControllerDetails) -> Void) {
        guard let next = commands.first else { return completion(details) }
        command(next) { [self] result in
            var details = details
            if case .success(let answer) = result { details.take(answer) }
            askInTurn(commands.dropFirst(), details, completion)
        }
    }
}

extension ControllerDetails {
    /// Keeps what a successful answer says.
    mutating func take(_ answer: HCIReturnParameters) {
        switch answer {
        case .leReadSupportedStates(.success, let states):
            supportedStates = states
        case .leReadFilterAcceptListSize(.success, let size):
            filterAcceptListSize = Int(size)
        case .leReadResolvingListSize(.success, let size):
            resolvingListSize = Int(size)
        case .leReadMaximumDataLength(.success, let txOctets, let txTime, let rxOctets, let rxTime):
            maximumDataLength = DataLength(txOctets: Int(txOctets), txTime: Int(txTime), rxOctets: Int(rxOctets), rxTime: Int(rxTime))
        case .leReadNumberOfSupportedAdvertisingSets(.success, let count):
            advertisingSets = Int(count)
        default:
            break
        }
    }
}
