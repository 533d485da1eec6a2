import BluetoothCore
import BluetoothRuntime
import HCI
import L2CAP
import Testing
@testable import VirtualController

/// The air's timed model (issue 13 item 4) and the PHYs on the air (issue 15 item 2): packet air times against
/// the specification's figures, connection events that fill with exchanges as their air time allows, PHY updates
/// to 2M and Coded, and the Coded PHY's range.
@Suite struct AirTimingTests {
    @Test func packetAirTimesMatchTheSpecification() {
        // ../shared/reference/spec-vectors.md §4.1: an empty PDU (2 octets of header), 27 and 251 octets of payload.
        #expect(AirTime.packet(pduOctets: 2, phy: .le1M) == .microseconds(80))
        #expect(AirTime.packet(pduOctets: 2, phy: .le2M) == .microseconds(44))
        #expect(AirTime.packet(pduOctets: 29, phy: .le1M) == .microseconds(328 - 32))
        #expect(AirTime.packet(pduOctets: 29 + 4, phy: .le1M) == .microseconds(328))
        #expect(AirTime.packet(pduOctets: 253, phy: .le1M) == .microseconds(2088))
        #expect(AirTime.packet(pduOctets: 253 + 4, phy: .le1M) == .microseconds(2120))
        #expect(AirTime.packet(pduOctets: 253, phy: .le2M) == .microseconds(1048))
        // Coded S=8 (Vol 6 Part B §2.2): 80 + 256 + 16 + 24 µs, then (PDU + CRC) × 64 µs, then 24 µs.
        #expect(AirTime.packet(pduOctets: 2, phy: .leCoded) == .microseconds(376 + 5 * 64 + 24))
        // §4.2's worked example: 2M, 251 octets one way and an empty PDU back = 1,392 µs; 1M without DLE 676 µs.
        #expect(AirTime.exchange(centralOctets: 253, centralPHY: .le2M, peripheralOctets: 2, peripheralPHY: .le2M)
                == .microseconds(1392))
        #expect(AirTime.exchange(centralOctets: 29, centralPHY: .le1M, peripheralOctets: 2, peripheralPHY: .le1M)
                == .microseconds(676))
    }

    /// 2M, data length 251, 7.5 ms interval: an exchange takes 1,392 µs, so five fit in one event and the next
    /// three go in the next event; without the timed model all eight go at the anchor.
    @Test(arguments: [true, false])
    func connectionEventsFillWithExchangesAsAirTimeAllows(timed: Bool) throws {
        var configuration = AirConfiguration()
        configuration.realRadioTiming = timed
        let world = World(configuration: configuration)
        let peripheralHost = world.hosts[0], centralHost = world.hosts[1]
        let (central, peripheral) = try #require(world.connect(interval: 6))
        centralHost.send(.leSetDataLength(handle: central, txOctets: 251, txTime: 2120))
        peripheralHost.send(.leSetDataLength(handle: peripheral, txOctets: 251, txTime: 2120))
        centralHost.send(.leSetPHY(handle: central, allPHYs: 0, txPHYs: 0x02, rxPHYs: 0x02, phyOptions: 0))
        world.advance(.seconds(1))
        let phyUpdates = centralHost.events.compactMap { event -> (LEPhy, LEPhy)? in
            if case .leMeta(.phyUpdateComplete(.success, _, let tx, let rx)) = event { return (tx, rx) }
            return nil
        }
        #expect(phyUpdates.count == 1 && phyUpdates.first?.0 == .le2M && phyUpdates.first?.1 == .le2M)
        let dataPackets = LockedValue<[(time: StackInstant, octets: Int)]>([])
        world.air.observer = { packet in
            if case .data(_, fromCentral: true) = packet.kind, packet.bytes.count == 253 {
                dataPackets.withLock { $0.append((packet.time, packet.bytes.count)) }
            }
        }
        let payload = [UInt8](repeating: 0xA5, count: 251 * 8)
        for fragment in try ACLFragmenter(maximumDataLength: 251).fragment(payload, handle: central) {
            centralHost.sendACL(fragment)
        }
        world.advance(.milliseconds(100))
        let times = dataPackets.load().map(\.time)
        try #require(times.count == 8)
        let offsets = times.map { ($0 - times[0]).nanosecondsClamped / 1000 }
        if timed {
            #expect(offsets == [0, 1392, 2784, 4176, 5568, 7500, 8892, 10284])
        } else {
            #expect(offsets == [0, 0, 0, 0, 0, 0, 0, 0])
        }
        #expect(peripheralHost.acl.filter { $0.handle == peripheral }.flatMap(\.data) == payload)
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing" && settled.links == 0)
    }

    /// LE Set PHY to Coded on both sides (LE Coded PHY is in the controller's features), reported by LE PHY Update
    /// Complete; at 1 km a Coded link holds (−100 dBm, heard with the 12 dB coding gain) where a 1M link times
    /// out (below the −95 dBm sensitivity).
    @Test func theCodedPHYReachesFurther() throws {
        for coded in [true, false] {
            let world = World(configuration: AirConfiguration(realRadioTiming: true))
            let peripheralHost = world.hosts[0], centralHost = world.hosts[1]
            let (central, peripheral) = try #require(world.connect())
            if coded {
                centralHost.send(.leSetPHY(handle: central, allPHYs: 0, txPHYs: 0x04, rxPHYs: 0x04, phyOptions: 0))
                world.advance(.seconds(1))
                #expect(centralHost.events.contains {
                    if case .leMeta(.phyUpdateComplete(.success, central, .leCoded, .leCoded)) = $0 { true } else { false }
                })
                peripheralHost.send(.leReadPHY(handle: peripheral))
                world.advance(.milliseconds(10))
                #expect(peripheralHost.response(.leReadPHY) == .commandComplete(
                    numHCICommandPackets: 1, opcode: .leReadPHY,
                    returnParameters: .leReadPHY(status: .success, handle: peripheral, txPHY: .leCoded, rxPHY: .leCoded)))
            }
            peripheralHost.controller.position = AirPosition(x: 1000)
            world.advance(.seconds(3))
            let lost = centralHost.disconnections.contains { $0.handle == central && $0.reason == .connectionTimeout }
            #expect(lost == !coded, "coded: \(coded)")
            let settled = world.powerOffAllAndSettle()
            #expect(settled.pending == "nothing" && settled.links == 0)
        }
    }
}
