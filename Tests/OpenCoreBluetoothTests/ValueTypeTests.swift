import BluetoothCore
import Foundation
import Testing
import TestSupport
@testable import OpenCoreBluetooth

@Suite struct CBUUIDTests {
    @Test func shortAndBaseFormsAreEqual() {
        let short = CBUUID(string: "180D")
        let long = CBUUID(string: "0000180D-0000-1000-8000-00805F9B34FB")
        let lower = CBUUID(string: "0000180d-0000-1000-8000-00805f9b34fb")
        #expect(short == long)
        #expect(long == lower)
        #expect(short.hash == long.hash)
        #expect(Set([short, long, lower]).count == 1)
        #expect(long.uuidString == "180D")
        #expect(CBUUID(string: "180d").uuidString == "180D")
        #expect(short != CBUUID(string: "180F"))
        #expect(short != CBUUID(string: "0000180D-0000-1000-8000-00805F9B34FC"))
        #expect(CBUUID(string: "0000180D") == short)
    }

    @Test func stringsDataAndDescriptions() {
        let custom = CBUUID(string: "0cdbe648-eed0-11e6-bc64-92361f002671")
        #expect(custom.uuidString == "0CDBE648-EED0-11E6-BC64-92361F002671")
        #expect(custom.description == "0CDBE648-EED0-11E6-BC64-92361F002671")
        #expect(custom.data.count == 16)
        #expect(custom.data.first == 0x0C)
        #expect(CBUUID(string: "2A37").data == Data([0x2A, 0x37]))
        #expect(CBUUID(string: "12345678").uuidString == "12345678")
        #expect(CBUUID(string: "12345678").data == Data([0x12, 0x34, 0x56, 0x78]))
        #expect(CBUUID(data: Data([0x18, 0x0D])) == CBUUID(string: "180D"))
        #expect(CBUUID(data: custom.data) == custom)
        #expect(CBUUID(string: "180D").description == "Heart Rate")
        #expect(CBUUID(string: CBUUIDClientCharacteristicConfigurationString).description == "Client Characteristic Configuration")
        let uuid = UUID(uuidString: "0CDBE648-EED0-11E6-BC64-92361F002671")!
        #expect(CBUUID(nsuuid: uuid) == custom)
        #expect(CBUUID(nsuuid: UUID(uuidString: "00002A37-0000-1000-8000-00805F9B34FB")!).uuidString == "2A37")
        #expect(custom.copy() as? CBUUID === custom)
    }
}

@Suite struct CBUUIDHostileInputTests {
    /// Apple stops the program on a malformed UUID string or data; ours logs and gives the all-zero UUID, because
    /// the text or bytes may come from a user or a peer. `init(validating:)` throws for user input.
    @Test(arguments: ["", "18", "180", "0x180D", "GGGG", "180D-", "12345678-1234-1234-1234-12345678901Z", "😀😀😀😀"])
    func malformedStringsDoNotCrash(_ text: String) {
        #expect(CBUUID(string: text).bluetoothUUID == CBUUID.invalidValue)
        #expect(CBUUID(string: text).uuidString == "00000000-0000-0000-0000-000000000000")
        #expect(throws: DecodeError.self) { try CBUUID(validating: text) }
        #expect(CBUUID(string: text) != CBUUID(string: "180D"))
    }

    @Test func validatingAcceptsWhatStringAccepts() throws {
        for text in ["180D", "0000180d", "0000180D-0000-1000-8000-00805F9B34FB", "E20A39F4-73F5-4BC4-A12F-17D1AD07A961"] {
            #expect(try CBUUID(validating: text) == CBUUID(string: text))
            #expect(CBUUID(string: text).bluetoothUUID != CBUUID.invalidValue)
        }
    }

    @Test(arguments: [0, 1, 3, 5, 15, 17, 64])
    func malformedDataDoesNotCrash(_ count: Int) {
        #expect(CBUUID(data: Data(repeating: 0xAB, count: count)).bluetoothUUID == CBUUID.invalidValue)
    }
}

