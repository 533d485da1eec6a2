// AirConsole — design note
//
// What: the air console of `blue air --console` (issue 29): one web page (`ConsolePage`, HTML, CSS and script in one
// string, nothing fetched) and the control API behind it (`ConsoleAPI`, documented in Docs/air-console.openapi.json,
// whose paths `AirConsoleAPITests` compares with `ConsoleAPI.routes`), served over HTTP/1.1 and a WebSocket by
// SwiftNIO (`AirConsole`: NIOHTTP1 with NIOWebSocket's upgrader; no framework, the console needs one handler).
//
// Who owns the state: the hub's (SharedAir). The console keeps none of the air: each answer is a fresh
// `AirHub.view` (taken on the air's loop: `VirtualAir.snapshot` plus the hub's names and counters) or a fault given
// to `AirHub.apply`, the same call `blue fault` reaches through the control socket, so a drag is reported and
// recorded as `fault: move: ...`. Request bodies are read strictly (`ConsoleBody`: known fields only, typed, bounded).
//
// Which executor: one NIO event loop thread of the console's own accepts and runs the HTTP and WebSocket handlers;
// an answer that needs the air hops to the air's loop and back through a promise. The event stream
// (`ConsoleEventStream`) has a serial queue of its own: the hub's frame tap (transport threads and the air's loop)
// only queues raw frames, bounded, and the queue decodes them (a CaptureDecoder per device, as `blue monitor`) and
// writes them to the pages; a timer there sends the air every 500 ms while a page listens (the tap stays from the
// start, keeping the last frames for the next page). Captures (`ConsoleCaptures`) ride the same tap: a device's
// frames go to its running btsnoop files at once, and its last 2,000 into a ring (plus the frames that name its
// addresses) from which `GET /api/chart` draws `SequenceChart`; a pcap capture sets the hub's air-packet tap, on the
// air's loop, only while it runs. Their files live in a private folder (mkdtemp, 0700) removed when the console stops.
// Every page (`ConsoleSubscriber`) has a bound of unwritten messages beyond which packets to it are dropped and
// counted: the air never waits for a browser.
//
// Trust: loopback unless an address is given (then `blue air` says who can reach it); the page is public, every
// `/api/` request and the WebSocket need the token (`ConsoleToken`, 256 random bits, compared in constant time).
