import AdvertisingData
import BluetoothCore
import Foundation
import StackLauncher
import Testing
@testable import OpenCoreBluetooth

private nonisolated(unsafe) let backgroundServiceUUID = CBUUID(string: "5E570000-0000-4000-8000-0000000BAC6D")
/// Seed 001's service (Examples/Seed001PeripheralApp).
private nonisolated(unsafe) let seedService = CBUUID(string: "0cdbe648-eed0-11e6-bc64-92361f002671")
private nonisolated(unsafe) let otherServiceUUID = CBUUID(string: "5E57FFFF-0000-4000-8000-0000000BAC6D")

/// Publishes one service and advertises it with a local name.
private final class NamedPeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    let log = CallLog(label: "background.peripheral")
    var manager: CBPeripheralManager!

    init(provider: CBBackendProvider) {
        super.init()
        manager = CBBackendRegistry.$taskProvider.withValue(provider) { CBPeripheralManager(delegate: self, queue: log.queue) }
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        log.add("state \(peripheral.state.rawValue)")
        guard peripheral.state == .poweredOn else { return }
        let service = CBMutableService(type: backgroundServiceUUID, primary: true)
        service.characteristics = [CBMutableCharacteristic(type: CBUUID(string: "5E570001-0000-4000-8000-0000000BAC6D"),
                                                           properties: [.read], value: Data([7]), permissions: [.readable])]
        peripheral.add(service)
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: "Back", CBAdvertisementDataServiceUUIDsKey: [backgroundServiceUUID]])
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {
        log.add("advertising\(error == nil ? "" : " error")")
    }
}

/// Scans as told once powered on and keeps every report: the advertisement data per identifier, in order.
private final class ScanningCentral: NSObject, CBCentralManagerDelegate, @unchecked Sendable {
    let log = CallLog(label: "background.central")
    var manager: CBCentralManager!
    let services: [CBUUID]?
    let options: [String: Any]?
    private let reportsBox = LockedBox<[(UUID, [String: Any])]>([])
    var reports: [(UUID, [String: Any])] { reportsBox.value }

