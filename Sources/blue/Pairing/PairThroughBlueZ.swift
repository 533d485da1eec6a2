import BlueZ
import BluetoothRuntime
import DBus
import Foundation
import Host
import StackLauncher
import OpenCoreBluetooth

/// `blue pair --hci bluez`: pairing through bluetoothd (BlueZ's doc/org.bluez.Device.rst Pair, with our
/// ``BlueZAgent`` answering its prompts under the IO capability the method implies, Core 5.4 Vol 3 Part H
/// §2.3.5.1). bluetoothd chooses LE Secure Connections or legacy pairing, generates the passkey it displays and keeps
/// the bond (/var/lib/bluetooth); what it does not report (keys, key size) is not printed.
extension Pair {
    /// The agent's capability for `--io`, else the method's.
    var bluezCapability: BlueZAgent.Capability {
        switch io ?? IOCapabilityChoice.allCases.first(where: { $0.capability == method.defaultIO }) ?? .noInputNoOutput {
        case .displayOnly: .displayOnly
        case .displayYesNo: .displayYesNo
        case .keyboardOnly: .keyboardOnly
        case .noInputNoOutput: .noInputNoOutput
        case .keyboardDisplay: .keyboardDisplay
        }
    }

    /// The options bluetoothd decides itself: one line, exit 64, before anything starts.
    func checkBlueZOptions() throws(CLIFailure) {
        let hci = stack.hci
        if method.isOutOfBand || method.secureConnections == .legacyOnly {
            throw CLIFailure(.usage, BluetoothdLimitation.pairingMethod(method.rawValue).message(hci: hci))
        }
        let kept: [(Bool, String)] = [(oobIn != nil, "--oob-in"), (oobOut != nil, "--oob-out"), (oobKey != nil, "--oob-key"),
                                      (bonds != nil, "--bonds"), (noBond, "--no-bond"), (reconnect, "--reconnect")]
        if let option = kept.first(where: \.0)?.1 {
            throw CLIFailure(.usage, BluetoothdLimitation.bonds(option: option).message(hci: hci))
        }
    }

    func pairThroughBlueZ(_ adapter: BlueZAdapterChoice) async throws(CLIFailure) {
        try checkBlueZOptions()
        let central = try await stack.openEngine(label: "pair")
        defer { central.shutdown() }
        let session: BlueZAdapterSession
        do {
            session = try await BlueZAdapterSession.open(adapter: adapter.name, busAddress: DBusConnection.systemBusAddress)
        } catch {
            throw CLIFailure(.unavailable, "cannot reach bluetoothd: \(error)")
        }
        defer { session.connection.close() }
        let prompts = PairPrompts(json: json, passkey: passkey)
        let agent: BlueZAgent
        do {
            agent = try await BlueZAgent.register(on: session.connection, path: "/org/opencorebluetooth/blue/agent\(getpid())",
                                                  capability: bluezCapability) { request, answer in prompts.handle(request, answer) }
        } catch {
            throw CLIFailure(.unavailable, "bluetoothd did not take our pairing agent: \(error)")
        }
        do {
            try await pairWithAgent(central: central, session: session, prompts: prompts)
        } catch {
            await agent.unregister()
            throw error
        }
        await agent.unregister()
    }

