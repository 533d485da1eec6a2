import BluetoothCore
import BluetoothEngine
import GATT
import StackLauncher

/// The requests `blue serve`'s app answers itself (Core 5.4 Vol 3 Part F §3.4.4–§3.4.6, through a
/// ``GATTDeferral``): the values and declared 2902 descriptors with an `answer` in the definition, and with
/// `--personality android` all of them, as Android's `BluetoothGattServer` hands each read, write, descriptor
/// write and execute write to the app's callback and waits for its `sendResponse`: at once, later, with an error,
/// or never.
extension GATTServeState {
    /// Hands the requests of the values the app answers to it (once the stack is open, before serving).
    func installAppAnswers(on engine: any StackEngine) {
        let handles = state.withLock { $0.appAnswered }
        guard !handles.isEmpty else { return }
        engine.setGATTDeferral(GATTDeferral(handles: handles) { [self] request in answerAsTheApp(request) })
    }

    /// One request handed to the app (on the loop, inside the server's request handling: the answer goes in a
    /// later job).
    func answerAsTheApp(_ request: GATTPendingRequest) {
        let connection = request.connection
        switch request.kind {
        case .read(let handle, let offset):
            if let declared = state.withLock({ $0.declaredClientConfigurations[handle] }) {
                // The app answers for the descriptor, from what the central enabled.
                let bits = state.withLock { $0.subscriptions[connection.rawValue]?[declared.valueHandle]?.rawValue } ?? 0
                let value = [UInt8(truncatingIfNeeded: bits), UInt8(truncatingIfNeeded: bits >> 8)]
                respond(request, declared.answer ?? .atOnce, offset <= value.count ? .success(Array(value[offset...])) : .failure(GATTAttributeError(.invalidOffset)))
                return
            }
            let (value, entry) = state.withLock { ($0.values[handle] ?? [], $0.entries[handle]) }
            let answer = entry?.answer ?? .atOnce
            if offset == 0, let entry { noteRead(connection, entry, value, answer: answer) }
            respond(request, answer, offset <= value.count ? .success(Array(value[offset...])) : .failure(GATTAttributeError(.invalidOffset)))
        case .write(let handle, let value):
            if let declared = state.withLock({ $0.declaredClientConfigurations[handle] }) {
                let answer = declared.answer ?? .atOnce
                let label = state.withLock { $0.entries[declared.valueHandle]?.uuid }.map(ValueDecoding.label) ?? Dissection.hex16(declared.valueHandle)
                note(["event": "descriptorWrite", "peer": peer(connection), "uuid": "2902", "characteristic": label,
                      "hex": Hex.encode(value), "answer": answer.summary],
                     text: "write 2902 of \(label) by \(peer(connection)): \(ValueDecoding.hex(value)) (the app answers: \(answer.summary))")
                // Answered success, the server applies it and the subscription event follows.
                respond(request, answer, .success([]))
                return
            }
            let answer = state.withLock { $0.entries[handle]?.answer } ?? .atOnce
            noteAnswer(request, answer)
            respond(request, answer, .success([])) { [self] in
                applyWrite(connection, handle: handle, offset: 0, value: value, withResponse: true)
            }
        case .executeWrite(let writes):
            let answer = writes.lazy.compactMap { [self] write in state.withLock { $0.entries[write.handle]?.answer } }.first ?? .atOnce
            let parts = writes.map { "\(Dissection.hex16($0.handle)) at \($0.offset) (\($0.value.count) octets)" }.joined(separator: ", ")
            note(["event": "executeWrite", "peer": peer(connection), "writes": writes.count, "answer": answer.summary],
                 text: "execute write by \(peer(connection)): \(parts) (the app answers: \(answer.summary))")
            respond(request, answer, .success([])) { [self] in
                for write in writes {
                    applyWrite(connection, handle: write.handle, offset: write.offset, value: write.value, withResponse: true)
                }
            }
        }
    }

    private func noteAnswer(_ request: GATTPendingRequest, _ answer: ServeAnswer) {
        guard answer != .atOnce, case .write(let handle, let value) = request.kind else { return }
        let label = state.withLock { $0.entries[handle]?.uuid }.map(ValueDecoding.label) ?? Dissection.hex16(handle)
        note(["event": "writeRequest", "peer": peer(request.connection), "uuid": label, "hex": Hex.encode(value), "answer": answer.summary],
             text: "write request \(label) by \(peer(request.connection)): \(ValueDecoding.hex(value)) (the app answers: \(answer.summary))")
    }

    /// Sends the app's answer after its delay (its error in place of `result` when it has one), `accepted` first
    /// when it is a success; nothing when it never answers.
    private func respond(_ request: GATTPendingRequest, _ answer: ServeAnswer, _ result: Result<[UInt8], GATTAttributeError>,
                         accepted: (@Sendable () -> Void)? = nil) {
        guard !answer.never, let stack = stackBox.load() else { return }
        let engine = stack.engine
        let outcome: Result<[UInt8], GATTAttributeError> = answer.error.map { .failure(GATTAttributeError($0)) } ?? result
        let job: @Sendable () -> Void = {
            if case .success = outcome { accepted?() }
            engine.respondToGATTRequest(connectionHandle: request.connection.rawValue, id: request.id, result: outcome)
        }
        if answer.delay == .zero {
            engine.eventLoop.execute(job)
        } else {
            engine.eventLoop.schedule(after: answer.delay, job)
        }
    }
}
