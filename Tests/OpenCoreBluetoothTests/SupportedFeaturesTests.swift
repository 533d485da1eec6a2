import Host
import Testing
@testable import OpenCoreBluetooth
import BluetoothEngine

/// `CBCentralManager.supports(_:)` answers from the stack: `.extendedScanAndConnect` when the host drives the
/// controller's extended advertising, scanning and connection commands (LE Extended Advertising, Core 5.4 Vol 6
/// Part B §4.6 bit 12, and the commands of Vol 4 Part E §7.8.53–§7.8.66), issue 12 item 5 and issue 15 item 1.
@Suite struct SupportedFeaturesTests {
    @Test func extendedScanAndConnectFollowsWhatTheHostUses() {
        var bluetooth5 = ControllerInfo()
        bluetooth5.leFeatures = 1 << 12 | 1 << 0
        bluetooth5.usesExtendedAdvertising = true
        var bluetooth42 = ControllerInfo()
        bluetooth42.leFeatures = 1 << 0 | 1 << 5
        #expect(bluetooth5.hasExtendedAdvertising)
        #expect(!bluetooth42.hasExtendedAdvertising)
        #expect(HostBackend.supportsExtendedScanAndConnect(controller: bluetooth5))
        #expect(!HostBackend.supportsExtendedScanAndConnect(controller: bluetooth42))
        var featureOnly = bluetooth5
        featureOnly.usesExtendedAdvertising = false  // the feature bit without the commands (Bumble's controller)
        #expect(!HostBackend.supportsExtendedScanAndConnect(controller: featureOnly))
        #expect(!HostBackend.supportsExtendedScanAndConnect(controller: nil))
        #expect(CBCentralManager.supports([]))
    }
}
