import BluetoothCore
import GATT
import Host
import BluetoothEngine

/// Answers the local GATT server's deferred requests (Core 5.4 Vol 3 Part F §3.4.4, §3.4.5, §3.4.6: the host
/// holds the response until the application answers) with the async handlers of ``Characteristic``s. The host
/// hands a request over on its loop; the handler runs on a task of its own; the answer goes back through
/// the engine's `respondToGATTRequest`. ATT is sequential, so at most one request per connection is outstanding.
extension StackCore {
    /// On the loop (called from inside the server's request handling: must not call back into the host now).
    func deferred(_ request: GATTPendingRequest) {
        let handle = request.connection.rawValue
        let central = links[handle]?.central
        let engine = engine
        let characteristics = localCharacteristics
        Task {
            let result = await Self.answer(request, central: central, characteristics: characteristics, engine: engine)
            engine.respondToGATTRequest(connectionHandle: handle, id: request.id, result: result)
        }
    }

    private static func answer(_ request: GATTPendingRequest, central: Central?, characteristics: [UInt16: Characteristic],
                               engine: any StackEngine) async -> Result<[UInt8], GATTAttributeError> {
        let connection = request.connection.rawValue
        switch request.kind {
        case .read(let handle, let offset):
            guard let characteristic = characteristics[handle] else { return .failure(GATTAttributeError(.unlikelyError)) }
            let value: [UInt8]
            if let handler = characteristic.state.withLock({ $0.readHandler }) {
                do {
                    value = try await handler(CharacteristicRead(central: central, connectionHandle: connection, offset: offset))
                } catch {
                    return .failure(attributeError(error))
                }
            } else {
                value = characteristic.value
            }
            guard offset <= value.count else { return .failure(GATTAttributeError(.invalidOffset)) }
            return .success(Array(value[offset...]))
        case .write(let handle, let value):
            return await write([(handle, value)], central: central, connection: connection, characteristics: characteristics, engine: engine)
        case .executeWrite(let writes):
            var merged: [(UInt16, [UInt8])] = []
            for write in writes {
                guard let characteristic = characteristics[write.handle] else { return .failure(GATTAttributeError(.unlikelyError)) }
                let old = merged.last(where: { $0.0 == write.handle })?.1 ?? characteristic.value
                guard write.offset <= old.count else { return .failure(GATTAttributeError(.invalidOffset)) }
                merged.append((write.handle, Array(old.prefix(write.offset)) + write.value))
            }
            return await write(merged, central: central, connection: connection, characteristics: characteristics, engine: engine)
        }
    }

    /// Asks each write handler, then stores every value (all or nothing, as an Execute Write requires).
    private static func write(_ writes: [(handle: UInt16, value: [UInt8])], central: Central?, connection: UInt16,
                              characteristics: [UInt16: Characteristic], engine: any StackEngine) async -> Result<[UInt8], GATTAttributeError> {
        var accepted: [(Characteristic, UInt16, CharacteristicWrite)] = []
        for (handle, value) in writes {
            guard let characteristic = characteristics[handle] else { return .failure(GATTAttributeError(.unlikelyError)) }
            let write = CharacteristicWrite(central: central, connectionHandle: connection, value: value)
            if let handler = characteristic.state.withLock({ $0.writeRequestHandler }) {
                do {
                    try await handler(write)
                } catch {
                    return .failure(attributeError(error))
                }
            }
            accepted.append((characteristic, handle, write))
        }
        for (characteristic, handle, write) in accepted {
            engine.updateValue(write.value, handle: handle, to: [], requireReady: false, completion: nil)
            characteristic.received(write)
        }
        return .success([])
    }

    /// The ATT error a handler's thrown error answers: its own code when it names one, *Unlikely Error* otherwise.
    static func attributeError(_ error: any Error) -> GATTAttributeError {
        if let attribute = error as? GATTAttributeError { return attribute }
        if let code = (error as? BluetoothLEError)?.attError { return GATTAttributeError(code) }
        return GATTAttributeError(.unlikelyError)
    }
}
