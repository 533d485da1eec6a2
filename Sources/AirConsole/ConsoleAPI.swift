import BluetoothCore
import FoundationEssentials
import SharedAir
import VirtualController

/// One HTTP request as the console's API sees it: no transport in it, so the routes are tested without a socket.
struct ConsoleRequest: Sendable {
    var method: String
    /// The path without its query ("/api/devices/2/move").
    var path: String
    var query: [String: String]
    /// The Authorization header's value, if any.
    var authorization: String?
    var body: [UInt8]

    /// `uri` split into its path and query (percent-decoded; the last of a repeated name wins).
    init(method: String, uri: String, authorization: String?, body: [UInt8]) {
        self.method = method
        self.authorization = authorization
        self.body = body
        let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        path = parts.first.map(String.init) ?? "/"
        var query: [String: String] = [:]
        if parts.count > 1 {
            for pair in parts[1].split(separator: "&") {
                let nameValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = PercentEncoding.decode(nameValue[0]) ?? String(nameValue[0])
                let value = nameValue.count > 1 ? (PercentEncoding.decode(nameValue[1]) ?? String(nameValue[1])) : ""
                query[name] = value
            }
        }
        self.query = query
    }

    /// The token given as `Authorization: Bearer TOKEN` or `?token=TOKEN`.
    var token: String? {
        if let authorization, authorization.hasPrefix("Bearer ") { return String(authorization.dropFirst(7)) }
        return query["token"]
    }
}

/// The answer to a ``ConsoleRequest``.
struct ConsoleResponse: Sendable, Equatable {
    var status: Int
    var contentType: String
    var body: [UInt8]
    /// The methods a 405 names in its Allow header.
    var allowed = ""
    /// A download's file name (`Content-Disposition: attachment`).
    var attachment: String?

    static func json(_ status: Int, _ text: String) -> ConsoleResponse {
        ConsoleResponse(status: status, contentType: "application/json", body: Array(text.utf8))
    }

    /// `{"error":{"code":CODE,"reason":REASON}}` (the `Error` schema).
    static func error(_ status: Int, _ code: String, _ reason: String) -> ConsoleResponse {
        json(status, "{\"error\":{\"code\":\(Dissection.jsonString(code)),\"reason\":\(Dissection.jsonString(reason))}}")
    }

    static func effect(_ text: String) -> ConsoleResponse {
        json(200, "{\"effect\":\(Dissection.jsonString(text))}")
    }
}

/// The console's control API (issue 29 item 2; Docs/air-console.openapi.json is its document, checked against
/// ``routes`` by ConsoleAPITests): the air as JSON, and each fault of `blue fault` as a request, applied with
/// ``AirHub/apply(_:completion:)`` so it is reported and recorded the same way. Bad input gets a 4xx and one line;
/// every `/api/` request needs the token.
struct ConsoleAPI: Sendable {
    let hub: AirHub
    let token: ConsoleToken
    let captures: ConsoleCaptures

    /// The largest request body read (a move is under 100 octets).
    static let bodyLimit = 16_384

    /// Every route (method and path template), as the OpenAPI document lists them.
    static let routes: [(method: String, path: String)] = [
        ("GET", "/api/air"), ("GET", "/api/devices"), ("GET", "/api/links"), ("GET", "/api/events"),
        ("POST", "/api/devices/{number}/move"), ("POST", "/api/devices/{number}/radio"),
        ("POST", "/api/devices/{number}/range"), ("POST", "/api/links/drop"), ("PUT", "/api/loss"),
        ("GET", "/api/captures"), ("POST", "/api/captures"), ("POST", "/api/captures/{id}/stop"),
        ("GET", "/api/captures/{id}/file"), ("DELETE", "/api/captures/{id}"), ("GET", "/api/chart"),
        ("GET", "/api/recording"),
    ]

