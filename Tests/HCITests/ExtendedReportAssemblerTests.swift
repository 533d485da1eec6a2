import BluetoothCore
import HCI
import Testing

/// Extended advertising report pieces joined into whole advertisements (Core 5.4 Vol 4 Part E §7.7.65.13), with
/// bounded memory: what the host's scanner and the capture reader both rely on.
@Suite struct ExtendedReportAssemblerTests {
    @Test("pieces: joined per advertiser and SID, truncated ones dropped, at most 32 open, none past 1,650 octets")
    func assemblerBounds() {
        var assembler = ExtendedReportAssembler()
        func piece(_ address: UInt64, sid: UInt8 = 1, status: UInt16, _ data: [UInt8]) -> LEExtendedAdvertisingReport {
            LEExtendedAdvertisingReport(eventType: status << 5, addressType: .public, address: BluetoothAddress(address),
                                        secondaryPHY: .le1M, advertisingSID: sid, rssi: -40, data: data)
        }
        #expect(assembler.add(piece(1, status: 1, [1, 2])) == .pending)
        #expect(assembler.add(piece(1, sid: 2, status: 0, [9])) == .complete(piece(1, sid: 2, status: 0, [9])))
        #expect(assembler.add(piece(1, status: 0, [3])) == .complete(piece(1, status: 0, [1, 2, 3])))
        #expect(assembler.add(piece(2, status: 1, [1])) == .pending)
        #expect(assembler.add(piece(2, status: 2, [2])) == .dropped)
        for address in 10..<50 { _ = assembler.add(piece(UInt64(address), status: 1, [0])) }
        #expect(assembler.pendingCount == 32)
        #expect(assembler.add(piece(3, status: 1, [UInt8](repeating: 0, count: 229))) == .pending)
        for _ in 0..<6 { _ = assembler.add(piece(3, status: 1, [UInt8](repeating: 0, count: 229))) }
        #expect(assembler.add(piece(3, status: 1, [UInt8](repeating: 0, count: 229))) == .dropped, "8 × 229 > 1650")
    }

    @Test("how much of an advertisement is held, per advertiser, SID and kind")
    func pendingLength() {
        var assembler = ExtendedReportAssembler()
        let first = LEExtendedAdvertisingReport(eventType: 1 << 5, addressType: .random, address: BluetoothAddress(7),
                                                secondaryPHY: .le2M, advertisingSID: 3, rssi: -60, data: [1, 2, 3])
        #expect(assembler.pendingLength(of: first) == 0)
        #expect(assembler.add(first) == .pending)
        #expect(assembler.pendingLength(of: first) == 3)
        var response = first
        response.eventType |= 0x08
        #expect(assembler.pendingLength(of: response) == 0, "a scan response is joined apart")
    }
}
