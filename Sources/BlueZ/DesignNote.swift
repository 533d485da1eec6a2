// BlueZ — design note
//
// What: a client of bluetoothd's D-Bus API (BlueZ's doc/org.bluez.*.rst: Adapter1, Device1, GattService1,
// GattCharacteristic1, GattDescriptor1; the freedesktop ObjectManager and Properties interfaces), for the
// OpenCoreBluetooth backend that works on a machine whose Bluetooth belongs to bluetoothd (issue 16), as bleak,
// btleplug and SimpleBLE do in other languages.
//
// Shape: BlueZObjectTree mirrors bluetoothd's objects (path → interface → properties) from one GetManagedObjects,
// then InterfacesAdded / InterfacesRemoved / PropertiesChanged signals, and tells its observer what changed;
// BlueZPaths reads the paths (adapter hciN, device dev_XX_..., attribute handles in serviceXXXX/charXXXX/descXXXX);
// BlueZErrors maps org.bluez.Error.* to ATT error codes where BlueZ says one; BlueZAdapterSession is where a client
// starts (connection, tree, chosen adapter); BlueZAgent is an org.bluez.Agent1 object registered with AgentManager1,
// turning bluetoothd's pairing prompts into requests for a handler and its answers into replies. Users: the
// OpenCoreBluetooth backends and `blue --hci bluez` (scan, explore, read, write, subscribe through the central
// backend; pair through a session and an agent).
//
// Who owns the state, which executor runs it: the tree sits behind a lock; the DBus connection's reader thread
// applies signals and calls the observer (which must not block); it also calls the agent's handler, which answers
// later (the reply goes out when the answer comes). Calls to bluetoothd go through DBusConnection,
// each with a time limit.