    private func pairWithAgent(central: any OpenedStack, session: BlueZAdapterSession, prompts: PairPrompts) async throws(CLIFailure) {
        let limit = duration(seconds: timeout)
        var report = try await central.findTarget(TargetMatcher(target), timeout: limit)
        let name = report.localName ?? report.address.string
        var device = BlueZPaths.device(adapter: session.adapterPath, address: report.address.string)
        let deviceInterface = BlueZAdapterSession.deviceInterface
        /// The device's properties as bluetoothd has them now (asked, not read from this connection's tree, which
        /// may not have seen the device the scan found on the other connection yet).
        func properties(_ path: String) async -> [String: DBusValue]? {
            try? await session.call(path, "org.freedesktop.DBus.Properties", "GetAll", [.string(deviceInterface)],
                                    timeout: .seconds(10)).body.first?.dictionaryValue?.mapValues(\.unwrapped)
        }
        func isPaired() async -> Bool { await properties(device)?["Paired"]?.boolValue == true }
        var summary: [String: Any] = ["target": name, "address": report.address.string, "requestedMethod": method.rawValue,
                                      "through": "bluetoothd"]
        if await isPaired() {
            guard repair else {
                summary["paired"] = false
                summary["usedExistingBond"] = true
                if json { Console.json(summary) } else {
                    Console.line("Already paired with \(name): bluetoothd holds the bond and encrypts with it (--repair pairs again)")
                }
                return
            }
            // --repair: bluetoothd forgets the device and its bond; discovery finds it again.
            do {
                _ = try await session.call(session.adapterPath, BlueZAdapterSession.adapterInterface, "RemoveDevice", [.objectPath(device)])
            } catch {
                throw CLIFailure(.failed, "bluetoothd did not remove the bond of \(name): \(error)")
            }
            report = try await central.findTarget(TargetMatcher(target), timeout: limit)
            device = BlueZPaths.device(adapter: session.adapterPath, address: report.address.string)
        }
        // Pair connects by itself and answers once the bond is stored and the services are resolved again (a
        // Connect first raced with that re-resolution in the VM: the answer never came).
        let result: Result<DBusMessage, DBusError>
        do {
            result = .success(try await session.call(device, deviceInterface, "Pair", timeout: .seconds(90)))
        } catch {
            result = .failure(error)
        }
        let after = await properties(device)
        _ = try? await session.call(device, deviceInterface, "Disconnect", timeout: .seconds(10))
        if case .failure(let error) = result {
            throw CLIFailure(.failed, "pairing with \(name) failed: \(Self.pairFailure(error))")
        }
        let bonded = after?["Bonded"]?.boolValue ?? after?["Paired"]?.boolValue ?? false
        summary["paired"] = true
        summary["method"] = prompts.method
        summary["bonded"] = bonded
        if json {
            Console.json(summary)
        } else {
            Console.line("Paired with \(name) through bluetoothd: \(prompts.method), bonded: \(bonded ? "yes" : "no")")
        }
    }

    /// bluetoothd's pairing errors (doc/org.bluez.Device.rst, Pair) as one phrase.
    static func pairFailure(_ error: DBusError) -> String {
        let phrases = [
            "org.bluez.Error.AuthenticationFailed": "authentication failed",
            "org.bluez.Error.AuthenticationRejected": "the pairing was rejected",
            "org.bluez.Error.AuthenticationCanceled": "the pairing was cancelled",
            "org.bluez.Error.AuthenticationTimeout": "the pairing timed out",
            "org.bluez.Error.ConnectionAttemptFailed": "the connection attempt failed",
            "org.bluez.Error.AlreadyExists": "already paired",
            "org.bluez.Error.InProgress": "a pairing is already in progress",
        ]
        guard let name = error.name, let phrase = phrases[name] else { return "bluetoothd: \(error)" }
        return "\(phrase) (bluetoothd: \(error.reason))"
    }
}

/// What `blue pair --hci bluez` answers bluetoothd's agent requests, as it answers our host's: Numeric Comparison
/// confirmed and printed, a displayed passkey printed, a passkey to type from `--passkey` or standard input, Just
/// Works allowed. It remembers which model bluetoothd used.
final class PairPrompts: Sendable {
    let json: Bool
    let passkey: UInt32?
    private let seen = LockedValue<String>("jw")

    init(json: Bool, passkey: UInt32?) {
        self.json = json
        self.passkey = passkey
    }

    /// "jw", "numeric" or "passkey".
    var method: String { seen.load() }

    func handle(_ request: BlueZAgent.Request, _ answer: @escaping @Sendable (BlueZAgent.Answer) -> Void) {
        let json = json
        switch request {
        case .confirmValue(_, let value):
            seen.store("numeric")
            Pair.say(json, ["event": "numericComparison", "value": Int(value)], "Numeric comparison: \(Pair.six(value)) (confirmed)")
            answer(.accept)
        case .displayPasskey(_, let value, let entered):
            let first = seen.withLock { method -> Bool in
                defer { method = "passkey" }
                return method != "passkey"
            }
            if first || entered == 0 {
                Pair.say(json, ["event": "displayPasskey", "passkey": Int(value)], "Passkey to type on the device: \(Pair.six(value))")
            }
        case .enterPasskey:
            seen.store("passkey")
            if let passkey {
                answer(.passkey(passkey))
            } else {
                DispatchQueue.global().async {
                    if !json { Console.line("Type the passkey shown on the device:") }
                    let line = readLine(strippingNewline: true)
                    if let typed = line.flatMap({ UInt32($0.trimmingCharacters(in: .whitespaces)) }) {
                        answer(.passkey(typed))
                    } else {
                        answer(.reject)
                    }
                }
            }
        case .authorizePairing, .authorizeService:
            answer(.accept)
        case .enterPinCode, .displayPinCode:
            answer(.reject)
        case .cancelled:
            break
        }
    }
}
