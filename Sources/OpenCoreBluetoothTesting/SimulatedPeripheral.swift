public import BluetoothCore
import ATT
import BluetoothEngine
import BluetoothRuntime
public import Foundation
import GATT
import Host
public import OpenCoreBluetooth
import StackLauncher
import VirtualController

/// A declared peripheral running in a ``SimulatedWorld``: a real host stack on its own controller on the world's
/// air, advertising and serving its GATT database (Core 5.4 Vol 3 Part G), every request of the app answered by its
/// ``SimulatedPeripheralDelegate``. The `simulate…` methods drive it from the test, under the names of Nordic's mock.
public final class SimulatedPeripheral: Sendable {
    public let spec: PeripheralSpec
    /// The address the app sees (random static).
    public let address: BluetoothAddress
    let stack: LaunchedStack
    let controller: VirtualController
    let origin: AirPosition
    /// Where the delegate is called, one request at a time.
    let queue: DispatchQueue
    let record: @Sendable (SimulatedExchange.Kind) -> Void
    let state = LockedValue(State())
    /// The world's clock, when it is virtual.
    let sharedTime: SharedTime?

    struct State {
        /// By value handle.
        var characteristics: [UInt16: SimulatedCharacteristic] = [:]
        /// CCCD handle → value handle.
        var clientConfigurations: [UInt16: UInt16] = [:]
        /// By characteristic UUID string.
        var values: [String: Data] = [:]
        var connections: Set<UInt16> = []
        /// Per connection: the value handles it enabled.
        var subscriptions: [UInt16: [UInt16: GATTClientConfiguration]] = [:]
        var advertising: AdvertisingContent?
        /// A value update not sent yet (Android's personality: one at a time).
        var valueInFlight = false
        /// Per connection: its parameters now.
        var parameters: [UInt16: ConnectionParameters] = [:]
    }

    var delegate: any SimulatedPeripheralDelegate { spec.delegate ?? DefaultSimulatedPeripheralDelegate() }

    /// Runs `work` on the delegate's queue; on a world with virtual time, counted as the world's work, so the clock
    /// does not skip ahead while the test's delegate is deciding an answer.
    func onDelegateQueue(_ work: @escaping @Sendable () -> Void) {
        queue.async(countedBy: sharedTime, execute: work)
    }
    var label: String { spec.name ?? spec.advertisedName ?? address.string }

    init(spec: PeripheralSpec, stack: LaunchedStack, controller: VirtualController, origin: AirPosition,
         sharedTime: SharedTime?, record: @escaping @Sendable (SimulatedExchange.Kind) -> Void) {
        self.spec = spec
        self.sharedTime = sharedTime
        self.stack = stack
        self.controller = controller
        self.origin = origin
        self.record = record
        address = stack.controllerInfo.ownAddress
        queue = DispatchQueue(label: "OpenCoreBluetoothTesting.peripheral.\(spec.name ?? "unnamed")")
        for service in spec.services {
            for characteristic in service.characteristics { state.withLock { $0.values[characteristic.uuid] = characteristic.value } }
        }
    }

    // MARK: What the test reads

    /// The characteristic's current value (its declared one until written or updated).
    public func value(of characteristic: CBUUID) -> Data? {
        state.withLock { $0.values[characteristic.uuidString] }
    }

    /// Whether a central is connected.
    public var isConnected: Bool { !state.withLock { $0.connections.isEmpty } }

    /// The connection interval of its link to the app (the first one, when there are several; nil: not connected).
    public var connectionInterval: Duration? {
        state.withLock { $0.parameters.sorted { $0.key < $1.key }.first?.value.interval }
            .map(SimulatedConnectionParameters.interval(units:))
    }

    /// Whether a connected central has enabled notifications or indications of the characteristic.
    public func isSubscribed(_ characteristic: CBUUID) -> Bool {
        state.withLock { state in
            guard let handle = state.characteristics.first(where: { $0.value.uuid == characteristic.uuidString })?.key else { return false }
            return state.subscriptions.values.contains { !($0[handle] ?? []).isEmpty }
        }
    }

    // MARK: Driving it

    /// Moves it nearer or out of range (Nordic's `simulateProximityChange`): the RSSI the app reads follows, and out
    /// of range nothing is heard and its links time out at both ends.
    public func simulateProximityChange(_ proximity: SimulatedProximity) {
        let air = controller.air, controller = controller
        let position = AirPosition(x: origin.x + proximity.distance, y: origin.y, z: origin.z)
        air.eventLoop.execute { air.move(controller, to: position) }
    }

    /// What the app receives of a value update (``simulateValueUpdate(_:for:delivery:)``).
    public enum Delivery: Sendable {
        /// Notified (or indicated) once to every subscribed central.
        case once
        /// The value changes but the notification is lost on the way.
        case dropped
        /// Notified twice, as a flaky radio retransmitting delivers it.
        case duplicated
    }

