import BluetoothEngine
import GATT
import ServiceEngine

/// A program's calls, run on its kept stack (the seam's operations, `StackEngine`): each answer is one
/// ``ServiceOutcome``.
extension KeptStack {
    func run(_ operation: ServiceOperation, reply: @escaping @Sendable (ServiceOutcome) -> Void) {
        let engine = engine
        let done: @Sendable (Result<Void, HostError>) -> Void = { reply($0.map { .done }.recover()) }
        rememberAdvertising(operation)
        switch operation {
        case .currentPrivateAddress:
            engine.currentPrivateAddress { reply(.address($0)) }
        case .startScanning(let options):
            engine.startScanning(options) { done($0) }
        case .stopScanning:
            engine.stopScanning { done($0) }
        case .connect(let peer, let options):
            engine.connect(to: peer, options: options) { reply($0.map { .connection($0) }.recover()) }
        case .cancelConnect(let peer):
            engine.cancelConnect(to: peer) { done($0) }
        case .disconnect(let handle, let reason):
            engine.disconnect(connectionHandle: handle, reason: reason) { reply($0.map { .status($0) }.recover()) }
        case .startAdvertisingContent(let content, let options):
            engine.startAdvertising(content, options: options) { done($0) }
        case .startAdvertising(let data, let response, let options):
            engine.startAdvertising(advertisingData: data, scanResponse: response, options: options) { done($0) }
        case .stopAdvertising:
            engine.stopAdvertising { done($0) }
        case .linkInfo(let handle):
            engine.linkInfo(connectionHandle: handle) { reply(.linkInfo($0)) }
        case .updateConnectionParameters(let handle, let parameters):
            engine.updateConnectionParameters(connectionHandle: handle, parameters) { reply($0.map { .connection($0) }.recover()) }
        case .requestDataLength(let handle, let octets, let time):
            engine.requestDataLength(connectionHandle: handle, txOctets: octets, txTime: time) { reply($0.map { .accepted($0) }.recover()) }
        case .setPHY(let handle, let tx, let rx):
            engine.setPHY(connectionHandle: handle, txPHYs: tx, rxPHYs: rx) { done($0) }
        case .exchangeMTU(let handle):
            engine.exchangeMTU(connectionHandle: handle) { reply($0.map { .mtu($0) }.recover()) }
        case .readRSSI(let handle):
            engine.readRSSI(connectionHandle: handle) { reply($0.map { .rssi($0) }.recover()) }
        case .requestConnectionParameterUpdate(let handle, let request):
            engine.requestConnectionParameterUpdate(connectionHandle: handle, request) { reply($0.map { .accepted($0) }.recover()) }
        case .gatt(let handle, let procedure, let lane):
            engine.gatt(connectionHandle: handle, procedure, lane: lane) { [weak self] result in
                switch result {
                case .success(let value):
                    if case .services(let found) = value { self?.learn(found.map(\.uuid), of: handle) }
                    reply(.gatt(value))
                case .failure(let error): reply(.gattFailed(error))
                }
            }
        case .replaceGATTDatabase(let wire, let changedRange):
            replaceDatabase(wire, changedRange: changedRange, reply: reply)
        case .setGATTDeferral(let handles):
            setDeferral(handles: handles)
        case .respondToGATTRequest(let handle, let id, let answer):
            respond(handle: handle, id: id, answer)
        case .updateValue(let value, let attribute, let targets, let requireReady):
            remember(value, attribute: attribute)
            engine.updateValue(value, handle: attribute, to: targets, requireReady: requireReady) { reply($0.map { .targets($0) }.recover()) }
        case .registerL2CAPServer(let server, let requiresEncryption):
            engine.registerL2CAPServer(server.server, requiresEncryption: requiresEncryption) { result in
                switch result {
                case .success: reply(.done)
                case .failure(let error): reply(.l2capFailed(error))
                }
            }
        case .unregisterL2CAPServer(let psm):
            engine.unregisterL2CAPServer(psm: psm)
        case .openChannel(let handle, let psm, let mtu):
            engine.openChannel(connectionHandle: handle, psm: psm, mtu: mtu) { reply($0.map { .l2capChannel($0) }.recover()) }
        case .sendL2CAPSDU(let handle, let channel, let sdu):
            engine.sendL2CAPSDU(connectionHandle: handle, channel: channel, sdu) { done($0) }
        case .closeL2CAPChannel(let handle, let channel):
            engine.closeL2CAPChannel(connectionHandle: handle, channel: channel) { done($0) }
        case .pair(let handle, let options):
            engine.pair(connectionHandle: handle, options: options) { reply($0.map { .pairing($0) }.recover()) }
        case .requestSecurity(let handle, let mitm):
            engine.requestSecurity(connectionHandle: handle, mitm: mitm) { reply($0.map { .pairing($0) }.recover()) }
        case .answerPairing(let handle, let answer):
            engine.answerPairing(connectionHandle: handle, answer)
        case .localOutOfBandData:
            engine.localOutOfBandData { reply($0.map { .outOfBand($0) }.recover()) }
        case .setPeerOutOfBandData(let address, let random, let confirm):
            engine.setPeerOutOfBandData(for: address, random: random, confirm: confirm)
        case .setLegacyOutOfBandKey(let address, let key):
            engine.setLegacyOutOfBandKey(for: address, temporaryKey: key)
        case .removeOutOfBandData(let address):
            engine.removeOutOfBandData(for: address)
        }
    }
}

extension Result where Success == ServiceOutcome, Failure == HostError {
    /// The outcome, or the failure as one.
    fileprivate func recover() -> ServiceOutcome {
        switch self {
        case .success(let outcome): outcome
        case .failure(let error): .failed(error)
        }
    }
}
