import DBus

/// How the engine's D-Bus session starts (``BlueZEngine``): the session opened, handed to
/// the client to keep and wire (it refuses when it was shut down meanwhile, and the connection is closed), then the
/// `OCB_BLUEZ_AGENT` agent registered when one is asked for. What went wrong goes to the client's one-line reporter.
enum BlueZClientStart {
    /// No session (bluetoothd unreachable, no such adapter): said to the reporter.
    case failed
    /// The client was shut down while the session opened.
    case dropped
    /// Running: the adapter's power state, and the agent registered (if any).
    case started(powered: Bool, agent: BlueZAgent?)

    static func run(adapter: String?, busAddress: String, pairingAgent: BlueZPairingAgent?, agentPath: String,
                    prompt: @escaping @Sendable (String) -> Void, report: @escaping @Sendable (String) -> Void,
                    adopt: (BlueZAdapterSession) -> Bool) async -> BlueZClientStart {
        let session: BlueZAdapterSession
        do throws(DBusError) {
            session = try await BlueZAdapterSession.open(adapter: adapter, busAddress: busAddress)
        } catch {
            report("no BlueZ backend: \(error)")
            return .failed
        }
        guard adopt(session) else {
            session.connection.close()
            return .dropped
        }
        var agent: BlueZAgent?
        if let pairingAgent {
            do {
                agent = try await pairingAgent.register(on: session.connection, path: agentPath, report: prompt)
            } catch {
                report("bluetoothd did not take our pairing agent (\(BlueZPairingAgent.environmentVariable)): \(error)")
            }
        }
        return .started(powered: session.powered, agent: agent)
    }
}
