import AdvertisingData
import BluetoothCore
import BluetoothCrypto
import BluetoothRuntime
import HCI
@testable import Host
import Testing
import BluetoothEngine

/// Privacy done by the controller (issue 15 item 4; Core 5.4 Vol 6 Part B §6): with privacy asked for and LL Privacy
/// offered (our controller), the host loads the resolving list and uses Own_Address_Type 0x03; the controller
/// advertises with RPAs of our IRK and rotates them while advertising; after bonding, the central's controller
/// resolves the peripheral's RPAs to its identity before the host sees them, and the central reconnects by that
/// identity and encrypts with the bond.
@Suite("Privacy done by the controller")
struct ControllerPrivacyTests {
    static let name = "private"

    /// The central's reports of an advertiser named `name` while scanning for `time`.
    static func scan(_ s: SecureStacks, for time: Duration) -> [ScanReport] {
        let stacks = s.stacks
        let before = stacks.centralEvents.values.count
        let started = Recorder<Bool>()
        stacks.central.startScanning(ScanOptions(filterDuplicates: false)) { started.append((try? $0.get()) != nil) }
        stacks.run(until: { started.count == 1 })
        stacks.loop.advance(by: time)
        let stopped = Recorder<Bool>()
        stacks.central.stopScanning { stopped.append((try? $0.get()) != nil) }
        stacks.run(until: { stopped.count == 1 })
        return stacks.centralEvents.values.dropFirst(before).compactMap { event in
            if case .advertisingReport(let report) = event, report.localName == name { return report }
            return nil
        }
    }

    static func advertise(_ s: SecureStacks) -> Bool {
        let done = Recorder<Bool>()
        s.stacks.peripheral.startAdvertising(AdvertisingContent(localName: name)) { done.append((try? $0.get()) != nil) }
        return s.stacks.run(until: { done.count == 1 }) && done.values == [true]
    }

    static func connect(_ s: SecureStacks, to address: BluetoothAddress) -> Bool {
        let connected = Recorder<Connection>()
        s.stacks.central.connect(to: address, options: ConnectOptions(timeout: .seconds(5))) {
            if let connection = try? $0.get() { connected.append(connection) }
        }
        guard s.stacks.run(until: { connected.count == 1 && !s.stacks.peripheral.openConnections.isEmpty }, limit: .seconds(10)) else {
            return false
        }
        s.stacks.centralHandle = connected.values[0].handle
        s.stacks.peripheralHandle = s.stacks.peripheral.openConnections[0].handle
        s.stacks.loop.advance(by: .milliseconds(200))
        return true
    }

    /// With the extended commands and with the legacy ones (whose advertising ends with a connection without an
    /// event: the peripheral's list is reloaded after the bond all the same).
    @Test("RPAs made and rotated by the controller while advertising; a bonded central sees the identity and reconnects",
          arguments: [true, false])
    func controllerPrivacy(extendedCommands: Bool) throws {
        var central = security()
        central.privateAddressRotation = .seconds(2)
        var peripheral = security()
        peripheral.privateAddressRotation = .seconds(2)
        let s = SecureStacks(central: central, peripheral: peripheral) { configuration, _ in
            configuration.usesExtendedAdvertising = extendedCommands
        }
        let stacks = s.stacks
        let started = Recorder<Bool>()
        stacks.peripheral.start { started.append((try? $0.get()) != nil) }
        stacks.central.start { started.append((try? $0.get()) != nil) }
        try #require(stacks.run(until: { started.count == 2 }) && started.values == [true, true])
        stacks.loop.advance(by: .milliseconds(100))
        #expect(stacks.peripheral.controllerInfo.usesControllerPrivacy && stacks.central.controllerInfo.usesControllerPrivacy)
        #expect(stacks.peripheral.controllerInfo.ownAddressType == .randomIdentity)
        let irk = try #require(stacks.peripheral.localIdentityResolvingKey)
        let identity = try #require(stacks.peripheral.localIdentityAddress)

        // Unbonded: RPAs of the peripheral's IRK, a new one every 2 s while it keeps advertising.
        try #require(Self.advertise(s))
        let current = Recorder<BluetoothAddress>()
        stacks.peripheral.currentPrivateAddress { current.append($0) }
        stacks.run(until: { current.count == 1 })
        #expect(try ResolvablePrivateAddress.resolves(try #require(current.last), irk: irk))
        let heard = Self.scan(s, for: .seconds(5))
        try #require(!heard.isEmpty)
        #expect(heard.allSatisfy { $0.address.kind == .resolvablePrivate && (try? ResolvablePrivateAddress.resolves($0.address, irk: irk)) == true })
        #expect(Set(heard.map(\.address)).count >= 2, "rotated while advertising")

        // Bond through the latest RPA.
        let latest = try #require(Self.scan(s, for: .milliseconds(500)).last?.address)
        try #require(Self.connect(s, to: latest))
        _ = try #require(s.pair()).get()
        #expect(s.bondCount(stacks.central) == 1)
        let done = Recorder<Bool>()
        stacks.central.disconnect(connectionHandle: stacks.centralHandle) { done.append((try? $0.get()) != nil) }
        try #require(stacks.run(until: { done.count == 1 && stacks.peripheral.openConnections.isEmpty }))
        stacks.loop.advance(by: .seconds(1))  // the resolving lists reload once nothing runs
        #expect(!stacks.peripheral.securityState.resolvingListDirty && !stacks.central.securityState.resolvingListDirty,
                "both lists hold the new bond")

        // Bonded: the central's controller resolves the RPAs: the host sees the identity, type 0x02/0x03.
        try #require(Self.advertise(s))
        let resolved = Self.scan(s, for: .seconds(3))
        try #require(!resolved.isEmpty)
        #expect(resolved.allSatisfy { $0.address == identity && $0.addressType.rawValue >= 0x02 }, "\(resolved.map(\.address))")
        // Reconnecting by identity; the encrypted read works with the bond, without pairing again.
        try #require(Self.connect(s, to: identity))
        #expect(try stacks.gatt(.readCharacteristicValue(handle: SecureStacks.database.1))?.get() == .value([0x5E, 0xC2]))
        #expect(s.completed(stacks.centralEvents).count == 1, "paired once")
        stacks.disconnectAndCheckLeaks()
    }

    @Test("privacy off, or not offered: the host's own addresses, legacy own address types")
    func notUsedWithoutPrivacy() throws {
        let s = SecureStacks()
        try #require(s.stacks.connect())
        #expect(!s.stacks.central.controllerInfo.usesControllerPrivacy)
        #expect(s.stacks.central.controllerInfo.ownAddressType == .random)
        s.stacks.disconnectAndCheckLeaks()
    }
}
