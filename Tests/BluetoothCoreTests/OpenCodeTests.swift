import BluetoothCore
import TestSupport
import Testing

@Suite struct OpenCodeTests {
    @Test func specNames() {
        #expect(HCIStatus(0x3D).description == "Connection Terminated due to MIC Failure (0x3D)")
        #expect(HCIStatus.connectionTerminatedMICFailure == HCIStatus(rawValue: 0x3D))
        #expect(HCIStatus(0x3D).name == "Connection Terminated due to MIC Failure")
        #expect(HCIStatus(0x3D).isKnown)
        #expect(ATTErrorCode(0x01).description == "Invalid Handle (0x01)")
        #expect(ATTErrorCode.invalidPDU.description == "Invalid PDU (0x04)")
        #expect(SMPPairingFailedReason(0x04).description == "Confirm Value Failed (0x04)")
        #expect(SMPPairingFailedReason.dhKeyCheckFailed.rawValue == 0x0B)
        #expect(L2CAPConnectionResult(0x0002).description == "Connection refused - SPSM not supported (0x0002)")
        #expect(L2CAPConnectionResult.successful.description == "Connection successful (0x0000)")
        #expect(ADType(0x09).description == "Complete Local Name (0x09)")
        #expect(ADType.manufacturerSpecificData.name == "Manufacturer Specific Data")
        #expect(CompanyIdentifier(0x004C).description.contains("Apple, Inc."))
        #expect(CompanyIdentifier(0x004C).description == "Apple, Inc. (0x004C)")
        #expect(CompanyIdentifier.apple == CompanyIdentifier(0x004C))
    }

    @Test func unknownValuesPrintUnknown() {
        #expect(HCIStatus(0xFE).description == "Unknown HCI status (0xFE)")
        #expect(!HCIStatus(0xFE).isKnown)
        #expect(HCIStatus(0xFE).name == nil)
        #expect(ATTErrorCode(0x7F).description.hasPrefix("Unknown "))
        #expect(SMPPairingFailedReason(0xEE).description == "Unknown SMP reason (0xEE)")
        #expect(L2CAPConnectionResult(0xBEEF).description == "Unknown L2CAP result (0xBEEF)")
        #expect(ADType(0x99).description == "Unknown AD type (0x99)")
        #expect(CompanyIdentifier(0xF000).description == "Unknown company (0xF000)")
        #expect(ADType(0x05).hexValue == "0x05")
        #expect(CompanyIdentifier(0x4C).hexValue == "0x004C")
    }

    @Test func everyNamedValueRoundTripsItsRawValue() {
        for (raw, name) in HCIStatus.names {
            #expect(HCIStatus(raw).description == "\(name) (\(HCIStatus(raw).hexValue))")
        }
        for (raw, name) in ADType.names { #expect(ADType(raw).name == name) }
        #expect(ADType.names.count >= 40)
        #expect(CompanyIdentifier.names.count > 3000)
    }

    @Test func appearanceNames() {
        #expect(Appearance(0x0000).description == "Unknown (0x0000)")
        #expect(Appearance(0x0040).name == "Phone")
        #expect(Appearance(0x00C1).name == "Watch: Sports Watch")
        #expect(Appearance(0x00C1).category == 3)
        #expect(Appearance(0x00C1).subcategory == 1)
        #expect(Appearance.genericHeartRateSensor.name == "Heart Rate Sensor")
        #expect(Appearance(0x0341).description == "Heart Rate Sensor: Heart Rate Belt (0x0341)")
        #expect(Appearance(0x00FF).name == "Watch: sub-category 63")
        #expect(Appearance(0xFFC0).description == "Unknown appearance (0xFFC0)")
    }
}
