import BluetoothRuntime
import Foundation

/// An iOS app's state as far as Bluetooth is concerned (UIKit's application states, Core Bluetooth Programming
/// Guide, "Core Bluetooth Background Processing for iOS Apps").
public enum OCBApplicationState: String, Sendable, Hashable, CaseIterable {
    /// On screen: no restriction (the default, and a Linux program's natural state).
    case foreground
    /// Running off screen: Bluetooth restricted, events delivered only with the role's background mode.
    case background
    /// Frozen: no event is delivered; they wait, in order, until the app is in the foreground again.
    case suspended
}

/// The `UIBackgroundModes` of an app's Info.plist that concern Bluetooth.
public struct OCBBackgroundModes: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `bluetooth-central`: a central manager keeps receiving its events in the background.
    public static let bluetoothCentral = OCBBackgroundModes(rawValue: 1 << 0)
    /// `bluetooth-peripheral`: a peripheral manager keeps receiving its events in the background.
    public static let bluetoothPeripheral = OCBBackgroundModes(rawValue: 1 << 1)

    /// The Info.plist names (`bluetooth-central`, `bluetooth-peripheral`); nil names the first unknown one.
    public init(infoPlistValues values: [String]) throws(OCBApplication.ConfigurationError) {
        var modes: OCBBackgroundModes = []
        for value in values.map({ $0.trimmingCharacters(in: .whitespaces) }) where !value.isEmpty {
            switch value {
            case "bluetooth-central": modes.insert(.bluetoothCentral)
            case "bluetooth-peripheral": modes.insert(.bluetoothPeripheral)
            default:
                throw OCBApplication.ConfigurationError(
                    "unknown background mode \"\(value)\" (expected bluetooth-central, bluetooth-peripheral)")
            }
        }
        self = modes
    }
}

