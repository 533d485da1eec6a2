import Foundation
import StackLauncher
import Testing
@testable import OpenCoreBluetooth

/// Issue 32 item 5, `.unauthorized`: an app whose user answered iOS's Bluetooth prompt with "Don't Allow" (or whose
/// device restricts Bluetooth) gets `.unauthorized` from both managers, `CBManager.authorization` says which, no
/// stack is opened (the device never appears on the air) and commands are misuse, as on iOS.
@Suite struct AuthorizationTests {
    @Test func theAnswerComesFromTheEnvironment() throws {
        let variable = OCBApplication.authorizationEnvironmentVariable
        #expect(try OCBApplication(environment: [:]).bluetoothAuthorization == .allowedAlways)
        #expect(try OCBApplication(environment: [variable: "denied"]).bluetoothAuthorization == .denied)
        #expect(try OCBApplication(environment: [variable: "Restricted"]).bluetoothAuthorization == .restricted)
        #expect(try OCBApplication(environment: [variable: "allowed"]).bluetoothAuthorization == .allowedAlways)
        #expect(throws: OCBApplication.ConfigurationError("OCB_BLUETOOTH_AUTHORIZATION=maybe is not allowed, denied or restricted")) {
            try OCBApplication(environment: [variable: "maybe"])
        }
        // A prompt not answered yet is answered at once: allowed.
        #expect(OCBApplication(authorization: .notDetermined).bluetoothAuthorization == .allowedAlways)
    }

    @Test(arguments: [CBManagerAuthorization.denied, .restricted])
    func managersOfAnAppNotAllowedAreUnauthorizedAndOpenNoStack(_ answer: CBManagerAuthorization) async throws {
        let air = InProcessAir(seed: 3205, label: "authorization.air")
        defer { air.shutdown() }
        let provider = HostBackend.provider(.inProcess(air), application: OCBApplication(authorization: answer))
        let centralLog = CallLog(label: "authorization.central")
        let central = CentralRecorder(log: centralLog)
        let peripheralLog = CallLog(label: "authorization.peripheral")
        let peripheral = PeripheralRecorder(log: peripheralLog)
        let managers = CBBackendRegistry.$taskProvider.withValue(provider) {
            Box(value: (CBCentralManager(delegate: central, queue: centralLog.queue),
                        CBPeripheralManager(delegate: peripheral, queue: peripheralLog.queue)))
        }
        let unauthorized = "state \(CBManagerState.unauthorized)"
        try await waitFor("both managers unauthorized", on: centralLog.queue,
                          until: { centralLog.entries == [unauthorized] && peripheralLog.entries == [unauthorized] },
                          seen: { "central \(centralLog.entries), peripheral \(peripheralLog.entries)" })
        let (centralManager, peripheralManager) = managers.value
        #expect(centralManager.authorization == answer && peripheralManager.authorization == answer)
        centralLog.queue.sync { centralManager.scanForPeripherals(withServices: nil) }
        #expect(!centralManager.isScanning)
        #expect(centralManager.misuseLog.count == 1, "\(centralManager.misuseLog)")
        // No stack: nothing of the app is on the air.
        #expect((centralManager.backend as? EngineCentralBackend)?.launchedStack == nil)
        #expect((peripheralManager.backend as? EnginePeripheralBackend)?.launchedStack == nil)
        try await Task.sleep(for: .milliseconds(200))
        #expect(centralLog.entries == [unauthorized] && peripheralLog.entries == [unauthorized])
    }
}
