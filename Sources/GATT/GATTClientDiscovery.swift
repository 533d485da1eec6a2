import ATT
import BluetoothCore
import DequeModule

private let primaryServiceType: UInt16 = 0x2800
private let includeType: UInt16 = 0x2802
private let characteristicType: UInt16 = 0x2803

/// Primary service discovery (Core 5.4 Vol 3 Part G §4.4.1 all, §4.4.2 by UUID).
///
/// All: Read By Group Type Requests (0x2800) from `start` to 0xFFFF. By UUID: Find By Type Value Requests
/// (0x2800 = UUID). Each response's groups must start at or after `start`, not go backwards and end at or
/// after their start; the next request starts after the last group's end, so every continuation strictly
/// advances. The procedure ends on *Attribute Not Found* or a group ending at 0xFFFF.
struct GATTClientPrimaryServiceDiscovery: GATTClientProcedureMachine {
    let uuid: BluetoothUUID?
    var start: UInt16 = 0x0001
    var services: [GATTDiscoveredService] = []

    init(uuid: BluetoothUUID?) { self.uuid = uuid }

    mutating func start(_ context: GATTClientContext) -> GATTClientStep { nextRequest() }

    private func nextRequest() -> GATTClientStep {
        let range = ATTHandleRange(start: start, end: 0xFFFF)
        if let uuid {
            return .request(.findByTypeValueRequest(range: range, attributeType: primaryServiceType, value: uuid.littleEndianBytes))
        }
        return .request(.readByGroupTypeRequest(range: range, groupType: BluetoothUUID(primaryServiceType)))
    }

    mutating func receive(_ response: ATTPDU, _ context: GATTClientContext) -> GATTClientStep {
        var groups: [(start: UInt16, end: UInt16, uuid: BluetoothUUID)] = []
        switch response {
        case .readByGroupTypeResponse(let list) where uuid == nil:
            for element in list.elements {
                guard element.value.count == 2 || element.value.count == 16,
                      let serviceUUID = try? BluetoothUUID(littleEndianBytes: element.value)
                else {
                    return .invalid("a service UUID has 2 or 16 octets, not \(element.value.count)")
                }
                groups.append((element.handle, element.endGroupHandle, serviceUUID))
            }
        case .findByTypeValueResponse(let list):
            guard let uuid else { return unexpected(response) }
            groups = list.map { ($0.foundAttributeHandle, $0.groupEndHandle, uuid) }
        default:
            return unexpected(response)
        }
        var floor = start
        for group in groups {
            guard group.start >= floor else {
                return .invalid("service at \(gattHex(group.start)) is before \(gattHex(floor)): handles go backwards")
            }
            guard group.end >= group.start else {
                return .invalid("service at \(gattHex(group.start)) ends before it starts (\(gattHex(group.end)))")
            }
            services.append(GATTDiscoveredService(range: ATTHandleRange(start: group.start, end: group.end), uuid: group.uuid))
            if group.end == 0xFFFF { return .finish(.success(.services(services))) }
            floor = group.end + 1
        }
        guard floor > start else { return .invalid("the response lists no service") }
        start = floor
        return nextRequest()
    }

    mutating func receiveError(_ code: ATTErrorCode, handle: UInt16, _ context: GATTClientContext) -> GATTClientStep {
        if code == .attributeNotFound { return .finish(.success(.services(services))) }
        return .fail(.attError(code, handle: handle))
    }
}

/// Find Included Services (Core 5.4 Vol 3 Part G §4.5.1): Read By Type Requests (0x2802) over the service range,
/// continuing after the last include declaration; an include declaration without a UUID (a 128-bit service)
/// is completed by a Read Request of the included service's declaration, whose value is the 16-octet UUID.
struct GATTClientIncludedServiceDiscovery: GATTClientProcedureMachine {
    let range: ATTHandleRange
    var start: UInt16
    var found: [GATTDiscoveredIncludedService] = []
    /// Indexes into `found` whose UUID is still to be read (placeholder UUID until then).
    var unresolved: Deque<Int> = []
    /// Where the next Read By Type starts, nil when the range is exhausted.
    var next: UInt16?

    init(range: ATTHandleRange) {
        self.range = range
        self.start = range.start
    }

