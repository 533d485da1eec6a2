import BluetoothCore
import HCI
@testable import Host
import Testing
import VirtualController
import BluetoothEngine

/// A host that shuts down closes its in-process transport, and the ``VirtualController`` behind it goes off the air
/// (``VirtualControllerTransport``'s `close()`): as when a dongle is unplugged, the peer's link ends with a
/// supervision timeout (Core 5.4 Vol 6 Part B §4.5.2, HCI reason 0x08) and the device is no longer heard.
@Suite("A closed in-process transport takes its controller off the air")
struct ControllerReleaseTests {
    @Test("the connected peer times out; the released device's advertising stops")
    func releasedPeripheralLeavesTheAir() {
        let stacks = TwoStacks()
        #expect(stacks.connect())
        let peripheralAddress = stacks.peripheral.controllerInfo.ownAddress
        // While connected, the peripheral also advertises (non-connectable) and the central scans: it is heard.
        let advertising = Recorder<Bool>()
        stacks.peripheral.startAdvertising(AdvertisingContent(localName: "leaving"), options: AdvertisingOptions(kind: .nonConnectable)) {
            advertising.append((try? $0.get()) != nil)
        }
        #expect(stacks.run(until: { advertising.count == 1 }) && advertising.values == [true])
        let scanning = Recorder<Bool>()
        stacks.central.startScanning(ScanOptions(filterDuplicates: false)) { scanning.append((try? $0.get()) != nil) }
        #expect(stacks.run(until: { scanning.count == 1 }) && scanning.values == [true])
        let reports = {
            stacks.centralEvents.values.filter { event in
                if case .advertisingReport(let report) = event { report.address == peripheralAddress } else { false }
            }.count
        }
        stacks.loop.advance(by: .seconds(2))
        #expect(reports() > 0, "the advertising peripheral is not heard")

        stacks.peripheral.shutdown()
        let disconnected = { () -> [HCIStatus] in
            stacks.centralEvents.values.compactMap { if case .disconnected(_, let reason) = $0 { reason } else { nil } }
        }
        #expect(stacks.run(until: { !disconnected().isEmpty }, limit: .seconds(30)))
        #expect(disconnected() == [.connectionTimeout])
        #expect(stacks.air.linkCount == 0)

        // Nothing of the released device is heard any more.
        let before = reports()
        stacks.loop.advance(by: .seconds(3))
        #expect(reports() == before, "the released peripheral is still advertising")
        #expect(stacks.peripheralController.connectionCount == 0)
        stacks.central.shutdown()
        stacks.loop.run()
    }
}
