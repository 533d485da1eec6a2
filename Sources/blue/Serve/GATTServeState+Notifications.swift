import BluetoothCore
import BluetoothEngine
import BluetoothRuntime
import GATT
import StackLauncher

/// What `blue serve` notifies (Core 5.4 Vol 3 Part G §4.10, §4.11): the generators' values, the chat's copies,
/// echoes and the value for a new subscriber; and, for a server that takes one at a time (Android's
/// `notifyCharacteristicChanged`, which answers `ERROR_GATT_WRITE_REQUEST_BUSY` until `onNotificationSent`), the
/// value in flight per central.
extension GATTServeState {
    /// Sends `value` of the characteristic value `handle` to the subscribers among `targets` (nil: all of them),
    /// as a notification or an indication, in a later job on the stack's loop (never inside the server's own
    /// request handling, and after the response to the request being answered).
    func send(_ value: [UInt8], handle: UInt16, to targets: Set<UInt16>?) {
        guard let stack = stackBox.load() else { return }
        let engine = stack.engine
        engine.eventLoop.execute { [self] in
            guard behaviour.oneValueInFlight else {
                engine.updateValue(value, handle: handle, to: targets, completion: nil)
                return
            }
            let subscribed = state.withLock { state in
                state.subscriptions.filter { !($0.value[handle] ?? []).isEmpty }.keys.sorted()
            }
            for connection in subscribed where targets?.contains(connection) ?? true {
                sendOne(value, handle: handle, to: connection, engine)
            }
        }
    }

    /// One value to one central when nothing else is in flight to it; refused and printed (as an Android app
    /// sees `ERROR_GATT_WRITE_REQUEST_BUSY`) when something is. A notification is sent once the host has queued
    /// it (`onNotificationSent`); an indication once confirmed (or failed).
    private func sendOne(_ value: [UInt8], handle: UInt16, to connection: UInt16, _ engine: any StackEngine) {
        let (busy, indicates) = state.withLock { state -> (Bool, Bool) in
            if state.inFlight[connection] != nil { return (true, false) }
            state.inFlight[connection] = handle
            return (false, state.subscriptions[connection]?[handle]?.contains(.indication) ?? false)
        }
        guard !busy else {
            noteBusy(handle, connection, because: "the last one is not sent yet")
            return
        }
        engine.updateValue(value, handle: handle, to: [connection], requireReady: true) { [self] result in
            switch result {
            case .success(let sent):
                if !indicates || sent.isEmpty { endFlight(connection) }
            case .failure(let error):
                endFlight(connection)
                noteBusy(handle, connection, because: error.reason)
            }
        }
    }

    private func endFlight(_ connection: UInt16) {
        _ = state.withLock { $0.inFlight.removeValue(forKey: connection) }
    }

    private func noteBusy(_ handle: UInt16, _ connection: UInt16, because reason: String) {
        let uuid = state.withLock { $0.entries[handle]?.uuid }
        let label = uuid.map(ValueDecoding.label) ?? Dissection.hex16(handle)
        note(["event": "notificationBusy", "peer": peer(GATTConnectionID(connection)), "uuid": uuid?.uuidString ?? "", "reason": reason],
             text: "notification of \(label) to \(peer(GATTConnectionID(connection))) refused: \(reason) (ERROR_GATT_WRITE_REQUEST_BUSY)")
    }

    /// Arms each generator's timer on the stack's loop.
    func startGenerators() {
        guard let stack = stackBox.load() else { return }
        let generators = state.withLock { state in
            state.entries.compactMap { handle, entry in entry.generator.map { (handle, $0) } }.sorted { $0.0 < $1.0 }
        }
        for (handle, generator) in generators { tick(handle, generator, 0, stack.engine.eventLoop) }
    }

    private func tick(_ handle: UInt16, _ generator: ServeGenerator, _ number: UInt64, _ loop: any EventLoop) {
        loop.schedule(after: generator.interval) { [self] in
            guard !state.withLock({ $0.stopped }) else { return }
            let value = generator.value(tick: number)
            state.withLock { $0.values[handle] = value }
            send(value, handle: handle, to: nil)
            tick(handle, generator, number &+ 1, loop)
        }
    }

    /// As peripheral, the connection parameters the platform asks for once connected (L2CAP Connection Parameter
    /// Update Request, Vol 3 Part A §4.20), and the central's answer printed.
    func askForParameters(_ connection: Connection, _ engine: any StackEngine) {
        guard connection.role == .peripheral, let request = parameterRequest?(connection.parameters) else { return }
        let peer = connection.peer.string
        let asked = "interval \(Double(request.intervalMin) * 1.25)–\(Double(request.intervalMax) * 1.25) ms, latency "
            + "\(request.peripheralLatency), timeout \(Int(request.timeoutMultiplier) * 10) ms"
        engine.requestConnectionParameterUpdate(connectionHandle: connection.handle, request) { [self] result in
            let accepted = (try? result.get()) ?? false
            note(["event": "parametersAsked", "peer": peer, "intervalMin": Int(request.intervalMin), "intervalMax": Int(request.intervalMax),
                  "latency": Int(request.peripheralLatency), "timeout": Int(request.timeoutMultiplier), "accepted": accepted],
                 text: "asked \(peer) for \(asked): \(accepted ? "accepted" : "refused")")
        }
    }
}
