import ATT
import BluetoothCore

/// What one step of a client procedure asks the ``GATTClient`` to do.
enum GATTClientStep: Sendable {
    /// Send this request and wait for its answer.
    case request(ATTPDU)
    /// Send this command, then complete the procedure as written.
    case commandThenFinish(ATTPDU)
    /// The procedure is over.
    case finish(Result<GATTProcedureResult, GATTClientError>)

    static func fail(_ error: GATTClientError) -> GATTClientStep { .finish(.failure(error)) }
    static func invalid(_ reason: String) -> GATTClientStep { .finish(.failure(.invalidResponse(reason))) }
}

/// What a procedure knows of the client when it steps: the current ATT_MTU and the signer.
struct GATTClientContext: Sendable {
    var mtu: Int
    var signer: GATTClientSigner?
}

/// One running GATT client procedure (Core 5.4 Vol 3 Part G §4): a small state machine that turns responses into
/// the next request. The ``GATTClient`` has already checked that a response answers the outstanding request
/// (its opcode, or an Error Response naming the request's opcode) and passes the response's other rules
/// (zero handles) through ``ATTPDU/validate()``.
protocol GATTClientProcedureMachine: Sendable {
    /// The first step: the first request, a command, or an immediate result (nothing to ask, bad parameters).
    mutating func start(_ context: GATTClientContext) -> GATTClientStep
    /// The response (not an Error Response) to the outstanding request.
    mutating func receive(_ response: ATTPDU, _ context: GATTClientContext) -> GATTClientStep
    /// An Error Response to the outstanding request.
    mutating func receiveError(_ code: ATTErrorCode, handle: UInt16, _ context: GATTClientContext) -> GATTClientStep
}

extension GATTClientProcedureMachine {
    func unexpected(_ response: ATTPDU) -> GATTClientStep {
        .invalid("\(response.opcode) does not continue this procedure")
    }
}

func gattHex(_ value: UInt16) -> String { Dissection.hex16(value) }

extension GATTProcedure {
    /// The state machine that runs the procedure.
    func makeMachine() -> any GATTClientProcedureMachine {
        switch self {
        case .discoverAllPrimaryServices:
            return GATTClientPrimaryServiceDiscovery(uuid: nil)
        case .discoverPrimaryServices(let uuid):
            return GATTClientPrimaryServiceDiscovery(uuid: uuid)
        case .findIncludedServices(let range):
            return GATTClientIncludedServiceDiscovery(range: range)
        case .discoverAllCharacteristics(let range):
            return GATTClientCharacteristicDiscovery(range: range, uuid: nil)
        case .discoverCharacteristics(let range, let uuid):
            return GATTClientCharacteristicDiscovery(range: range, uuid: uuid)
        case .discoverAllDescriptors(let range):
            return GATTClientDescriptorDiscovery(range: range)
        case .readCharacteristicValue(let handle), .readDescriptor(let handle):
            return GATTClientRead(handle: handle, long: false)
        case .readLongCharacteristicValue(let handle), .readLongDescriptor(let handle):
            return GATTClientRead(handle: handle, long: true)
        case .readUsingCharacteristicUUID(let uuid, let range):
            return GATTClientReadByUUID(uuid: uuid, range: range)
        case .readMultipleCharacteristicValues(let handles):
            return GATTClientReadMultiple(handles: handles, variable: false)
        case .readMultipleVariableCharacteristicValues(let handles):
            return GATTClientReadMultiple(handles: handles, variable: true)
        case .writeWithoutResponse(let handle, let value):
            return GATTClientWriteCommand(handle: handle, value: value, signed: false)
        case .signedWriteWithoutResponse(let handle, let value):
            return GATTClientWriteCommand(handle: handle, value: value, signed: true)
        case .writeCharacteristicValue(let handle, let value), .writeDescriptor(let handle, let value):
            return GATTClientWrite(handle: handle, value: value)
        case .subscribe(let handle, let configuration):
            return GATTClientWrite(handle: handle, value: configuration.bytes)
        case .unsubscribe(let handle):
            return GATTClientWrite(handle: handle, value: GATTProcedure.ClientConfiguration().bytes)
        case .writeLongCharacteristicValue(let handle, let value), .writeLongDescriptor(let handle, let value):
            return GATTClientPreparedWrite(items: [GATTReliableWriteItem(handle: handle, value: value)])
        case .reliableWrite(let items):
            return GATTClientPreparedWrite(items: items)
        }
    }
}
