// libFuzzer entry point: L2CAP LE signaling, basic frames, credit-based SDU reassembly, and the L2CAPLink state
// machine (LE and enhanced credit based servers, open enhanced channels, our own pending requests) fed the input
// as a sequence of signaling C-frames and K-frames.
import BluetoothCore
import L2CAP
import CLibFuzzer

func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    // Whatever decodes must re-encode to something that decodes to the same value.
    if let value = try? L2CAPSignalingCommand(decoding: bytes) {
        guard let again = try? L2CAPSignalingCommand(decoding: value.encode()), again == value else {
            fatalError("re-encoding changed the value: \\(Hex.encode(bytes))")
        }
    }
    if let command = try? L2CAPSignalingCommand(decoding: bytes) { _ = command.dissection; _ = try? command.validate() }
    _ = try? L2CAPSignalingHeader(decoding: bytes)
    _ = try? L2CAPBasicFrame(decoding: bytes)
    // K-frame reassembly: the input split into K-frames at its first octet's length.
    var reassembler = L2CAPSDUReassembler(mtu: 512, mps: 64)
    var rest = bytes[...]
    while let first = rest.first {
        let count = min(Int(first), rest.count)
        _ = try? reassembler.receive(Array(rest.prefix(count)))
        rest = rest.dropFirst(max(1, count))
    }
    driveLink(bytes)
    return 0
}

/// The input as frames for a link that has an LE server (0x80), an EATT-like enhanced server (0x27), two enhanced
/// channels the peer opened, and an enhanced connection and a reconfiguration of ours awaiting answers: each frame
/// is `length` (first octet) octets of payload, sent on the signaling channel when the next octet is even, else
/// as a K-frame on CID 0x0040 + (octet % 4). Nothing may trap; the link stays within its limits.
func driveLink(_ bytes: [UInt8]) {
    var link = L2CAPLink(role: .peripheral)
    try? link.registerServer(psm: 0x80, mtu: 100, mps: 40, initialCredits: 2)
    try? link.registerServer(L2CAPChannelServer(psm: 0x27, mtu: 100, mps: 80, initialCredits: 2, modes: [.enhancedCreditBased]))
    let open: [UInt8] = [0x17, 0x01, 0x0C, 0x00, 0x27, 0x00, 0x40, 0x00, 0x40, 0x00, 0x02, 0x00, 0x40, 0x00, 0x41, 0x00]
    _ = link.receive(frame: [UInt8(open.count), 0, 0x05, 0x00] + open, now: .zero)
    if let (ours, _) = try? link.connectEnhanced(spsm: 0x27, count: 2, mtu: 64, mps: 64, initialCredits: 1, now: .zero) {
        _ = ours
    }
    _ = try? link.reconfigure(channels: [L2CAPChannelIdentifier(0x0040)], mtu: 200, mps: 80, now: .zero)
    var rest = bytes[...]
    var time = StackInstant.zero
    while rest.count >= 2, let length = rest.first, let selector = rest.dropFirst().first {
        rest = rest.dropFirst(2)
        let payload = Array(rest.prefix(Int(length)))
        rest = rest.dropFirst(Int(length))
        let cid: UInt16 = selector % 2 == 0 ? 0x0005 : 0x0040 + UInt16(selector % 4)
        let frame = [UInt8(truncatingIfNeeded: payload.count), UInt8(truncatingIfNeeded: payload.count >> 8),
                     UInt8(truncatingIfNeeded: cid), UInt8(truncatingIfNeeded: cid >> 8)] + payload
        _ = link.receive(frame: frame, now: time)
        time = time + .seconds(1)
        guard link.channelCount <= 64, link.outstandingRequestCount <= 255 else { fatalError("link out of bounds") }
    }
    _ = link.handleTimeout(now: time + .seconds(60))
    _ = link.linkDisconnected()
    guard link.isIdle else { fatalError("link not idle after the link closed") }
}

// SwiftPM links an executable's `main` to `<Target>_main`; hand control to libFuzzer's driver from there.
@_cdecl("FuzzL2CAPSignaling_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { fuzzOne($0, $1) }
}
