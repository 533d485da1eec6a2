// One `import BluetoothLE` is enough for its users: the types its API speaks in (BluetoothUUID and
// BluetoothAddress from BluetoothCore; the GATT properties, permissions and procedures; HCIStatus) come with it
// (issue 14 item 7).
@_exported public import BluetoothCore
@_exported public import GATT
@_exported public import HCI
