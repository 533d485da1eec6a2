// BlueZ — design note
//
// What: bluetoothd as an engine. A client of bluetoothd's D-Bus API (BlueZ's doc/org.bluez.*.rst: Adapter1, Device1,
// GattService1, GattCharacteristic1, GattDescriptor1, GattManager1, LEAdvertisingManager1, AgentManager1; the
// freedesktop ObjectManager and Properties interfaces) and of the kernel's L2CAP sockets beside it, for machines whose
// Bluetooth belongs to bluetoothd (issue 16), as bleak, btleplug and SimpleBLE do in other languages.
//
// Shape, bottom up:
// - BlueZObjectTree mirrors bluetoothd's objects (path → interface → properties) from one GetManagedObjects, then
//   InterfacesAdded / InterfacesRemoved / PropertiesChanged signals, and tells its observers what changed; BlueZPaths
//   reads the paths (adapter hciN, device dev_XX_..., attribute handles in serviceXXXX/charXXXX/descXXXX);
//   BlueZErrors maps org.bluez.Error.* to ATT error codes where BlueZ says one; BlueZAdapterSession is where a
//   client starts (connection, tree, chosen adapter); BlueZAgent is an org.bluez.Agent1 object registered with
//   AgentManager1, turning bluetoothd's pairing prompts into requests for a handler and its answers into replies
//   (BlueZPairingAgent: the one `OCB_BLUEZ_AGENT` asks for).
// - BlueZCentral: the D-Bus session (one connection for the engine) and the central role's calls (scan, connect,
//   the GATT client by object paths, pairing — re-pairing a bonded device by forgetting it and finding it again —,
//   outgoing L2CAP channels), in the engine's vocabulary (addresses, ScanReport, BlueZRemote* attributes,
//   BlueZCallError, BlueZAdapterState), reported as its Event. BlueZL2CAPSocket/BlueZL2CAPChannel/BlueZL2CAPListener
//   are the kernel's LE credit-based channels; BlueZNotifyPipe the AcquireNotify socket of a notified value.
// - BlueZEngine: BluetoothEngine's StackEngine. It turns BlueZCentral's events into HostEvents (links numbered from
//   0x0040) and is the peripheral itself: its GATT application (BlueZEngine+GATTApplication: objects made from its
//   GATTDatabase, bluetoothd's ReadValue/WriteValue/AcquireNotify/StartNotify answered by the server in
//   BlueZEngine+GATTServer) and its advertisement (BlueZEngine+Advertising) are exported on BlueZCentral's
//   connection; listening L2CAP sockets are its own. BluetoothdStack (StackLauncher) opens it for the APIs and
//   `blue`; BluetoothdBonds lists and forgets bluetoothd's bonds. What bluetoothd has no call for is refused in one
//   place (`BlueZEngine.refusal`); what `blue` prints when bluetoothd cannot do something is BluetoothdLimitation.
//
// Users: StackLauncher's BluetoothdStack (OpenCoreBluetooth's managers, BluetoothLE's `BluetoothStack(bluez:)`, `blue
// --hci bluez`), through the seam only.
//
// Who owns the state, which executor runs it: BlueZCentral holds its state behind one lock, changed from the DBus
// connection's reader thread (signals) and from call completions; it sends its events, in order, on a serial queue
// of its own. BlueZEngine's state is confined to its own DispatchEventLoop: every event, every call bluetoothd makes
// on our exported objects (answered from the loop, later when the server answers) and every completion hops onto
// it. The tree sits behind a lock; the reader thread applies signals and calls its observers (which must not block);
// it also calls the agent's handler, which answers later (the reply goes out when the answer comes). Calls to
// bluetoothd go through DBusConnection, each with a time limit; bluetoothd's calls to us that wait for an app's
// answer are forgotten after 30 s (bluetoothd gives up at 25).
