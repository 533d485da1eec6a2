// BlueZ — design note
//
// What: bluetoothd as an engine. A client of bluetoothd's D-Bus API (BlueZ's doc/org.bluez.*.rst: Adapter1, Device1,
// GattService1, GattCharacteristic1, GattDescriptor1, GattManager1, LEAdvertisingManager1, AgentManager1; the
// freedesktop ObjectManager and Properties interfaces) and of the kernel's L2CAP sockets beside it, for machines whose
// Bluetooth belongs to bluetoothd (issue 16), as bleak, btleplug and SimpleBLE do in other languages.
//
// Shape, bottom up:
// - BlueZObjectTree mirrors bluetoothd's objects (path → interface → properties) from one GetManagedObjects, then
//   InterfacesAdded / InterfacesRemoved / PropertiesChanged signals, and tells its observer what changed; BlueZPaths
//   reads the paths (adapter hciN, device dev_XX_..., attribute handles in serviceXXXX/charXXXX/descXXXX);
//   BlueZErrors maps org.bluez.Error.* to ATT error codes where BlueZ says one; BlueZAdapterSession is where a
//   client starts (connection, tree, chosen adapter); BlueZAgent is an org.bluez.Agent1 object registered with
//   AgentManager1, turning bluetoothd's pairing prompts into requests for a handler and its answers into replies
//   (BlueZPairingAgent: the one `OCB_BLUEZ_AGENT` asks for).
// - BlueZCentral (scan, connect, the GATT client by object paths, pairing, outgoing L2CAP channels) and
//   BlueZPeripheral (our GATT application and advertisement exported on the bus, AcquireNotify sockets —
//   BlueZNotifyPipe —, listening L2CAP sockets): the D-Bus work of each role, once, in the engine's vocabulary
//   (addresses, ScanReport, BlueZRemote*/BlueZLocal* attributes, BlueZCallError, BlueZAdapterState).
//   BlueZL2CAPSocket/BlueZL2CAPChannel/BlueZL2CAPListener are the kernel's LE credit-based channels.
// - BlueZEngine: BluetoothEngine's StackEngine on those two, turning their events into HostEvents (links numbered
//   from 0x0040, the local server's handles numbered by a GATTDatabase of its own). BluetoothLE's
//   `BluetoothStack(bluez:)` runs on it. What bluetoothd has no call for is refused in one place
//   (`BlueZEngine.refusal`); what `blue` prints when bluetoothd cannot do something is BluetoothdLimitation.
//
// Users: BlueZEngine (BluetoothLE); OpenCoreBluetooth's BlueZ backends, which say BlueZCentral's and BlueZPeripheral's
// events and errors in CoreBluetooth's words; `blue --hci bluez` through those backends (issue 27's next steps put
// the CoreBluetooth backends and `blue` on BlueZEngine, and the adapters go).
//
// Who owns the state, which executor runs it: BlueZCentral and BlueZPeripheral each hold their state behind one
// lock, changed from the DBus connection's reader thread (signals, bluetoothd's calls to our objects) and from call
// completions; each sends its events, in order, on a serial queue of its own. BlueZEngine's state is confined to its
// own DispatchEventLoop: every event and completion hops onto it. The tree sits behind a lock; the reader thread
// applies signals and calls the observer (which must not block); it also calls the agent's handler, which answers
// later (the reply goes out when the answer comes). Calls to bluetoothd go through DBusConnection, each with a time
// limit; bluetoothd's calls to us that wait for an app's answer are forgotten after 30 s (bluetoothd gives up at 25).
