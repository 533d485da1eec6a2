import Host
import Testing
@testable import OpenCoreBluetooth

/// `CBCentralManager.supports(_:)` answers from the controller (LE Extended Advertising, Core 5.4 Vol 6 Part B
/// §4.6 bit 12) and the host (which must drive the extended commands), issue 12 item 5.
@Suite struct SupportedFeaturesTests {
    @Test func extendedScanAndConnectNeedsTheControllerAndTheHost() {
        var bluetooth5 = ControllerInfo()
        bluetooth5.leFeatures = 1 << 12 | 1 << 0
        var bluetooth42 = ControllerInfo()
        bluetooth42.leFeatures = 1 << 0 | 1 << 5
        #expect(bluetooth5.hasExtendedAdvertising)
        #expect(!bluetooth42.hasExtendedAdvertising)
        #expect(HostBackend.supportsExtendedScanAndConnect(controller: bluetooth5, hostDrivesExtendedAdvertising: true))
        #expect(!HostBackend.supportsExtendedScanAndConnect(controller: bluetooth42, hostDrivesExtendedAdvertising: true))
        #expect(!HostBackend.supportsExtendedScanAndConnect(controller: bluetooth5, hostDrivesExtendedAdvertising: false))
        #expect(!HostBackend.supportsExtendedScanAndConnect(controller: nil, hostDrivesExtendedAdvertising: true))
        // Today's host speaks legacy advertising only: false whatever the controller.
        #expect(!HostStack.drivesExtendedAdvertising)
        #expect(!CBCentralManager.supports(.extendedScanAndConnect))
        #expect(CBCentralManager.supports([]))
    }
}
