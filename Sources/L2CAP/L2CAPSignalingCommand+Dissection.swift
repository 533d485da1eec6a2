public import BluetoothCore

extension L2CAPSignalingCommand: Dissectable {
    public var dissection: Dissection {
        let body = data
        var children = [
            Dissection("Code", code.description),
            Dissection("Identifier", Dissection.hex8(identifier)),
            Dissection("Length", "\(body.count)"),
        ]
        children += fieldDissections
        return Dissection("L2CAP \(code.title)", nil, children)
    }

    private var fieldDissections: [Dissection] {
        switch self {
        case .commandReject(_, let reject):
            var fields = [Dissection("Reason", reject.reason.description)]
            switch reject {
            case .commandNotUnderstood: break
            case .signalingMTUExceeded(let mtu): fields.append(Dissection("Actual MTU", "\(mtu)"))
            case .invalidCIDInRequest(let local, let remote):
                fields.append(Dissection("Local Endpoint CID", local.description))
                fields.append(Dissection("Remote Endpoint CID", remote.description))
            case .other(_, let data): fields.append(Dissection("Data", Dissection.bytes(data)))
            }
            return fields
        case .disconnectionRequest(_, let value), .disconnectionResponse(_, let value):
            return [
                Dissection("Destination CID", value.destinationCID.description),
                Dissection("Source CID", value.sourceCID.description),
            ]
        case .connectionParameterUpdateRequest(_, let value):
            return [
                Dissection("Interval Min", Self.interval(value.intervalMin)),
                Dissection("Interval Max", Self.interval(value.intervalMax)),
                Dissection("Peripheral Latency", "\(value.peripheralLatency)"),
                Dissection("Timeout Multiplier", "\(value.timeoutMultiplier) (\(Int(value.timeoutMultiplier) * 10) ms)"),
            ]
        case .connectionParameterUpdateResponse(_, let result):
            return [Dissection("Result", result.description)]
        case .leCreditBasedConnectionRequest(_, let value):
            return [
                Dissection("LE_PSM", Self.psm(value.lePSM)),
                Dissection("Source CID", value.sourceCID.description),
                Dissection("MTU", "\(value.mtu)"),
                Dissection("MPS", "\(value.mps)"),
                Dissection("Initial Credits", "\(value.initialCredits)"),
            ]
        case .leCreditBasedConnectionResponse(_, let value):
            return [
                Dissection("Destination CID", value.destinationCID.description),
                Dissection("MTU", "\(value.mtu)"),
                Dissection("MPS", "\(value.mps)"),
                Dissection("Initial Credits", "\(value.initialCredits)"),
                Dissection("Result", value.result.description),
            ]
        case .flowControlCreditIndication(_, let value):
            return [
                Dissection("CID", value.cid.description),
                Dissection("Credits", "\(value.credits)"),
            ]
        case .creditBasedConnectionRequest(_, let value):
            return [
                Dissection("SPSM", Self.psm(value.spsm)),
                Dissection("MTU", "\(value.mtu)"),
                Dissection("MPS", "\(value.mps)"),
                Dissection("Initial Credits", "\(value.initialCredits)"),
            ] + value.sourceCIDs.map { Dissection("Source CID", $0.description) }
        case .creditBasedConnectionResponse(_, let value):
            return [
                Dissection("MTU", "\(value.mtu)"),
                Dissection("MPS", "\(value.mps)"),
                Dissection("Initial Credits", "\(value.initialCredits)"),
                Dissection("Result", value.result.description),
            ] + value.destinationCIDs.map { Dissection("Destination CID", $0.description) }
        case .creditBasedReconfigureRequest(_, let value):
            return [
                Dissection("MTU", "\(value.mtu)"),
                Dissection("MPS", "\(value.mps)"),
            ] + value.destinationCIDs.map { Dissection("Destination CID", $0.description) }
        case .creditBasedReconfigureResponse(_, let result):
            return [Dissection("Result", result.description)]
        case .unknown(_, _, let data):
            return [Dissection("Data", Dissection.bytes(data))]
        }
    }

    /// "24 (30.00 ms)": connection interval units of 1.25 ms.
    static func interval(_ units: UInt16) -> String {
        let hundredths = Int(units) * 125
        let fraction = hundredths % 100
        return "\(units) (\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction) ms)"
    }

    /// "0x0080 (dynamic)" / "0x0025 (SIG-assigned)".
    static func psm(_ value: UInt16) -> String {
        switch value {
        case 0x0001...0x007F: "\(Dissection.hex16(value)) (SIG-assigned)"
        case 0x0080...0x00FF: "\(Dissection.hex16(value)) (dynamic)"
        default: Dissection.hex16(value)
        }
    }
}
