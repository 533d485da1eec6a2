public import ArgumentParser
import AdvertisingData
import L2CAP
import StackLauncher
import BluetoothEngine

/// `--personality iphone|android|bluez` (``PlatformPersonality``, StackLauncher) as `blue serve` applies it: the
/// GATT server Android leaves to the app (``serverBehaviour``) and advertising in legacy PDUs.
extension PlatformPersonality: ExpressibleByArgument {}

extension PlatformPersonality {
    /// What the platform's GATT server leaves to the app: on Android everything (AOSP's `BluetoothGattServer`: the
    /// app adds the 2902 descriptor, answers each request with `sendResponse`, and `notifyCharacteristicChanged`
    /// refuses a value while the last is not sent); iOS and BlueZ answer in the stack.
    var serverBehaviour: ServeBehaviour {
        appRunsTheGATTServer ? ServeBehaviour(appAnswersEveryRequest: true, addsClientConfiguration: false, oneValueInFlight: true) : ServeBehaviour()
    }

    /// ``connectionParameterRequest(for:)`` as a function value.
    var connectionParameterRequester: @Sendable (ConnectionParameters) -> L2CAPConnectionParameterUpdateRequest? {
        let platform = self
        return { current in platform.connectionParameterRequest(for: current) }
    }

    /// `wanted` as the platform advertises it in legacy PDUs (31 octets of advertising data and of scan response,
    /// Vol 3 Part C §11): as it is when it fits; else Android refuses it, the others leave out 128-bit service
    /// UUIDs, then all of them, until it fits.
    func legacyContent(_ wanted: AdvertisingContent) throws(CLIFailure) -> AdvertisingContent {
        func fits(_ content: AdvertisingContent) -> Bool { (try? content.build(hasScanResponse: true)) != nil }
        if fits(wanted) { return wanted }
        if refusesOversizedAdvertising {
            throw CLIFailure(.usage, "--personality \(rawValue): the advertisement does not fit the 31 octets of legacy "
                             + "advertising, and Android refuses it (ADVERTISE_FAILED_DATA_TOO_LARGE) rather than shorten it")
        }
        for services in [wanted.serviceUUIDs.filter { $0.uuid16 != nil }, []] {
            var content = wanted
            content.serviceUUIDs = services
            if fits(content) { return content }
        }
        throw CLIFailure(.usage, "--personality \(rawValue): the advertisement does not fit the 31 octets of legacy advertising")
    }
}
