import AdvertisingData
import BluetoothCore
import Foundation
import HCI
import Host
import SMP
import BluetoothEngine

/// What the security interop runs share (``SecurityInteropRun`` with pairing_peer.py, ``OOBSigningInteropRun`` with
/// oob_signing_peer.py): our host and a Bumble peer script on one controller setup, Bumble's JSON keystore file,
/// and the steps and observations every such test uses. ``stop()`` ends everything (SIGKILL).
protocol BumbleSecurityRun: AnyObject, Sendable {
    var controllers: InteropControllers { get }
    var ours: InteropHost { get }
    var peer: InteropProcess { get }
    var keystore: String { get }
}

extension BumbleSecurityRun {
    func stop() {
        peer.kill()
        ours.shutdown()
        controllers.stop()
        try? FileManager.default.removeItem(atPath: keystore)
    }

    /// Everything both sides said, for failure messages.
    var transcript: String {
        let events = ours.events.map { "  \($0)" }.suffix(60).joined(separator: "\n")
        return "our host's events:\n\(events)\n\(peer.transcript)\n\(controllers.transcript)"
    }

    /// The peer's JSON events named `name`.
    func peerEvents(_ name: String) -> [InteropJSON] { peer.jsonLines.filter { $0.string("event") == name } }

    // MARK: Our host as central

    func connect(to address: BluetoothAddress) async throws -> UInt16 {
        let options = ConnectOptions(timeout: .seconds(15))
        let connected: Result<Connection, HostError> = try await InteropHost.wait(20, "connect") { [ours] done in
            ours.host.connect(to: address, options: options) { done($0) }
        }
        return try connected.get().handle
    }

    func pair(_ handle: UInt16, seconds: Double = 40) async throws -> Result<PairingOutcome, HostError> {
        try await InteropHost.wait(seconds, "pair") { [ours] done in
            ours.host.pair(connectionHandle: handle) { done($0) }
        }
    }

    func disconnect(_ handle: UInt16) async throws {
        let result: Result<HCIStatus, HostError> = try await InteropHost.wait(10, "disconnect") { [ours] done in
            ours.host.disconnect(connectionHandle: handle) { done($0) }
        }
        _ = try result.get()
    }

    // MARK: Our host as peripheral

    /// Waits for our first pairing completion or failure (Bumble initiates).
    func waitForOurPairing(seconds: Double = 30) async throws {
        try await ours.waitForEvents(seconds, "pairing completed or failed") { events in
            events.contains { event in
                switch event {
                case .pairingCompleted, .pairingFailed: true
                default: false
                }
            }
        }
    }

    // MARK: What our host reported

    /// The reasons of our host's Pairing Failed events.
    var ourFailures: [(reason: SMPPairingFailedReason?, error: HostError)] {
        ours.events.compactMap { event in
            if case .pairingFailed(_, let reason, let error) = event { (reason, error) } else { nil }
        }
    }

    var ourCompletions: [(handle: UInt16, outcome: PairingOutcome)] {
        ours.events.compactMap { event in
            if case .pairingCompleted(let handle, let outcome) = event { (handle, outcome) } else { nil }
        }
    }

    /// Our host's Encryption Change events that turned encryption on.
    var ourEncryptions: [UInt16] {
        ours.events.compactMap { event in
            if case .encryptionChanged(let handle, .success, true) = event { handle } else { nil }
        }
    }
}

extension InteropHost {
    /// Our peripheral advertises connectably as `name` (before a Bumble central starts, and again for a reconnect).
    func advertise(name: String) async throws {
        let data = AdvertisingData([.flags(.generalDiscoverableLEOnly), .localName(LocalName(name), complete: true)])
        let result: Result<Void, HostError> = try await InteropHost.wait(10, "start advertising") { [host] done in
            host.startAdvertising(advertisingData: data, options: AdvertisingOptions(intervalMin: 0x0020, intervalMax: 0x0030)) {
                done($0)
            }
        }
        try result.get()
    }
}