    /// Answers `request` (on any thread; `completion` may run on the air's loop).
    func respond(to request: ConsoleRequest, completion: @escaping @Sendable (ConsoleResponse) -> Void) {
        let path = request.path.hasSuffix("/") && request.path.count > 1 ? String(request.path.dropLast()) : request.path
        if path == "/" || path == "/index.html" {
            guard request.method == "GET" || request.method == "HEAD" else { return completion(Self.notAllowed(request.method, path, "GET")) }
            return completion(ConsoleResponse(status: 200, contentType: "text/html; charset=utf-8", body: Array(ConsolePage.html.utf8)))
        }
        guard path.hasPrefix("/api/") else {
            return completion(.error(404, "notFound", "no such page: \(path) (the console is at /, its API under /api/)"))
        }
        guard token.matches(request.token) else {
            return completion(.error(401, "unauthorized", "this API needs the token blue air printed (Authorization: Bearer TOKEN, or ?token=TOKEN)"))
        }
        let segments = path.split(separator: "/").map(String.init)
        let resource = segments.count > 1 ? segments[1] : ""
        switch resource {
        case "air" where segments.count == 2, "devices" where segments.count == 2, "links" where segments.count == 2:
            guard request.method == "GET" else { return completion(Self.notAllowed(request.method, path, "GET")) }
            hub.view { view in
                let air = ConsoleAirJSON(view)
                switch segments[1] {
                case "devices": completion(.json(200, Self.encode(air.devices)))
                case "links": completion(.json(200, Self.encode(air.links)))
                default: completion(.json(200, air.encoded()))
                }
            }
        case "events" where segments.count == 2:
            guard request.method == "GET" else { return completion(Self.notAllowed(request.method, path, "GET")) }
            completion(.error(426, "upgradeRequired", "/api/events is a WebSocket: ask for an upgrade (Connection: Upgrade, Upgrade: websocket)"))
        case "devices" where segments.count == 4:
            guard request.method == "POST" else { return completion(Self.notAllowed(request.method, path, "POST")) }
            guard let number = Int(segments[2]), number >= 1, number <= 65_535 else {
                return completion(.error(404, "notFound", "no device \(segments[2]) on the air (devices are numbered from 1)"))
            }
            let fault: AirHubFault
            do throws(ConsoleBodyError) {
                switch segments[3] {
                case "move":
                    let body = try ConsoleBody(request.body, allowed: ["x", "y", "z"])
                    let x = try body.coordinate("x"), y = try body.coordinate("y")
                    let z = try body.has("z") ? body.coordinate("z") : nil
                    let current = hub.devices.first { $0.number == number }
                    let height = z ?? hub.controller(ofDevice: number)?.position.z ?? current?.position.z ?? 0
                    fault = .move(device: number, AirPosition(x: x, y: y, z: height))
                case "radio":
                    fault = .power(device: number, on: try ConsoleBody(request.body, allowed: ["on"]).flag("on"))
                case "range":
                    fault = .range(device: number, out: try ConsoleBody(request.body, allowed: ["out"]).flag("out"))
                default:
                    return completion(.error(404, "notFound", "no such action: \(segments[3]) (move, radio or range)"))
                }
            } catch {
                return completion(.error(400, "badRequest", error.reason))
            }
            apply(fault, completion: completion)
        case "links" where segments.count == 3 && segments[2] == "drop":
            guard request.method == "POST" else { return completion(Self.notAllowed(request.method, path, "POST")) }
            do throws(ConsoleBodyError) {
                let body = try ConsoleBody(request.body, allowed: ["device"], emptyAllowed: true)
                let device = try body.has("device") ? body.deviceNumber("device") : nil
                apply(.drop(device: device), completion: completion)
            } catch {
                completion(.error(400, "badRequest", error.reason))
            }
        case "loss" where segments.count == 2:
            guard request.method == "PUT" else { return completion(Self.notAllowed(request.method, path, "PUT")) }
            do throws(ConsoleBodyError) {
                let percent = try ConsoleBody(request.body, allowed: ["percent"]).percent("percent")
                apply(.loss(percent: percent), completion: completion)
            } catch {
                completion(.error(400, "badRequest", error.reason))
            }
        case "captures":
            completion(respondToCaptures(request, path: path, segments: segments))
        case "recording" where segments.count == 2:
            guard request.method == "GET" else { return completion(Self.notAllowed(request.method, path, "GET")) }
            guard let recording = hub.recordingSoFar() else {
                return completion(.error(404, "notFound", "blue air records the air only with --record FILE (from its start, so it can be replayed)"))
            }
            var response = ConsoleResponse(status: 200, contentType: "text/plain; charset=utf-8", body: recording.bytes)
            response.attachment = recording.filename
            completion(response)
        case "chart" where segments.count == 2:
            guard request.method == "GET" else { return completion(Self.notAllowed(request.method, path, "GET")) }
            let names = Dictionary(hub.devices.compactMap { device in device.name.map { (device.number, $0) } }) { first, _ in first }
            completion(ConsoleResponse(status: 200, contentType: "text/html; charset=utf-8",
                                       body: Array(captures.chartHTML(names: names).utf8)))
        default:
            completion(.error(404, "notFound", "no such API: \(path)"))
        }
    }

