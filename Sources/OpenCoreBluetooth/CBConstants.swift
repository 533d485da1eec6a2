// The dictionary keys of CoreBluetooth, with Apple's runtime string values (corebluetooth-api.md §1.2: the values
// Darling asserts or that real devices print; the rest follow Apple's naming pattern).

// MARK: Central manager initialization options

/// Bool: warn when Bluetooth is off at init. Accepted and ignored on Linux (there is no system alert).
public let CBCentralManagerOptionShowPowerAlertKey: String = "kCBInitOptionShowPowerAlert"
/// String: state restoration identifier. The manager's connections and scan are kept under it and handed to the
/// next manager created with it (`centralManager(_:willRestoreState:)`; `StateRestorationStore`).
public let CBCentralManagerOptionRestoreIdentifierKey: String = "kCBRestoreIdentifierKey"
/// Bool: AccessorySetupKit media access. Accepted and ignored.
public let CBCentralManagerOptionDeviceAccessForMedia: String = "kCBInitOptionDeviceAccessForMedia"

// MARK: Scan options

/// Bool (default false): report every advertising packet instead of one discovery per device and scan.
public let CBCentralManagerScanOptionAllowDuplicatesKey: String = "kCBScanOptionAllowDuplicates"
/// [CBUUID]: also report peripherals soliciting these services.
public let CBCentralManagerScanOptionSolicitedServiceUUIDsKey: String = "kCBScanOptionSolicitedServiceUUIDs"

// MARK: Connect options

public let CBConnectPeripheralOptionNotifyOnConnectionKey: String = "kCBConnectOptionNotifyOnConnection"
public let CBConnectPeripheralOptionNotifyOnDisconnectionKey: String = "kCBConnectOptionNotifyOnDisconnection"
public let CBConnectPeripheralOptionNotifyOnNotificationKey: String = "kCBConnectOptionNotifyOnNotification"
/// NSNumber seconds to wait before starting the connection.
public let CBConnectPeripheralOptionStartDelayKey: String = "kCBConnectOptionStartDelay"
public let CBConnectPeripheralOptionEnableTransportBridgingKey: String = "kCBConnectOptionEnableTransportBridging"
public let CBConnectPeripheralOptionRequiresANCS: String = "kCBConnectOptionRequiresANCS"
/// Bool: reconnect automatically when the link drops (reported through the iOS 17 disconnect callback).
public let CBConnectPeripheralOptionEnableAutoReconnect: String = "kCBConnectOptionEnableAutoReconnect"

// MARK: Central restoration keys

/// [CBPeripheral]: the peripherals connected or connecting when the last manager with the identifier ended, now
/// `.connecting` (connected again once powered on).
public let CBCentralManagerRestoredStatePeripheralsKey: String = "kCBRestoredStatePeripherals"
/// [CBUUID]: the services the last manager scanned for (absent when it scanned for every device, or did not scan).
public let CBCentralManagerRestoredStateScanServicesKey: String = "kCBRestoredStateScanServices"
/// [String: Any]: the options of that scan (allow duplicates, solicited services); present whenever it scanned.
public let CBCentralManagerRestoredStateScanOptionsKey: String = "kCBRestoredStateScanOptions"

// MARK: Peripheral manager options and restoration keys

public let CBPeripheralManagerOptionShowPowerAlertKey: String = "kCBInitOptionShowPowerAlert"
/// String: state restoration identifier. The published services and the advertising are kept under it and handed
/// to the next manager created with it (`peripheralManager(_:willRestoreState:)`; `StateRestorationStore`).
public let CBPeripheralManagerOptionRestoreIdentifierKey: String = "kCBRestoreIdentifierKey"
/// [CBMutableService]: the services published when the last manager with the identifier ended (published again
/// once powered on).
public let CBPeripheralManagerRestoredStateServicesKey: String = "kCBRestoredStateServices"
/// [String: Any]: the advertisement data it advertised (local name, service UUIDs), advertised again once powered on.
public let CBPeripheralManagerRestoredStateAdvertisementDataKey: String = "kCBRestoredStateAdvertisementData"

// MARK: Advertisement data keys

/// String: the local name. Accepted by `startAdvertising`.
public let CBAdvertisementDataLocalNameKey: String = "kCBAdvDataLocalName"
/// [CBUUID]: service UUIDs. Accepted by `startAdvertising`.
public let CBAdvertisementDataServiceUUIDsKey: String = "kCBAdvDataServiceUUIDs"
/// NSNumber: transmit power level.
public let CBAdvertisementDataTxPowerLevelKey: String = "kCBAdvDataTxPowerLevel"
/// [CBUUID: Data]: service data.
public let CBAdvertisementDataServiceDataKey: String = "kCBAdvDataServiceData"
/// Data: manufacturer data, company identifier first (little-endian, as on the air).
public let CBAdvertisementDataManufacturerDataKey: String = "kCBAdvDataManufacturerData"
/// [CBUUID]: UUIDs from the overflow area.
public let CBAdvertisementDataOverflowServiceUUIDsKey: String = "kCBAdvDataHashedServiceUUIDs"
/// NSNumber Bool: whether the advertising event type was connectable (no `Key` suffix, as in Apple's SDK).
public let CBAdvertisementDataIsConnectable: String = "kCBAdvDataIsConnectable"
/// [CBUUID]: solicited service UUIDs.
public let CBAdvertisementDataSolicitedServiceUUIDsKey: String = "kCBAdvDataSolicitedServiceUUIDs"

// MARK: Descriptor UUID strings

public let CBUUIDCharacteristicExtendedPropertiesString: String = "2900"
public let CBUUIDCharacteristicUserDescriptionString: String = "2901"
public let CBUUIDClientCharacteristicConfigurationString: String = "2902"
public let CBUUIDServerCharacteristicConfigurationString: String = "2903"
public let CBUUIDCharacteristicFormatString: String = "2904"
public let CBUUIDCharacteristicAggregateFormatString: String = "2905"
public let CBUUIDCharacteristicValidRangeString: String = "2906"
public let CBUUIDCharacteristicObservationScheduleString: String = "2910"
/// A characteristic carrying the L2CAP PSM (little-endian UInt16) of its service.
public let CBUUIDL2CAPPSMCharacteristicString: String = "ABDD3056-28FA-441D-A470-55A75A52553A"

// MARK: Error domains

public let CBErrorDomain: String = "CBErrorDomain"
public let CBATTErrorDomain: String = "CBATTErrorDomain"
