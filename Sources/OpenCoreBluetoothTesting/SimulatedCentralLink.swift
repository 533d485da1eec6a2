public import Foundation
public import OpenCoreBluetooth
import BluetoothCore
import BluetoothLE
import BluetoothRuntime

/// A declared central's link to the app's peripheral (``SimulatedCentral/connect(_:within:)``): its GATT client
/// (Core 5.4 Vol 3 Part G §4), by characteristic UUID. An ATT Error Response the app's `respond(to:withResult:)`
/// gave is thrown as `CBATTError` with its code; anything else (a dropped link, a timeout) as ``SimulatedWorldError``.
public final class SimulatedCentralLink: Sendable {
    let peripheral: Peripheral
    /// Every service found, and every characteristic with its service's UUID.
    private let found = LockedValue<(services: [BluetoothUUID], characteristics: [(service: BluetoothUUID, characteristic: RemoteCharacteristic)])>(([], []))

    init(peripheral: Peripheral) {
        self.peripheral = peripheral
    }

    /// The ATT_MTU of the link.
    public var attMTU: Int { peripheral.mtu }
    /// Whether the link is up.
    public var isConnected: Bool { peripheral.isConnected }
    /// The services found (the GAP and GATT services included).
    public var services: [CBUUID] {
        found.load().services.map { CBUUID(string: $0.description) }
    }
    /// The characteristics found.
    public var characteristics: [CBUUID] { found.load().characteristics.map { CBUUID(string: $0.characteristic.uuid.description) } }

    /// Discovers every service and characteristic again (after a Service Changed indication, or to see what the app
    /// published since).
    public func discover() async throws {
        do {
            var list: [(BluetoothUUID, RemoteCharacteristic)] = []
            let services = try await peripheral.discoverServices()
            for service in services {
                for characteristic in try await peripheral.discoverCharacteristics(of: service) {
                    list.append((service.uuid, characteristic))
                }
            }
            found.store((services.map(\.uuid), list))
        } catch {
            throw Self.translate(error)
        }
    }

    /// Reads the characteristic's value (a long value whole: Read, then Read Blob, Vol 3 Part G §4.8.1, §4.8.3).
    public func read(_ characteristic: CBUUID) async throws -> Data {
        let remote = try remote(characteristic)
        do {
            return Data(try await peripheral.read(remote))
        } catch {
            throw Self.translate(error)
        }
    }

    /// Writes the value: with a response (a Write Request, or prepared writes when it is longer than one, §4.9.3,
    /// §4.9.4) or without (a Write Command, §4.9.1).
    public func write(_ value: Data, to characteristic: CBUUID, withResponse: Bool = true) async throws {
        let remote = try remote(characteristic)
        do {
            try await peripheral.write(remote, value: Array(value), type: withResponse ? .withResponse : .withoutResponse)
        } catch {
            throw Self.translate(error)
        }
    }

    /// Subscribes (writes the CCCD, §4.10, §4.11): notifications or indications as the characteristic offers.
    public func subscribe(to characteristic: CBUUID) async throws -> SimulatedNotifications {
        let remote = try remote(characteristic)
        do {
            return SimulatedNotifications(try await peripheral.notifications(for: remote))
        } catch {
            throw Self.translate(error)
        }
    }

    /// Ends the link (Remote User Terminated Connection).
    public func disconnect() async {
        try? await peripheral.disconnect()
    }

    private func remote(_ uuid: CBUUID) throws -> RemoteCharacteristic {
        let wanted = uuid.uuidString
        guard let entry = found.load().characteristics.first(where: { CBUUID(string: $0.characteristic.uuid.description).uuidString == wanted }) else {
            throw SimulatedWorldError("the app's peripheral has no characteristic \(wanted) (found: \(characteristics.map(\.uuidString)))")
        }
        return entry.characteristic
    }

    /// An ATT Error Response as `CBATTError`, anything else in words.
    static func translate(_ error: any Error) -> any Error {
        if let failure = error as? BluetoothLEError {
            if failure.code == .attError, let code = failure.attError { return CBATTError(attErrorCode: code.rawValue) }
            return SimulatedWorldError(failure.reason)
        }
        return error
    }
}

/// The values a subscription received, kept in order as they arrive (``SimulatedCentralLink/subscribe(to:)``).
public final class SimulatedNotifications: Sendable {
    private let state = LockedValue<(values: [Data], taken: Int)>(([], 0))
    private let stream: ValueStream<[UInt8]>

    init(_ stream: ValueStream<[UInt8]>) {
        self.stream = stream
        Task { [state] in
            for await value in stream { state.withLock { $0.values.append(Data(value)) } }
        }
    }

    /// Every value received so far.
    public var received: [Data] { state.load().values }

    /// The next value not taken yet, waiting for it at most `limit` (nil: none came).
    public func next(within limit: Duration = .seconds(30)) async -> Data? {
        let deadline = ContinuousClock.now + limit
        while true {
            let value = state.withLock { state -> Data? in
                guard state.taken < state.values.count else { return nil }
                state.taken += 1
                return state.values[state.taken - 1]
            }
            if let value { return value }
            guard ContinuousClock.now < deadline else { return nil }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Ends the subscription (the CCCD is written back to 0).
    public func stop() { stream.stop() }
}
