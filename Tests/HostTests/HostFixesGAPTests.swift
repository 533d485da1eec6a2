import AdvertisingData
import BluetoothCore
import BluetoothRuntime
import HCI
import Host
import TestSupport
import Testing
import BluetoothEngine

/// Scan and advertising requests are strictly ordered: the last one wins (Core 5.4 Vol 3 Part C §9.2, §9.3).
@Suite("GAP request ordering")
struct HostFixesGAPTests {
    static let scanParameters = hex("01 0B 20 07 01 60 00 30 00 01 00")
    static let scanOn = hex("01 0C 20 02 01 01")
    static let scanOff = hex("01 0C 20 02 00 00")
    static let advertisingOn = hex("01 0A 20 01 01")
    static let advertisingOff = hex("01 0A 20 01 00")
    static let options = ScanOptions(active: true, interval: 0x0060, window: 0x0030, filterDuplicates: true)

    @Test("start then stop at once: the start is cancelled before its enable, the controller ends not scanning")
    func scanStartThenStop() {
        let rig = Rig()
        let started = Recorder<Result<Void, HostError>>()
        let stopped = Recorder<Result<Void, HostError>>()
        rig.host.startScanning(Self.options) { started.append($0) }
        rig.host.stopScanning { stopped.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentBytes == [Self.scanParameters, Self.scanOff])
        if case .failure(let error) = started.last { #expect(error.code == .cancelled) } else { Issue.record("start not cancelled: \(String(describing: started.last))") }
        #expect((try? stopped.last?.get()) != nil)
        #expect(started.count == 1 && stopped.count == 1)
        rig.expectNothingLeft()
    }

    @Test("start, stop, start: the waiting stop is replaced, the controller ends scanning")
    func scanStartStopStart() {
        let rig = Rig()
        let results = Recorder<String>()
        rig.host.startScanning(Self.options) { results.append("start1 \($0)") }
        rig.host.stopScanning { results.append("stop \($0)") }
        rig.host.startScanning(Self.options) { results.append("start2 \($0)") }
        rig.loop.run()
        // The first start stops after its parameters; the stop never runs; the second start runs whole.
        #expect(rig.controller.sentBytes == [Self.scanParameters, Self.scanParameters, Self.scanOn])
        #expect(results.values.count == 3)
        #expect(results.values.last?.hasPrefix("start2 success") == true)
        #expect(results.values.contains { $0.hasPrefix("stop failure") })
        #expect(results.values.contains { $0.hasPrefix("start1 failure") })
        // Reports are delivered: the host knows it is scanning.
        rig.controller.deliver(.leMeta(.advertisingReport([
            LEAdvertisingReport(eventType: .advInd, address: BluetoothAddress(0xD0_0102_0304_05, type: .random),
                                data: [], rssi: -60),
        ])))
        rig.loop.run()
        #expect(rig.events.values.contains { if case .advertisingReport = $0 { true } else { false } })
        // A start on a scanning controller disables first (parameters cannot change while enabled).
        rig.controller.clearSent()
        rig.host.startScanning(Self.options) { results.append("start3 \($0)") }
        rig.loop.run()
        #expect(rig.controller.sentBytes == [Self.scanOff, Self.scanParameters, Self.scanOn])
        rig.host.stopScanning()
        rig.loop.run()
        #expect(rig.controller.sentBytes.last == Self.scanOff)
        rig.expectNothingLeft()
    }

    @Test("a stop after the enable went out: the start succeeds, then the stop disables")
    func scanStopAfterEnableSent() {
        let rig = Rig(keepResponder: false)
        let results = Recorder<String>()
        rig.host.startScanning(Self.options) { results.append("start \($0)") }
        rig.loop.run()
        rig.controller.deliver(.complete(.leSetScanParameters))
        rig.loop.run()
        #expect(rig.controller.sentBytes == [Self.scanParameters, Self.scanOn])
        rig.host.stopScanning { results.append("stop \($0)") }
        rig.loop.run()
        #expect(rig.controller.sentBytes.count == 2)
        rig.controller.deliver(.complete(.leSetScanEnable))
        rig.loop.run()
        #expect(rig.controller.sentBytes == [Self.scanParameters, Self.scanOn, Self.scanOff])
        rig.controller.deliver(.complete(.leSetScanEnable))
        rig.loop.run()
        #expect(results.values.map { String($0.prefix(13)) } == ["start success", "stop success("])
        rig.expectNothingLeft()
    }

    @Test("advertising start then stop at once: cancelled before the enable, the controller ends not advertising")
    func advertisingStartThenStop() {
        let rig = Rig()
        let started = Recorder<Result<Void, HostError>>()
        let stopped = Recorder<Result<Void, HostError>>()
        rig.host.startAdvertising(AdvertisingContent(localName: "Heart")) { started.append($0) }
        rig.host.stopAdvertising { stopped.append($0) }
        rig.loop.run()
        let sent = rig.controller.sentBytes
        #expect(sent.last == Self.advertisingOff)
        #expect(!sent.contains(Self.advertisingOn))
        if case .failure(let error) = started.last { #expect(error.code == .cancelled) } else { Issue.record("start not cancelled") }
        #expect((try? stopped.last?.get()) != nil)
        // Then start: it runs whole and the controller ends advertising.
        rig.controller.clearSent()
        rig.host.startAdvertising(AdvertisingContent(localName: "Heart")) { started.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentBytes.last == Self.advertisingOn)
        #expect((try? started.last?.get()) != nil)
        rig.host.stopAdvertising()
        rig.loop.run()
        #expect(rig.controller.sentBytes.last == Self.advertisingOff)
        rig.expectNothingLeft()
    }
}
