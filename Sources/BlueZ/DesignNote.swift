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
// - BlueZDevice reads a Device1's address and advertising (a ScanReport) and a characteristic's Flags;
//   BlueZL2CAPSocket/BlueZL2CAPChannel/BlueZL2CAPListener are the kernel's LE credit-based channels; BlueZNotifyPipe
//   the AcquireNotify socket of a notified value.
// - BlueZEngine: BluetoothEngine's StackEngine, the one owner of everything above the D-Bus connection, in files by
//   concern: the session and the central role (+Central: discovery, Device1.Connect, links numbered from 0x0040, the
//   ATT_MTU bluetoothd exchanged), the GATT client by object paths (+GATTClient), pairing with an agent of ours and
//   re-pairing a bonded device by forgetting it and finding it again (+Pairing), the GATT application made from its
//   GATTDatabase (+GATTApplication) answered by its server (+GATTServer), the advertisement (+Advertising), kernel
//   L2CAP channels (+L2CAP). BluetoothdStack (StackLauncher) opens it for the APIs and `blue`; BluetoothdBonds lists
//   and forgets bluetoothd's bonds. What bluetoothd has no call for is refused in one place
//   (`BlueZEngine.refusal`); what `blue` prints when bluetoothd cannot do something is BluetoothdLimitation.
//
// Users: StackLauncher's BluetoothdStack (OpenCoreBluetooth's managers, BluetoothLE's `BluetoothStack(bluez:)`, `blue
// --hci bluez`), through the seam only.
//
// Who owns the state, which executor runs it: BlueZEngine's state is confined to its own DispatchEventLoop: every
// signal bluetoothd sends (the tree's observer hops onto it), every call bluetoothd makes on our exported objects
// (answered from the loop, later when the server answers) and every D-Bus completion. What work leaves the loop (the
// session's start, an agent's registration, forgetting a device, a blocking L2CAP connect) comes back to it with its
// result; the session itself (connection, tree) is readable from any thread. The tree sits behind a lock; the reader
// thread applies signals and calls its observers (which must not block); it also calls the agent's handler, which
// answers later (the reply goes out when the answer comes). Calls to bluetoothd go through DBusConnection, each with a
// time limit; bluetoothd's calls to us that wait for an app's answer are forgotten after 30 s (bluetoothd gives up at
// 25).