    mutating func start(_ context: GATTClientContext) -> GATTClientStep {
        guard range.isValid else { return .fail(.invalidParameter("service range \(range) is not valid")) }
        return readIncludes()
    }

    private func readIncludes() -> GATTClientStep {
        .request(.readByTypeRequest(range: ATTHandleRange(start: start, end: range.end), attributeType: BluetoothUUID(includeType)))
    }

    private func proceed() -> GATTClientStep {
        if let index = unresolved.first, found.indices.contains(index) {
            return .request(.readRequest(handle: found[index].service.startHandle))
        }
        if next != nil { return readIncludes() }
        return .finish(.success(.includedServices(found)))
    }

    mutating func receive(_ response: ATTPDU, _ context: GATTClientContext) -> GATTClientStep {
        switch response {
        case .readByTypeResponse(let list):
            var floor = start
            for element in list.elements {
                guard element.handle >= floor, element.handle <= range.end else {
                    return .invalid("include declaration at \(gattHex(element.handle)) is outside \(gattHex(floor))–\(gattHex(range.end)) or goes backwards")
                }
                let value = element.value
                guard value.count == 6 || value.count == 4 else {
                    return .invalid("an include declaration value has 4 or 6 octets, not \(value.count)")
                }
                let serviceStart = UInt16(value[0]) | UInt16(value[1]) << 8
                let serviceEnd = UInt16(value[2]) | UInt16(value[3]) << 8
                let included = ATTHandleRange(start: serviceStart, end: serviceEnd)
                guard included.isValid else {
                    return .invalid("included service range \(included) is not valid")
                }
                var uuid = BluetoothUUID(0)
                if value.count == 6 {
                    uuid = BluetoothUUID(UInt16(value[4]) | UInt16(value[5]) << 8)
                } else {
                    unresolved.append(found.count)
                }
                found.append(GATTDiscoveredIncludedService(declarationHandle: element.handle, service: GATTDiscoveredService(range: included, uuid: uuid)))
                floor = element.handle == UInt16.max ? UInt16.max : element.handle + 1
                if element.handle == range.end { break }
            }
            let last = found.last?.declarationHandle ?? 0
            if last >= range.end {
                next = nil
            } else {
                guard floor > start else { return .invalid("the response lists no include declaration") }
                next = floor
                start = floor
            }
            return proceed()
        case .readResponse(let value):
            guard let index = unresolved.first, found.indices.contains(index) else { return unexpected(response) }
            guard value.count == 16, let uuid = try? BluetoothUUID(littleEndianBytes: value) else {
                return .invalid("a 128-bit included service declaration has a 16-octet value, not \(value.count)")
            }
            found[index].service.uuid = uuid
            unresolved.removeFirst()
            return proceed()
        default:
            return unexpected(response)
        }
    }

    mutating func receiveError(_ code: ATTErrorCode, handle: UInt16, _ context: GATTClientContext) -> GATTClientStep {
        if code == .attributeNotFound, unresolved.isEmpty {
            next = nil
            return .finish(.success(.includedServices(found)))
        }
        return .fail(.attError(code, handle: handle))
    }
}

/// Characteristic discovery (Core 5.4 Vol 3 Part G §4.6.1 all, §4.6.2 by UUID): Read By Type Requests (0x2803)
/// over the service range, continuing after the last declaration handle until *Attribute Not Found* or the
/// range's end. The end handle of each characteristic is the handle before the next declaration, or the end of
/// the range for the last; by-UUID discovery reads them all (so end handles are right) and keeps `uuid`'s.
struct GATTClientCharacteristicDiscovery: GATTClientProcedureMachine {
    let range: ATTHandleRange
    let uuid: BluetoothUUID?
    var start: UInt16
    var declarations: [(handle: UInt16, properties: UInt8, valueHandle: UInt16, uuid: BluetoothUUID)] = []

    init(range: ATTHandleRange, uuid: BluetoothUUID?) {
        self.range = range
        self.uuid = uuid
        self.start = range.start
    }

    mutating func start(_ context: GATTClientContext) -> GATTClientStep {
        guard range.isValid else { return .fail(.invalidParameter("service range \(range) is not valid")) }
        return nextRequest()
    }

    private func nextRequest() -> GATTClientStep {
        .request(.readByTypeRequest(range: ATTHandleRange(start: start, end: range.end), attributeType: BluetoothUUID(characteristicType)))
    }