    /// `/api/captures`: list and start; `/api/captures/{id}/stop`, `/file`; `DELETE /api/captures/{id}`.
    private func respondToCaptures(_ request: ConsoleRequest, path: String, segments: [String]) -> ConsoleResponse {
        if segments.count == 2 {
            switch request.method {
            case "GET":
                return .json(200, Self.encode(captures.list()))
            case "POST":
                let kind: ConsoleCaptures.Kind, device: Int?
                do throws(ConsoleBodyError) {
                    let body = try ConsoleBody(request.body, allowed: ["kind", "device"])
                    guard let parsed = ConsoleCaptures.Kind(rawValue: try body.string("kind")) else {
                        return .error(400, "badRequest", "\"kind\" must be \"btsnoop\" (a device's HCI traffic) or \"pcap\" (the air's link layer)")
                    }
                    kind = parsed
                    device = try body.has("device") ? body.deviceNumber("device") : nil
                } catch {
                    return .error(400, "badRequest", error.reason)
                }
                switch (kind, device) {
                case (.btsnoop, nil): return .error(400, "badRequest", "a btsnoop capture is of one device: give \"device\"")
                case (.pcap, _?): return .error(400, "badRequest", "a pcap capture is of the whole air: no \"device\"")
                default: break
                }
                var name: String?
                if let device {
                    guard let found = hub.devices.first(where: { $0.number == device }) else {
                        return .error(404, "notFound", "no dev\(device) on the air")
                    }
                    name = found.name
                }
                do throws(ConsoleCaptures.CaptureError) {
                    return .json(201, Self.encode(try captures.start(kind: kind, device: device, deviceName: name)))
                } catch {
                    return Self.captureError(error)
                }
            default:
                return Self.notAllowed(request.method, path, "GET, POST")
            }
        }
        guard let id = Int(segments[2]), id >= 1 else { return .error(404, "notFound", "no capture \(segments[2])") }
        do throws(ConsoleCaptures.CaptureError) {
            switch (segments.count, segments.count > 3 ? segments[3] : "") {
            case (3, _):
                guard request.method == "DELETE" else { return Self.notAllowed(request.method, path, "DELETE") }
                try captures.delete(id: id)
                return ConsoleResponse(status: 204, contentType: "application/json", body: [])
            case (4, "stop"):
                guard request.method == "POST" else { return Self.notAllowed(request.method, path, "POST") }
                return .json(200, Self.encode(try captures.stop(id: id)))
            case (4, "file"):
                guard request.method == "GET" else { return Self.notAllowed(request.method, path, "GET") }
                let file = try captures.contents(id: id)
                var response = ConsoleResponse(status: 200, contentType: file.kind == .pcap ? "application/vnd.tcpdump.pcap" : "application/octet-stream",
                                               body: file.bytes)
                response.attachment = file.filename
                return response
            default:
                return .error(404, "notFound", "no such API: \(path)")
            }
        } catch {
            return Self.captureError(error)
        }
    }

    private static func captureError(_ error: ConsoleCaptures.CaptureError) -> ConsoleResponse {
        switch error {
        case .notFound(let reason): .error(404, "notFound", reason)
        case .refused(let reason): .error(409, "refused", reason)
        }
    }

    /// Applies `fault` as `blue fault` does; "no devN on the air" is a 404, any other refusal a 409.
    private func apply(_ fault: AirHubFault, completion: @escaping @Sendable (ConsoleResponse) -> Void) {
        hub.apply(fault) { result in
            switch result {
            case .success(let effect):
                completion(.effect(effect))
            case .failure(let error):
                let missing = error.reason.hasPrefix("no dev") && error.reason.contains(" on the air")
                completion(.error(missing ? 404 : 409, missing ? "notFound" : "refused", error.reason))
            }
        }
    }

    private static func notAllowed(_ method: String, _ path: String, _ allowed: String) -> ConsoleResponse {
        var response = ConsoleResponse.error(405, "methodNotAllowed", "\(method) \(path): expected \(allowed)")
        response.allowed = allowed
        return response
    }

    private static func encode<Value: Encodable>(_ value: Value) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }
}
