import BluetoothCore
@testable import BluetoothLE
import GATT
import Host
import Testing

@Suite(.serialized)
struct ScanConnectTests {
    @Test func scanFindsTheAdvertiserAndStopsWhenTheLoopBreaks() async throws {
        let air = try await TestAir.started()
        let advertising = try await air.peripheral.advertise(name: "finder", services: [BluetoothUUID(0xFFF0)],
                                                            interval: .milliseconds(20))
        let peripheralAddress = await air.peripheral.localAddress()
        let found = try await withTimeout { [central = air.central] () -> Advertisement? in
            for try await advertisement in central.scan(services: [BluetoothUUID(0xFFF0)]) where advertisement.localName == "finder" {
                return advertisement
            }
            return nil
        }
        #expect(found?.address == peripheralAddress)
        #expect(found?.serviceUUIDs == [BluetoothUUID(0xFFF0)])
        #expect(found?.isConnectable == true)
        // Breaking out of the loop ended the stream: the scan stops (Set Scan Enable off) and the merge cache empties.
        let stopped = await eventually {
            let resources = await air.central.resources()
            return resources.scanStreams == 0 && !resources.isScanning
        }
        #expect(stopped)
        #expect(air.loop.sync { air.centralHost.resources.scanCacheEntries } == 0)
        await advertising.stop()
        await air.finish()
    }

    @Test func aServiceFilterHidesOtherAdvertisersAndTwoStreamsShareOneScan() async throws {
        let air = try await TestAir.started()
        let advertising = try await air.peripheral.advertise(name: "other", services: [BluetoothUUID(0xFFF1)],
                                                            interval: .milliseconds(20))
        let filtered = air.central.scan(services: [BluetoothUUID(0xFFF0)])
        let all = air.central.scan(duplicates: true)
        let seen = try await withTimeout { () -> [Advertisement] in
            var reports: [Advertisement] = []
            for try await advertisement in all {
                reports.append(advertisement)
                if reports.count == 5 { break }
            }
            return reports
        }
        #expect(seen.count == 5)
        #expect(seen.allSatisfy { $0.serviceUUIDs == [BluetoothUUID(0xFFF1)] })
        // The filtered stream heard nothing; it keeps the scan running until it ends too.
        #expect(await air.central.resources().isScanning)
        let filteredTask = Task { () -> Int in
            var count = 0
            for try await _ in filtered { count += 1 }
            return count
        }
        try await Task.sleep(for: .milliseconds(100))
        filteredTask.cancel()
        #expect(try await filteredTask.value == 0)
        #expect(await eventually { await !air.central.resources().isScanning })
        await advertising.stop()
        await air.finish()
    }

    @Test func withoutDuplicatesADeviceIsReportedOnlyWhenItsContentChanges() async throws {
        let air = try await TestAir.started()
        let advertising = try await air.peripheral.advertise(name: "once", interval: .milliseconds(20))
        let counts = try await withTimeout { [central = air.central] () -> (unique: Int, all: Int) in
            let unique = central.scan(duplicates: false)
            let all = central.scan(duplicates: true)
            let uniqueTask = Task { () -> Int in
                var count = 0
                for try await _ in unique { count += 1 }
                return count
            }
            let allTask = Task { () -> Int in
                var count = 0
                for try await _ in all { count += 1 }
                return count
            }
            try await Task.sleep(for: .milliseconds(400))
            unique.stop()
            all.stop()
            return (try await uniqueTask.value, try await allTask.value)
        }
        // The advertising report alone, then merged with the scan response: at most two distinct contents.
        #expect((1...2).contains(counts.unique))
        #expect(counts.all > 5)
        #expect(await eventually { await !air.central.resources().isScanning })
        await advertising.stop()
        await air.finish()
    }

    @Test func connectGivesBothEndsAndDisconnectEndsThem() async throws {
        let air = try await TestAir.started()
        let (remote, local) = try await air.connect()
        #expect(remote.address == (await air.peripheral.localAddress()))
        #expect(local.address == (await air.central.localAddress()))
        #expect(remote.connection.role == .central && local.connection.role == .peripheral)
        // The host exchanges the MTU by itself right after connecting (517 on both sides here).
        #expect(await eventually { remote.mtu == 517 && local.mtu == 517 })
        let reasonSeenByPeripheral = Task { try await local.disconnected() }
        try await withTimeout { try await remote.disconnect() }
        #expect(!remote.isConnected)
        #expect(try await withTimeout { try await reasonSeenByPeripheral.value } == .remoteUserTerminatedConnection)
        // Operations on a dead link fail with a typed error.
        await #expect(throws: BluetoothLEError.self) { _ = try await remote.discoverServices() }
        await air.finish()
    }

    @Test func cancellingAConnectCancelsItAndTheStackConnectsAfterwards() async throws {
        let air = try await TestAir.started()
        let nobody = BluetoothAddress(0xC0_00_00_00_00_99, type: .random)
        let attempt = Task { [central = air.central] in try await central.connect(to: nobody) }
        try await Task.sleep(for: .milliseconds(50))
        attempt.cancel()
        await #expect(throws: CancellationError.self) { _ = try await attempt.value }
        // The host's connect was cancelled (not left pending): a new connect works.
        let (remote, _) = try await air.connect()
        #expect(remote.isConnected)
        await air.finish([remote])
    }

    @Test func aConnectTimeoutIsATypedError() async throws {
        let air = try await TestAir.started()
        let nobody = BluetoothAddress(0xC0_00_00_00_00_98, type: .random)
        do {
            _ = try await withTimeout { [central = air.central] in try await central.connect(to: nobody, timeout: .milliseconds(100)) }
            Issue.record("connected to nobody")
        } catch let error as BluetoothLEError {
            #expect(error.code == .timedOut)
        }
        await air.finish()
    }
}
