// ServiceEngine: the seam's third engine, a program's side of the per-user Bluetooth service.
//
// What it is: `ServiceEngine` implements BluetoothEngine's `StackEngine` by sending every call to the Bluetooth
// service (`blue service`, the BluetoothService module) and delivering the events of the stack the service runs for
// the program. The wire protocol lives here too, so that both sides share it: `ServiceRequest` (hello, calls,
// goodbye), `ServiceMessage` (welcome, results, events, deferred GATT requests, forwarded writes, loss),
// `ServiceOperation` (one case per seam operation), `ServiceGATTDatabase` (a database as the steps that built it,
// dynamic values as flags), `ServiceRelaunch` (how the service starts a program again). Messages are JSON, one per
// line, over a UNIX stream socket (`ServiceConnection`): the seam's vocabulary is Codable (synthesized; the types
// with invariants, BluetoothAddress, BluetoothUUID, AdvertisingData, AdvertisingContent, code through their
// checked initialisers), so the two sides cannot drift; cost per packet is not this module's aim (issue 31).
//
// What crosses the socket and what stays: closures of the seam stay in the program. A deferral travels as its
// handles; the service sends each deferred request back and the program's handler answers it. A dynamic value
// travels as "readable/writable": the service defers its Read, Read Blob, Write and Execute Write requests to the
// program, which answers with the value's own handlers, forwards Write Commands, and answers Read By Type / Read
// Multiple of it with Read Not Permitted (a server cannot wait for a program). An L2CAP server that decides per
// request is refused (accept-all and refuse-all travel).
//
// Who owns the state: `ServiceEngine` keeps, under one lock, the calls waiting for their answer (id → completion),
// the ATT_MTU and readiness of each link (read synchronously on the seam), the deferral and the dynamic values'
// handlers, and what arrived before the first event handler (a stack taken back replays its queue right after the
// welcome: held, then handed over in order), and the Write Commands to dynamic values that came before the program
// gave its database (handed to its handlers when it gives the database the service kept, dropped otherwise).
// `ServiceConnection` owns the socket: a reader thread of its own, a
// bounded outbox written by a serial queue (a side that stops reading is cut off past the bound), the descriptor
// closed once, on the writer's queue, and never touched after.
//
// Executors: the reader thread decodes and hops every message onto the engine's `DispatchEventLoop`, where results,
// events and requests run in the order the service sent them; calls come from any thread and complete on the loop,
// each once (a failure for every waiting call when the connection ends). At a normal exit an `atexit` handler says
// goodbye for each engine with a restore identifier, so that only a killed program's stack is kept.
