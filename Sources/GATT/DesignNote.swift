// GATT: the Generic Attribute Profile over ATT (Core 5.4 Vol 3 Part G), sans-I/O.
//
// What this layer is:
// - `GATTDatabase` (Vol 3 Part G §3): a value built by the application — primary, secondary and included
//   services, characteristics (declaration, value, Extended Properties, CCCD added for notify/indicate, user
//   description, presentation format, any descriptor), the GAP (0x1800) and GATT (0x1801, Service Changed, Client
//   Supported Features) services — with handles assigned sequentially from 0x0001. Values are stored bytes or
//   application handlers (read with offset, write with offset, able to answer any ATT error).
// - `GATTPermissions` / `GATTSecurityRequirement` / `GATTLinkSecurity` (Vol 3 Part F §3.2.5, Part C §10.3): the
//   permission checks and their exact errors.
// - `GATTServer` (Vol 3 Part G §4, Vol 3 Part F §3.4): answers every server procedure for every connection, keeps
//   per-connection state (CCCD values, Client Supported Features, prepare queue, ATT_MTU, link security) and the
//   shared stored values; builds notifications, indications, Multiple Handle Value Notifications and Service
//   Changed indications for the subscribed connections.
// - `GATTClient*` (Vol 3 Part G §4, client side): the client procedures, in their own files.
//
// Bearers (Vol 3 Part F §3.2.11, EATT): a connection may have several ATT bearers, the unenhanced one and
// Enhanced ATT bearers named by a `GATTBearerID` (their L2CAP channel's local CID). The server keeps per bearer
// what ATT keeps per bearer (ATT_MTU, the request being answered later) and per connection what is the client's
// (CCCDs, Client Supported Features, the prepare queue); requests say their bearer, responses are sized to it,
// and notifications/indications are built for the connection's first enhanced bearer when it has one
// (`GATTServerOutbound.bearer`), the fixed one otherwise. `GATTClient` is one client per bearer: the Host runs
// one per bearer and spreads procedures over them, so requests run in parallel, one outstanding per bearer.
// `addGATTService(serverSupportedFeatures: .enhancedATT)` offers Server Supported Features (0x2B3A, §7.4) and
// Client Supported Features (0x2B29, §7.2: bits 0–2 kept as the union a client wrote).
//
// Who owns the state: the Host, one `GATTServer` per local device and one `ATTBearer` (ATT module) per bearer.
// Which executor runs it: the stack's EventLoop; every call is synchronous and returns values/actions, nothing
// here has a thread, a clock or I/O. Application handlers run synchronously inside `handleRequest`, so they must
// not block. Values whose answer comes later from user code (CoreBluetooth's `respond(to:withResult:)`, the
// async API's handlers) go through a `GATTDeferral` (GATTServer+Deferred.swift): the server checks the request
// (handles, permissions, offsets; a whole Execute Write batch at once), returns a `GATTPendingRequest` instead of
// a response, and `respond(toDeferred:on:result:)` produces the response when the application answers. The ATT
// bearer keeps the transaction open meanwhile (its 30 s timeout still applies to the peer's view).
// A CCCD may be deferred too (Android's `BluetoothGattServer` hands descriptor writes to the app): the
// subscription changes only when the application answers success. `addsClientConfiguration = false` builds a
// notifying characteristic without one (an Android app that forgot its descriptor: nobody can subscribe).
//
// Wiring (Host): bearer `.request(pdu)` -> `server.handleRequest(pdu, from:)` -> `bearer.respond(reply.response)`;
// `.command` -> `server.handleCommand`; `.mtuChanged(m)` -> `server.setMTU(m, for:)`; `server.updateValue` /
// `notify` / `serviceChanged` -> `GATTServerOutbound` -> `bearer.send(pdu)` or `bearer.sendIndication`.
// Signed writes are verified by a hook (`GATTSignatureVerifier`) the Host builds from BluetoothCrypto.DataSigning,
// since GATT does not depend on BluetoothCrypto.