    /// Changes the characteristic's value and notifies (or indicates) it to the subscribed centrals, as Nordic's
    /// `simulateValueUpdate` (a characteristic the app never subscribed to is only changed). False when it was not
    /// taken: no such characteristic, or, with Android's personality, the last value is not sent yet
    /// (`ERROR_GATT_WRITE_REQUEST_BUSY`): a notification counts as sent once queued, an indication once the app's
    /// stack confirmed it.
    @discardableResult
    public func simulateValueUpdate(_ data: Data, for characteristic: CBUUID, delivery: Delivery = .once) -> Bool {
        // Android's notifyCharacteristicChanged refuses a value while the last is not sent (ERROR_GATT_WRITE_REQUEST_BUSY).
        let oneInFlight = spec.personality?.appRunsTheGATTServer == true
        guard let (handle, indicates) = state.withLock({ state -> (UInt16, Bool)? in
            guard let handle = state.characteristics.first(where: { $0.value.uuid == characteristic.uuidString })?.key else { return nil }
            if oneInFlight {
                guard !state.valueInFlight else { return nil }
                state.valueInFlight = true
            }
            state.values[characteristic.uuidString] = data
            return (handle, state.subscriptions.values.contains { $0[handle]?.contains(.indication) == true })
        }) else { return false }
        let engine = stack.engine
        let times = switch delivery {
        case .once: 1
        case .dropped: 0
        case .duplicated: 2
        }
        if times == 0 { state.withLock { $0.valueInFlight = false } }
        for _ in 0..<times {
            // A notification is sent once queued (onNotificationSent); an indication once confirmed or failed (the
            // events in watchEvents).
            engine.updateValue(Array(data), handle: handle, to: nil) { [state] result in
                if !indicates || ((try? result.get())?.isEmpty ?? true) { state.withLock { $0.valueInFlight = false } }
            }
        }
        return true
    }

    /// Ends every link from its side (LL_TERMINATE_IND, Remote User Terminated Connection), as Nordic's
    /// `simulateDisconnection`; it advertises again.
    public func simulateDisconnection() {
        let engine = stack.engine
        for handle in state.withLock({ $0.connections }) { engine.disconnect(connectionHandle: handle) }
    }

    /// Its links stop being heard, without a word (interference, a device carried away and back at once): both
    /// ends see a supervision timeout.
    public func simulateLinkLoss() {
        controller.dropLinks()
    }

    /// Switches its radio off: it stops advertising for the app, and its links time out (the app sees
    /// `didDisconnectPeripheral` with a connection timeout error).
    public func simulatePowerOff() {
        controller.setRadio(false)
    }

    /// Switches its radio back on: it advertises again.
    public func simulatePowerOn() {
        controller.setRadio(true)
        readvertise()
    }

    /// Resets the device (Nordic's `simulateReset`): it goes silent until its links have timed out, then comes back
    /// advertising, its values as declared again.
    public func simulateReset() async {
        simulatePowerOff()
        let deadline = ContinuousClock.now + .seconds(40)
        while isConnected, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        state.withLock { state in
            for service in spec.services { for characteristic in service.characteristics { state.values[characteristic.uuid] = characteristic.value } }
        }
        simulatePowerOn()
    }

    /// Forgets every bond it holds (a factory reset, or the user's "Forget This Device" on its side): an app that
    /// paired with it still has its keys, and its next attempt to encrypt fails as iOS reports it
    /// (`CBError.peerRemovedPairingInformation`); the app must forget the device and pair again.
    public func simulateBondRemoval() async {
        let host = stack.host
        let bonds = await withCheckedContinuation { done in host.bonds { done.resume(returning: $0) } }
        for bond in bonds {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                host.removeBond(identityAddress: bond.identityAddress) { _ in done.resume() }
            }
        }
    }

    /// Replaces its services (a firmware update), telling connected centrals with a Service Changed indication
    /// over the whole range when `notifying` (Vol 3 Part G §7.1), or not at all, as a buggy device does (the app
    /// then keeps stale handles).
    public func simulateServiceChange(_ services: [SimulatedService], notifying: Bool = true) async throws {
        let database = try build(services)
        let result = await stack.awaitCompletion { done in
            stack.engine.replaceGATTDatabase(database, changedRange: notifying ? ATTHandleRange.all : nil, completion: done)
        }
        try result.mapError { SimulatedWorldError("the new services were refused: \($0.reason)") }.get()
    }

    /// Stops it: its links end, it leaves the air.
    func stop() {
        controller.setRadio(false)
        stack.shutdown()
    }

    // MARK: Advertising

    func startAdvertising() async throws(SimulatedWorldError) {
        guard spec.isAdvertising else { return }
        var content = AdvertisingContent(localName: spec.advertisedName,
                                         serviceUUIDs: spec.advertisedServiceUUIDs.compactMap { try? BluetoothUUID(string: $0) })
        if let data = spec.manufacturerData, data.count >= 2 {
            content.manufacturerData = (CompanyIdentifier(rawValue: UInt16(data[data.startIndex]) | UInt16(data[data.startIndex + 1]) << 8),
                                        Array(data.dropFirst(2)))
        }
        state.withLock { $0.advertising = content }
        let options = advertisingOptions
        let result = await stack.awaitCompletion { done in stack.engine.startAdvertising(content, options: options, completion: done) }
        try result.mapError { SimulatedWorldError("\(label) cannot advertise: \($0.reason)") }.get()
    }

    func readvertise() {
        guard spec.isAdvertising, let content = state.withLock({ $0.advertising }) else { return }
        stack.engine.startAdvertising(content, options: advertisingOptions) { _ in }
    }

    /// Connectable or not, at the spec's interval (in 0.625 ms units, at least 20 ms: Vol 4 Part E §7.8.5).
    private var advertisingOptions: AdvertisingOptions {
        let interval = max(0x20, UInt16(clamping: Int(spec.advertisingInterval / .microseconds(625))))
        return AdvertisingOptions(kind: spec.isConnectable ? .connectable : .nonConnectable, intervalMin: interval, intervalMax: interval)
    }
}

/// Something the world could not set up, with the reason.
public struct SimulatedWorldError: Error, CustomStringConvertible, Sendable {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}