    private func finish() -> GATTClientStep {
        var result: [GATTDiscoveredCharacteristic] = []
        for (index, declaration) in declarations.enumerated() {
            var end = range.end
            if index + 1 < declarations.count { end = declarations[index + 1].handle - 1 }
            let characteristic = GATTDiscoveredCharacteristic(
                declarationHandle: declaration.handle,
                properties: GATTDiscoveredCharacteristic.Properties(rawValue: declaration.properties),
                valueHandle: declaration.valueHandle, uuid: declaration.uuid, endHandle: end)
            if uuid == nil || uuid == declaration.uuid { result.append(characteristic) }
        }
        return .finish(.success(.characteristics(result)))
    }

    mutating func receive(_ response: ATTPDU, _ context: GATTClientContext) -> GATTClientStep {
        guard case .readByTypeResponse(let list) = response else { return unexpected(response) }
        var floor = start
        for element in list.elements {
            guard element.handle >= floor, element.handle <= range.end else {
                return .invalid("characteristic declaration at \(gattHex(element.handle)) is outside \(gattHex(floor))–\(gattHex(range.end)) or goes backwards")
            }
            let value = element.value
            guard value.count == 5 || value.count == 19 else {
                return .invalid("a characteristic declaration value has 5 or 19 octets, not \(value.count)")
            }
            let valueHandle = UInt16(value[1]) | UInt16(value[2]) << 8
            guard valueHandle > element.handle, valueHandle <= range.end else {
                return .invalid("value handle \(gattHex(valueHandle)) of the declaration at \(gattHex(element.handle)) is not after it within \(range)")
            }
            guard let characteristicUUID = try? BluetoothUUID(littleEndianBytes: value[3...]) else {
                return .invalid("the characteristic UUID does not decode")
            }
            declarations.append((element.handle, value[0], valueHandle, characteristicUUID))
            if element.handle == range.end { return finish() }
            floor = element.handle + 1
        }
        guard floor > start else { return .invalid("the response lists no characteristic declaration") }
        start = floor
        return nextRequest()
    }

    mutating func receiveError(_ code: ATTErrorCode, handle: UInt16, _ context: GATTClientContext) -> GATTClientStep {
        if code == .attributeNotFound { return finish() }
        return .fail(.attError(code, handle: handle))
    }
}

/// Discover All Characteristic Descriptors (Core 5.4 Vol 3 Part G §4.7.1): Find Information Requests over the
/// range, continuing after the last handle found, until *Attribute Not Found* or the range's end. An empty
/// range (value handle = end handle) completes at once with no descriptor.
struct GATTClientDescriptorDiscovery: GATTClientProcedureMachine {
    let range: ATTHandleRange
    var start: UInt16
    var descriptors: [GATTDiscoveredDescriptor] = []

    init(range: ATTHandleRange) {
        self.range = range
        self.start = range.start
    }

    mutating func start(_ context: GATTClientContext) -> GATTClientStep {
        guard range.isValid else { return .finish(.success(.descriptors([]))) }
        return nextRequest()
    }

    private func nextRequest() -> GATTClientStep {
        .request(.findInformationRequest(ATTHandleRange(start: start, end: range.end)))
    }

    mutating func receive(_ response: ATTPDU, _ context: GATTClientContext) -> GATTClientStep {
        guard case .findInformationResponse(let list) = response else { return unexpected(response) }
        var floor = start
        for pair in list.information {
            guard pair.handle >= floor, pair.handle <= range.end else {
                return .invalid("descriptor at \(gattHex(pair.handle)) is outside \(gattHex(floor))–\(gattHex(range.end)) or goes backwards")
            }
            descriptors.append(GATTDiscoveredDescriptor(handle: pair.handle, uuid: pair.uuid))
            if pair.handle == range.end { return .finish(.success(.descriptors(descriptors))) }
            floor = pair.handle + 1
        }
        guard floor > start else { return .invalid("the response lists no descriptor") }
        start = floor
        return nextRequest()
    }

    mutating func receiveError(_ code: ATTErrorCode, handle: UInt16, _ context: GATTClientContext) -> GATTClientStep {
        if code == .attributeNotFound { return .finish(.success(.descriptors(descriptors))) }
        return .fail(.attError(code, handle: handle))
    }
}