@Suite struct ConstantsTests {
    @Test func keysHaveApplesRuntimeValues() {
        #expect(CBAdvertisementDataLocalNameKey == "kCBAdvDataLocalName")
        #expect(CBAdvertisementDataServiceUUIDsKey == "kCBAdvDataServiceUUIDs")
        #expect(CBAdvertisementDataTxPowerLevelKey == "kCBAdvDataTxPowerLevel")
        #expect(CBAdvertisementDataServiceDataKey == "kCBAdvDataServiceData")
        #expect(CBAdvertisementDataManufacturerDataKey == "kCBAdvDataManufacturerData")
        #expect(CBAdvertisementDataOverflowServiceUUIDsKey == "kCBAdvDataHashedServiceUUIDs")
        #expect(CBAdvertisementDataIsConnectable == "kCBAdvDataIsConnectable")
        #expect(CBAdvertisementDataSolicitedServiceUUIDsKey == "kCBAdvDataSolicitedServiceUUIDs")
        #expect(CBCentralManagerScanOptionAllowDuplicatesKey == "kCBScanOptionAllowDuplicates")
        #expect(CBCentralManagerScanOptionSolicitedServiceUUIDsKey == "kCBScanOptionSolicitedServiceUUIDs")
        #expect(CBCentralManagerOptionShowPowerAlertKey == "kCBInitOptionShowPowerAlert")
        #expect(CBCentralManagerOptionRestoreIdentifierKey == "kCBRestoreIdentifierKey")
        #expect(CBCentralManagerOptionDeviceAccessForMedia == "kCBInitOptionDeviceAccessForMedia")
        #expect(CBConnectPeripheralOptionNotifyOnConnectionKey == "kCBConnectOptionNotifyOnConnection")
        #expect(CBConnectPeripheralOptionNotifyOnDisconnectionKey == "kCBConnectOptionNotifyOnDisconnection")
        #expect(CBConnectPeripheralOptionNotifyOnNotificationKey == "kCBConnectOptionNotifyOnNotification")
        #expect(CBConnectPeripheralOptionStartDelayKey == "kCBConnectOptionStartDelay")
        #expect(CBConnectPeripheralOptionEnableTransportBridgingKey == "kCBConnectOptionEnableTransportBridging")
        #expect(CBConnectPeripheralOptionRequiresANCS == "kCBConnectOptionRequiresANCS")
        #expect(CBConnectPeripheralOptionEnableAutoReconnect == "kCBConnectOptionEnableAutoReconnect")
        #expect(CBCentralManagerRestoredStatePeripheralsKey == "kCBRestoredStatePeripherals")
        #expect(CBCentralManagerRestoredStateScanServicesKey == "kCBRestoredStateScanServices")
        #expect(CBCentralManagerRestoredStateScanOptionsKey == "kCBRestoredStateScanOptions")
        #expect(CBConnectionEventMatchingOption.serviceUUIDs.rawValue == "kCBConnectionEventMatchingOptionServiceUUIDs")
        #expect(CBConnectionEventMatchingOption.peripheralUUIDs.rawValue == "kCBConnectionEventMatchingOptionPeripheralUUIDs")
        #expect(CBErrorDomain == "CBErrorDomain")
        #expect(CBATTErrorDomain == "CBATTErrorDomain")
        #expect(CBUUIDCharacteristicExtendedPropertiesString == "2900")
        #expect(CBUUIDCharacteristicUserDescriptionString == "2901")
        #expect(CBUUIDClientCharacteristicConfigurationString == "2902")
        #expect(CBUUIDServerCharacteristicConfigurationString == "2903")
        #expect(CBUUIDCharacteristicFormatString == "2904")
        #expect(CBUUIDCharacteristicAggregateFormatString == "2905")
        #expect(CBUUIDCharacteristicValidRangeString == "2906")
        #expect(CBUUIDCharacteristicObservationScheduleString == "2910")
        #expect(CBUUIDL2CAPPSMCharacteristicString == "ABDD3056-28FA-441D-A470-55A75A52553A")
    }

    @Test func rawValuesMatchApplesHeaders() {
        #expect(CBManagerState.poweredOn.rawValue == 5)
        #expect(CBManagerState.unsupported.rawValue == 2)
        #expect(CBManagerAuthorization.allowedAlways.rawValue == 3)
        #expect(CBPeripheralState.disconnecting.rawValue == 3)
        #expect(CBCharacteristicWriteType.withoutResponse.rawValue == 1)
        #expect(CBCharacteristicProperties.indicateEncryptionRequired.rawValue == 0x200)
        #expect(CBCharacteristicProperties([.read, .notify, .writeWithoutResponse, .write]).rawValue == 0x1E)
        #expect(CBAttributePermissions.writeEncryptionRequired.rawValue == 0x08)
        #expect(CBConnectionEvent.peerConnected.rawValue == 1)
        #expect(CBPeripheralManagerConnectionLatency.high.rawValue == 2)
        #expect(CBError.Code.leGattNearBackgroundNotificationLimit.rawValue == 18)
        #expect(CBError.unknownDevice.rawValue == 12)
        #expect(CBATTError.Code.insufficientResources.rawValue == 0x11)
        #expect(CBATTError.success == .success)
        #expect(CBATTError(attErrorCode: 0x80).code == .unlikelyError)
        #expect(CBATTError(attErrorCode: 0x80).errorCode == 0x80)
        #expect(CBError(.notConnected).errorCode == 3)
        #expect(CBError.errorDomain == "CBErrorDomain")
        let error: any Error = CBError(.peripheralDisconnected)
        var matched = false
        switch error {
        case CBError.peripheralDisconnected: matched = true
        default: break
        }
        #expect(matched)
    }
}

@Suite struct PeerIdentifierTests {
    @Test func identifiersAreNameBasedAndStable() {
        let address = BluetoothAddress(0xC0FFEE_123456, type: .random)
        let identifier = CBPeerIdentifier.identifier(for: address)
        #expect(identifier == CBPeerIdentifier.identifier(for: address))
        #expect(identifier != CBPeerIdentifier.identifier(for: BluetoothAddress(0xC0FFEE_123456, type: .public)))
        #expect(identifier != CBPeerIdentifier.identifier(for: BluetoothAddress(0xC0FFEE_123457, type: .random)))
        // Version 5, RFC 9562 variant.
        #expect(identifier.uuid.6 >> 4 == 5)
        #expect(identifier.uuid.8 >> 6 == 0b10)
    }

    @Test func identifierTextIsTheUUIDsText() {
        for address in [BluetoothAddress(0xC0FFEE_123456, type: .public), BluetoothAddress(0x0A0B0C_0D0E0F, type: .random)] {
            #expect(CBPeerIdentifier.identifier(for: address).uuidString == PeerIdentifier.text(for: address))
        }
    }
}
