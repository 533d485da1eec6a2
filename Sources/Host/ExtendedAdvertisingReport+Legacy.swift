import BluetoothCore
import HCI

extension LEExtendedAdvertisingReport {
    /// This report as a legacy one (Core 5.4 Vol 4 Part E §7.7.65.13, Event_Type bits), for the scan merger.
    ///
    /// Some controllers (Bumble's, for one) advertise the extended feature and then send only LE Extended
    /// Advertising Reports, even to a host that scans with the legacy commands and did not unmask that subevent.
    /// Bits: 0 connectable, 1 scannable, 2 directed, 3 scan response, 4 legacy PDU, 5–6 data status. A report
    /// whose data is incomplete with more to come (status 0b01) is not mapped: nil.
    var legacyReport: LEAdvertisingReport? {
        let dataStatus = (eventType >> 5) & 0b11
        guard dataStatus != 0b01 else { return nil }
        let connectable = eventType & 0x01 != 0
        let scannable = eventType & 0x02 != 0
        let directed = eventType & 0x04 != 0
        let type: LEAdvertisingReportType
        if eventType & 0x08 != 0 {
            type = .scanResponse
        } else if connectable && directed {
            type = .advDirectInd
        } else if connectable {
            type = .advInd
        } else if scannable {
            type = .advScanInd
        } else {
            type = .advNonconnInd
        }
        return LEAdvertisingReport(eventType: type, addressType: addressType, address: address, data: data, rssi: rssi)
    }
}