    init(provider: CBBackendProvider, services: [CBUUID]?, allowDuplicates: Bool = false) {
        self.services = services
        options = allowDuplicates ? [CBCentralManagerScanOptionAllowDuplicatesKey: true] : nil
        super.init()
        manager = CBBackendRegistry.$taskProvider.withValue(provider) { CBCentralManager(delegate: self, queue: log.queue) }
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        log.add("state \(central.state.rawValue)")
        if central.state == .poweredOn { central.scanForPeripherals(withServices: services, options: options) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        reportsBox.value.append((peripheral.identifier, advertisementData))
    }

    func reports(of identifier: UUID) -> [[String: Any]] { reports.filter { $0.0 == identifier }.map(\.1) }
}

/// iOS's foreground and background rules, simulated (issue 12 item 4; Core Bluetooth Programming Guide, "Core
/// Bluetooth Background Processing for iOS Apps"). Each test's apps are their own (`OCBApplication` per provider),
/// on an air of its own.
@Suite(.timeLimit(.minutes(2)))
struct ApplicationStateTests {
    @Test func theStateAndModesComeFromTheEnvironment() throws {
        let plain = try OCBApplication(environment: [:])
        #expect(plain.state == .foreground && plain.backgroundModes.isEmpty)
        let background = try OCBApplication(environment: ["OCB_APP_STATE": "background",
                                                          "OCB_BACKGROUND_MODES": "bluetooth-central, bluetooth-peripheral"])
        #expect(background.state == .background)
        #expect(background.backgroundModes == [.bluetoothCentral, .bluetoothPeripheral])
        #expect(try OCBApplication(environment: ["OCB_APP_STATE": "Suspended"]).state == .suspended)
        #expect(throws: OCBApplication.ConfigurationError("OCB_APP_STATE=asleep is not foreground, background or suspended")) {
            try OCBApplication(environment: ["OCB_APP_STATE": "asleep"])
        }
        #expect(throws: OCBApplication.ConfigurationError(
            "unknown background mode \"audio\" (expected bluetooth-central, bluetooth-peripheral)")) {
            try OCBApplication(environment: ["OCB_BACKGROUND_MODES": "bluetooth-central,audio"])
        }
        // Who receives events: the foreground always; the background with the role's mode; suspended never.
        let app = OCBApplication(state: .background, backgroundModes: [.bluetoothCentral])
        #expect(app.deliversEvents(to: .bluetoothCentral) && !app.deliversEvents(to: .bluetoothPeripheral))
        app.enter(.suspended)
        #expect(!app.deliversEvents(to: .bluetoothCentral))
        app.enter(.foreground)
        #expect(app.deliversEvents(to: .bluetoothPeripheral))
    }

    @Test func theOverflowAreaCarriesTheServicesAsBits() throws {
        let heartRate = BluetoothUUID(0x180D)
        let custom = backgroundServiceUUID.bluetoothUUID
        let area = ServiceOverflowArea(serviceUUIDs: [heartRate, custom])
        #expect(area.mayContain(heartRate) && area.mayContain(custom))
        #expect(area.mask.reduce(0) { $0 + $1.nonzeroBitCount } == (ServiceOverflowArea.bit(for: heartRate) == ServiceOverflowArea.bit(for: custom) ? 1 : 2))
        #expect(area.manufacturerData.count == 19 && Array(area.manufacturerData.prefix(3)) == [0x4C, 0x00, 0x01])
        #expect(ServiceOverflowArea(manufacturerData: area.manufacturerData) == area)
        #expect(ServiceOverflowArea(manufacturerData: [0x4C, 0x00, 0x02] + area.mask) == nil)
        #expect(ServiceOverflowArea(manufacturerData: [0x4C, 0x00, 0x01]) == nil)
        // In the advertising packet: no service list, the area as Apple's manufacturer data, no name.
        let advertisement = PeripheralAdvertisement(localName: nil, serviceUUIDs: [], overflowServiceUUIDs: [heartRate, custom])
        #expect(advertisement.serviceUUIDs.isEmpty)
        #expect(advertisement.advertisingData.manufacturerDataBytes == area.manufacturerData)
        #expect(advertisement.advertisingData.encodedLength <= 31)
    }

    @Test func theGateHoldsInOrderAndDropsDiscardableWork() async {
        let queue = DispatchQueue(label: "gate.test")
        let gate = DeliveryGate(queue: queue, open: false)
        let seen = LockedBox<[Int]>([])
        gate.deliver { seen.value.append(1) }
        gate.deliver(discardable: true) { seen.value.append(99) }
        gate.deliver { seen.value.append(2) }
        #expect(gate.heldCount == 2)
        gate.setOpen(true)
        gate.deliver { seen.value.append(3) }
        await onQueue(queue) {}
        #expect(seen.value == [1, 2, 3])
    }

    /// A peripheral app in the background with `bluetooth-peripheral`: its advertising loses the name and moves the
    /// service to the overflow area; a foreground central scanning for nothing in particular sees an anonymous
    /// device, one scanning for the service finds it (the overflow key names the service); back in the
    /// foreground, the name and the service list return.
    @Test func aBackgroundPeripheralAdvertisesInTheOverflowArea() async throws {
        let air = InProcessAir(seed: 91, label: "background.air")
        let peripheralApp = OCBApplication(state: .background, backgroundModes: [.bluetoothPeripheral])
        let peripheral = NamedPeripheral(provider: HostBackend.provider(.inProcess(air), application: peripheralApp))
        try await waitFor("advertising in the background", on: peripheral.log.queue,
                          until: { peripheral.log.entries.contains("advertising") }, seen: { "\(peripheral.log.entries)" })
        let centralProvider = HostBackend.provider(.inProcess(air), application: OCBApplication())
        let bySearch = ScanningCentral(provider: centralProvider, services: [backgroundServiceUUID])
        try await waitFor("the peripheral found by its service", on: bySearch.log.queue,
                          until: { !bySearch.reports.isEmpty }, seen: { "\(bySearch.log.entries)" })
        let (identifier, found) = try #require(bySearch.reports.first)
        #expect(found[CBAdvertisementDataLocalNameKey] == nil)
        #expect(found[CBAdvertisementDataServiceUUIDsKey] == nil)
        #expect((found[CBAdvertisementDataOverflowServiceUUIDsKey] as? [CBUUID]) == [backgroundServiceUUID])
        #expect(found[CBAdvertisementDataManufacturerDataKey] == nil, "the overflow area is not the app's manufacturer data")

        let byOther = ScanningCentral(provider: centralProvider, services: [otherServiceUUID])
        let anyone = ScanningCentral(provider: centralProvider, services: nil, allowDuplicates: true)
        try await waitFor("the anonymous device", on: anyone.log.queue,
                          until: { !anyone.reports(of: identifier).isEmpty }, seen: { "\(anyone.reports.count) reports" })
        let anonymous = try #require(anyone.reports(of: identifier).first)
        #expect(anonymous[CBAdvertisementDataLocalNameKey] == nil)
        #expect(anonymous[CBAdvertisementDataServiceUUIDsKey] == nil)
        #expect(anonymous[CBAdvertisementDataOverflowServiceUUIDsKey] == nil, "only an explicit scan sees the overflow area")

        peripheralApp.enter(.foreground)
        try await waitFor("the name back in the foreground", on: anyone.log.queue,
                          until: { anyone.reports(of: identifier).contains { $0[CBAdvertisementDataLocalNameKey] as? String == "Back" } },
                          seen: { "\(anyone.reports(of: identifier).suffix(2))" })
        let named = try #require(anyone.reports(of: identifier).last { $0[CBAdvertisementDataLocalNameKey] != nil })
        #expect((named[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID]) == [backgroundServiceUUID])
        #expect(await onQueue(byOther.log.queue) { byOther.reports(of: identifier).isEmpty })
        withExtendedLifetime((peripheral, bySearch, byOther, anyone)) {}
        air.shutdown()
    }

    /// A central app in the background with `bluetooth-central`: a scan for no service finds nothing, one for the
    /// service finds the peripheral (at the background duty cycle), each device once although duplicates were
    /// asked for.
    @Test func aBackgroundCentralFindsOnlyWhatItNames() async throws {
        let air = InProcessAir(seed: 92, label: "background.air2")
        let peripheral = NamedPeripheral(provider: HostBackend.provider(.inProcess(air), application: OCBApplication()))
        try await waitFor("advertising", on: peripheral.log.queue,
                          until: { peripheral.log.entries.contains("advertising") }, seen: { "\(peripheral.log.entries)" })
        let centralApp = OCBApplication(state: .background, backgroundModes: [.bluetoothCentral])
        let provider = HostBackend.provider(.inProcess(air), application: centralApp)
        let named = ScanningCentral(provider: provider, services: [backgroundServiceUUID], allowDuplicates: true)
        let unnamed = ScanningCentral(provider: provider, services: nil, allowDuplicates: true)
        try await waitFor("the peripheral found by its service in the background", within: .seconds(40), on: named.log.queue,
                          until: { !named.reports.isEmpty }, seen: { "\(named.log.entries)" })
        let first = try #require(named.reports.first)
        #expect((first.1[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID]) == [backgroundServiceUUID])
        // The unnamed scan had as long (and longer: it runs on) to see the same advertisements.
        try await Task.sleep(for: .seconds(1))
        #expect(await onQueue(unnamed.log.queue) { unnamed.reports.isEmpty })
        #expect(await onQueue(named.log.queue) { named.reports.count } == 1, "duplicates are not reported in the background")
        // In the foreground again, the unnamed scan reports, and duplicates come.
        centralApp.enter(.foreground)
        let identifier = first.0
        try await waitFor("reports in the foreground", on: unnamed.log.queue,
                          until: { unnamed.reports(of: identifier).count >= 2 }, seen: { "\(unnamed.reports.count) reports" })
        withExtendedLifetime((peripheral, named, unnamed)) {}
        air.shutdown()
    }

    /// Issue 32 item 2: seed 001's iOS peripheral advertises in the foreground; when the app leaves it, its
    /// advertising takes the form iOS gives it: with `bluetooth-peripheral`, the overflow area (found only by a
    /// scan that names the service); without it, none at all, in the background as suspended. Back in the
    /// foreground, the name and the service list return. The central, in a foreground app, scans for the seed's
    /// service with duplicates, so a device on the air keeps being reported.
    @Test(arguments: [
        (OCBApplicationState.background, OCBBackgroundModes.bluetoothPeripheral), (.suspended, .bluetoothPeripheral),
        (.background, OCBBackgroundModes()), (.suspended, OCBBackgroundModes()),
    ])
    func seed001PeripheralAdvertisesAsItsStateAllows(state: OCBApplicationState, modes: OCBBackgroundModes) async throws {
        let air = InProcessAir(seed: 94, label: "background.seed001.\(state).\(modes.rawValue)")
        defer { air.shutdown() }
        let app = OCBApplication(state: .foreground, backgroundModes: modes)
        let events = LockedBox<[String]>([])
        let ear = SeedEar(role: "peripheral", box: events)
        let seed = await makeOnMain(with: HostBackend.provider(.inProcess(air), application: app)) { PeripheralBluetoothManager(delegate: ear) }
        let central = ScanningCentral(provider: HostBackend.provider(.inProcess(air), application: OCBApplication()),
                                      services: [seedService], allowDuplicates: true)
        try await waitFor("the seed advertising its name in the foreground", on: central.log.queue,
                          until: { central.reports.contains { $0.1[CBAdvertisementDataLocalNameKey] as? String == "Peripheral - iOS" } },
                          seen: { "\(central.reports.count) reports, seed \(events.value)" })
        let identifier = try #require(central.reports.first?.0)

        let entered = await onQueue(central.log.queue) { central.reports(of: identifier).count }
        app.enter(state)
        if modes.contains(.bluetoothPeripheral) {
            // The overflow form from its first report on, and nothing else after it (that first report may still
            // carry the name of the scan response the scanner last had, merged with the new advertising data).
            try await waitFor("the overflow form in the \(state) state", on: central.log.queue, until: {
                central.reports(of: identifier).dropFirst(entered).contains { $0[CBAdvertisementDataOverflowServiceUUIDsKey] != nil }
            }, seen: { "\(central.reports(of: identifier).suffix(2))" })
            let first = await onQueue(central.log.queue) {
                entered + (central.reports(of: identifier).dropFirst(entered).firstIndex { $0[CBAdvertisementDataOverflowServiceUUIDsKey] != nil } ?? 0) - entered
            }
            try await Task.sleep(for: .seconds(1))
            let since = await onQueue(central.log.queue) { () -> (count: Int, anonymous: Bool, overflow: Bool) in
                let new = central.reports(of: identifier).dropFirst(first + 1)
                return (new.count,
                        new.allSatisfy { $0[CBAdvertisementDataLocalNameKey] == nil && $0[CBAdvertisementDataServiceUUIDsKey] == nil },
                        new.allSatisfy { ($0[CBAdvertisementDataOverflowServiceUUIDsKey] as? [CBUUID]) == [seedService] })
            }
            #expect(since.count > 1, "\(state) with the mode: still advertising")
            #expect(since.anonymous && since.overflow, "\(state) with the mode: the overflow form only")
        } else {
            // Nothing on the air: the reports stop (a device advertising is reported several times a second).
            let clock = ContinuousClock()
            var count = entered, changed = clock.now
            while clock.now - changed < .milliseconds(1500), clock.now - changed < .seconds(20) {
                try await Task.sleep(for: .milliseconds(100))
                let now = await onQueue(central.log.queue) { central.reports(of: identifier).count }
                if now != count { (count, changed) = (now, clock.now) }
            }
            #expect(clock.now - changed >= .milliseconds(1500), "\(state) without the mode: still reported")
        }

        app.enter(.foreground)
        let back = await onQueue(central.log.queue) { central.reports(of: identifier).count }
        try await waitFor("the name back in the foreground", on: central.log.queue,
                          until: { central.reports(of: identifier).dropFirst(back).contains {
                              $0[CBAdvertisementDataLocalNameKey] as? String == "Peripheral - iOS" } },
                          seen: { "\(central.reports(of: identifier).suffix(2))" })
        // The seed heard of its advertising once, whatever the state did to it.
        #expect(events.value.filter { $0 == "advertising peripheral" }.count == 1, "\(events.value)")
        withExtendedLifetime((seed, central)) {}
    }

    /// Seed 001 with both roles in a suspended app: nothing reaches the seed (not even the first state update);
    /// in the foreground again, the events arrive in order and the exchange completes.
    @Test func aSuspendedAppGetsItsEventsInOrderInTheForeground() async throws {
        let app = OCBApplication(state: .suspended)
        let provider = HostBackend.privateAirProvider(seed: 93, application: app)
        let events = LockedBox<[String]>([])
        let peripheralEar = SeedEar(role: "peripheral", box: events)
        let centralEar = SeedEar(role: "central", box: events)
        let apps = await makeOnMain(with: provider) {
            (PeripheralBluetoothManager(delegate: peripheralEar), CentralBluetoothManager(delegate: centralEar))
        }
        // The seed's central makes its manager in scan().
        await onMain { CBBackendRegistry.$taskProvider.withValue(provider) { apps.value.1.scan() } }
        try await Task.sleep(for: .seconds(1))
        // Only what the app did by itself (making its managers), nothing Bluetooth said.
        #expect(events.value == ["configuration peripheral", "configuration central"], "\(events.value)")
        let held = await onMain { (apps.value.0.peripheralManager?.gate.heldCount ?? 0) + (apps.value.1.centralManager?.gate.heldCount ?? 0) }
        #expect(held >= 2, "each manager's first state update waits")
        app.enter(.foreground)
        try await waitFor("the exchange after the app came back",
                          until: { events.value.contains("receive peripheral") && events.value.contains("receive central") },
                          seen: { "\(events.value)" })
        let seen = events.value
        let configuration = try #require(seen.firstIndex(of: "configuration peripheral"))
        let advertising = try #require(seen.firstIndex(of: "advertising peripheral"))
        let sent = try #require(seen.firstIndex(of: "send peripheral"))
        #expect(configuration < advertising && advertising < sent)
        withExtendedLifetime(apps) {}
    }
}

/// A seed 001 ear that prefixes each event with its role, into a log both roles share.
private final class SeedEar: PeripheralBlueEar, CentralBlueEar, @unchecked Sendable {
    let role: String
    let box: LockedBox<[String]>
    init(role: String, box: LockedBox<[String]>) {
        self.role = role
        self.box = box
    }
    private func add(_ event: String) { box.value.append("\(event) \(role)") }

    func didStartConfiguration() { add("configuration") }
    func didStartAdvertising() { add("advertising") }
    func didSendData() { add("send") }
    func didReceiveData() { add("receive") }
    func didStartScanningPeripherals() { add("scanning") }
    func didConnectPeripheral(name: String?) { add("connect") }
    func didDisconnectPeripheral(name: String?) { add("disconnect") }
    func didFailConnection() { add("fail") }
}
