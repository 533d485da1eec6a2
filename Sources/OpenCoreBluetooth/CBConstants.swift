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

/// Bool: a system alert on connection while the app is suspended. Accepted and ignored on Linux.
public let CBConnectPeripheralOptionNotifyOnConnectionKey: String = "kCBConnectOptionNotifyOnConnection"
/// Bool: a system alert on disconnection while the app is suspended. Accepted and ignored on Linux.
public let CBConnectPeripheralOptionNotifyOnDisconnectionKey: String = "kCBConnectOptionNotifyOnDisconnection"
/// Bool: a system alert for each notification while the app is suspended. Accepted and ignored on Linux.
public let CBConnectPeripheralOptionNotifyOnNotificationKey: String = "kCBConnectOptionNotifyOnNotification"
/// NSNumber seconds to wait before starting the connection.
public let CBConnectPeripheralOptionStartDelayKey: String = "kCBConnectOptionStartDelay"
/// Bool: bring up BR/EDR profiles when the LE link connects. Accepted and ignored (LE only).
public let CBConnectPeripheralOptionEnableTransportBridgingKey: String = "kCBConnectOptionEnableTransportBridging"
/// Bool: the peripheral requires the Apple Notification Center Service. Accepted and ignored (no ANCS on Linux).
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

/// Bool: warn when Bluetooth is off at init. Accepted and ignored on Linux (there is no system alert).
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

/// Characteristic Extended Properties descriptor (0x2900); its value is an `NSNumber`.
public let CBUUIDCharacteristicExtendedPropertiesString: String = "2900"
/// Characteristic User Description descriptor (0x2901); its value is a `String`.
public let CBUUIDCharacteristicUserDescriptionString: String = "2901"
/// Client Characteristic Configuration descriptor (CCCD, 0x2902); its value is an `NSNumber`. Use
/// `setNotifyValue(_:for:)` rather than writing it.
public let CBUUIDClientCharacteristicConfigurationString: String = "2902"
/// Server Characteristic Configuration descriptor (0x2903); its value is an `NSNumber`.
public let CBUUIDServerCharacteristicConfigurationString: String = "2903"
/// Characteristic Presentation Format descriptor (0x2904); its value is `Data`.
public let CBUUIDCharacteristicFormatString: String = "2904"
/// Characteristic Aggregate Format descriptor (0x2905); its value is `Data`.
public let CBUUIDCharacteristicAggregateFormatString: String = "2905"
/// Valid Range descriptor (0x2906); its value is `Data`.
public let CBUUIDCharacteristicValidRangeString: String = "2906"
/// Observation Schedule descriptor (0x2910); its value is `Data`.
public let CBUUIDCharacteristicObservationScheduleString: String = "2910"
/// A characteristic carrying the L2CAP PSM (little-endian UInt16) of its service.
public let CBUUIDL2CAPPSMCharacteristicString: String = "ABDD3056-28FA-441D-A470-55A75A52553A"

// MARK: Error domains

/// The error domain of `CBError`.
public let CBErrorDomain: String = "CBErrorDomain"
/// The error domain of `CBATTError`.
public let CBATTErrorDomain: String = "CBATTErrorDomain"