/// iOS's foreground and background rules for Bluetooth, simulated, opt-in (Core Bluetooth Programming Guide,
/// "Core Bluetooth Background Processing for iOS Apps"). A Linux program is always in the foreground unless it
/// asks: `OCB_APP_STATE=foreground|background|suspended` at start, `OCB_BACKGROUND_MODES=bluetooth-central,
/// bluetooth-peripheral` in the place of Info.plist's `UIBackgroundModes`, and ``enter(_:)`` at run time (tests).
///
/// What changes out of the foreground, as Apple documents it:
/// - Events: in the background a manager receives its events only when the app has the role's background mode;
///   without it, and always when suspended, events wait and are delivered in order when the app returns to the
///   foreground (a request waiting longer than ATT's 30 s times out for the peer, as it would). Advertisement
///   reports are not kept: a suspended app's scan finds nothing.
/// - Scanning: a scan without service UUIDs finds nothing; `CBCentralManagerScanOptionAllowDuplicatesKey` is
///   ignored (each device once per scan); the controller scans 60 ms of every 1.28 s instead of half the time.
/// - Advertising: with `bluetooth-peripheral`, the local name is left out and the service UUIDs go to the overflow
///   area (`ServiceOverflowArea`), which only a central scanning for one of them explicitly discovers; without
///   it, advertising stops until the app is in the foreground again.
///
/// The app's Bluetooth authorization stands in for the user's answer to iOS's privacy prompt:
/// `OCB_BLUETOOTH_AUTHORIZATION=allowed|denied|restricted` (allowed unless set), or `authorization:` for a test's
/// application. Denied or restricted, its managers open no stack and report `.unauthorized`, and
/// `CBManager.authorization` says which; iOS ends an app whose authorization the user changes in Settings, so
/// the answer holds for the application's life.
///
/// The managers made from one ``CBBackendProvider`` belong to its application (``CBBackendProvider/application``):
/// the process's default one is ``process``; a test's private provider has one of its own, so tests that change
/// it do not touch each other.
public final class OCBApplication: Sendable {
    /// A bad `OCB_APP_STATE` or `OCB_BACKGROUND_MODES` value.
    public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
        /// What is wrong with the value, in words.
        public var reason: String
        /// An error with this reason.
        public init(_ reason: String) { self.reason = reason }
        public var description: String { reason }
    }

    /// The environment variable giving the state at start.
    public static let stateEnvironmentVariable = "OCB_APP_STATE"
    /// The environment variable standing in for Info.plist's `UIBackgroundModes` (comma-separated).
    public static let backgroundModesEnvironmentVariable = "OCB_BACKGROUND_MODES"
    /// The environment variable standing in for the user's answer to the Bluetooth privacy prompt.
    public static let authorizationEnvironmentVariable = "OCB_BLUETOOTH_AUTHORIZATION"

    /// The process's application, from the environment (a bad value is logged once as a warning and the
    /// default kept: foreground, no background mode).
    public static let process: OCBApplication = {
        do throws(ConfigurationError) {
            return try OCBApplication(environment: ProcessInfo.processInfo.environment)
        } catch {
            Log.coreBluetooth.warning("\(error.reason); the app stays in the foreground, allowed to use Bluetooth")
            return OCBApplication()
        }
    }()

    private struct State {
        var state: OCBApplicationState
        var modes: OCBBackgroundModes
        var observers: [ObjectIdentifier: WeakObserver] = [:]
    }

    private struct WeakObserver {
        weak var value: (any ApplicationStateObserver)?
    }

    private let storage: LockedValue<State>

    /// Whether the user let the app use Bluetooth (`CBManager.authorization`): `.allowedAlways`, `.denied` or
    /// `.restricted`.
    public let bluetoothAuthorization: CBManagerAuthorization

    /// An application in `state` with `backgroundModes` and `authorization` (defaults: foreground, no background
    /// mode, allowed). `.notDetermined` is taken as allowed: the prompt is answered at once.
    public init(state: OCBApplicationState = .foreground, backgroundModes: OCBBackgroundModes = [],
                authorization: CBManagerAuthorization = .allowedAlways) {
        storage = LockedValue(State(state: state, modes: backgroundModes))
        bluetoothAuthorization = authorization == .notDetermined ? .allowedAlways : authorization
    }

    /// Whether the app's managers may use Bluetooth.
    var isBluetoothAllowed: Bool { bluetoothAuthorization == .allowedAlways }

    /// Reads `OCB_APP_STATE` and `OCB_BACKGROUND_MODES` from `environment` (unset or empty: the defaults).
    public convenience init(environment: [String: String]) throws(ConfigurationError) {
        var state = OCBApplicationState.foreground
        if let text = environment[Self.stateEnvironmentVariable], !text.isEmpty {
            guard let parsed = OCBApplicationState(rawValue: text.lowercased()) else {
                throw ConfigurationError("\(Self.stateEnvironmentVariable)=\(text) is not foreground, background or suspended")
            }
            state = parsed
        }
        let modes = try OCBBackgroundModes(
            infoPlistValues: (environment[Self.backgroundModesEnvironmentVariable] ?? "").split(separator: ",").map(String.init))
        var authorization = CBManagerAuthorization.allowedAlways
        if let text = environment[Self.authorizationEnvironmentVariable], !text.isEmpty {
            switch text.lowercased() {
            case "allowed", "allowedalways", "allowed-always": authorization = .allowedAlways
            case "denied": authorization = .denied
            case "restricted": authorization = .restricted
            default:
                throw ConfigurationError("\(Self.authorizationEnvironmentVariable)=\(text) is not allowed, denied or restricted")
            }
        }
        self.init(state: state, backgroundModes: modes, authorization: authorization)
    }

    /// The current state.
    public var state: OCBApplicationState { storage.withLock { $0.state } }

    /// The background modes (Info.plist's `UIBackgroundModes`).
    public var backgroundModes: OCBBackgroundModes {
        get { storage.withLock { $0.modes } }
        set { change { $0.modes = newValue } }
    }

    /// Moves the app to `newState` (as the user or the system does on iOS): the managers' events wait or flow, and
    /// their scans and advertising change form, at once.
    public func enter(_ newState: OCBApplicationState) {
        change { $0.state = newState }
    }

    /// Whether a manager of `role` receives its events now.
    func deliversEvents(to role: OCBBackgroundModes) -> Bool {
        storage.withLock { $0.state == .foreground || ($0.state == .background && $0.modes.contains(role)) }
    }

    /// Whether the background restrictions on scanning and advertising apply.
    var isRestricted: Bool { state != .foreground }

    /// Registers a manager (weakly) to hear of changes.
    func observe(_ observer: any ApplicationStateObserver) {
        storage.withLock { $0.observers[ObjectIdentifier(observer)] = WeakObserver(value: observer) }
    }

    private func change(_ body: (inout State) -> Void) {
        let observers = storage.withLock { state -> [any ApplicationStateObserver] in
            body(&state)
            state.observers = state.observers.filter { $0.value.value != nil }
            return state.observers.values.compactMap(\.value)
        }
        for observer in observers { observer.applicationStateChanged(self) }
    }
}

/// A manager that follows its application's state.
protocol ApplicationStateObserver: AnyObject, Sendable {
    func applicationStateChanged(_ application: OCBApplication)
}
