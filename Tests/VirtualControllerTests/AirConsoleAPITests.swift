import BluetoothCore
import BluetoothRuntime
import Foundation
import HCI
import HCITransport
import Testing
@testable import AirConsole
@testable import SharedAir
@testable import VirtualController

/// The air console's control API (issue 29 item 2) on a hub with two connected devices on virtual time: the air as
/// JSON, each fault as `blue fault` applies it, and every kind of bad request refused with its 4xx and one line.
@Suite struct AirConsoleAPITests {
    private static let token = ConsoleToken("test-token")

    /// A hub on a manual loop with dev1 advertising and dev2 connected to it as central.
    private func connectedHub() -> (ManualEventLoop, AirHub, ConsoleAPI, LockedValue<[AirHubEvent]>, [PolishManualTransport]) {
        let loop = ManualEventLoop()
        let hub = AirHub(configuration: AirHubConfiguration(socketPath: nil, seed: 5, statisticsInterval: nil), eventLoop: loop)
        let events = LockedValue<[AirHubEvent]>([])
        hub.onEvent = { event in events.withLock { $0.append(event) } }
        try? hub.start()
        let captures = ConsoleCaptures(hub: hub)
        hub.setFrameTap { device, frame, direction, time in
            captures.record(device: device, frame: frame, direction: direction, unixMicroseconds: time)
        }
        let peripheral = PolishManualTransport(), central = PolishManualTransport()
        hub.adopt(peripheral, origin: "test:peripheral", fileLabel: "peripheral-app")
        hub.adopt(central, origin: "test:central", fileLabel: "central-app")
        peripheral.deliver(.reset)
        peripheral.deliver(.setEventMask(0x3FFF_FFFF_FFFF_FFFF))
        peripheral.deliver(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 0x20, intervalMax: 0x20)))
        peripheral.deliver(.leSetAdvertisingEnable(true))
        central.deliver(.reset)
        central.deliver(.setEventMask(0x3FFF_FFFF_FFFF_FFFF))
        central.deliver(.leCreateConnection(LECreateConnectionParameters(peerAddressType: .public, peerAddress: AirHub.address(forDevice: 1))))
        loop.advance(by: .milliseconds(300))
        return (loop, hub, ConsoleAPI(hub: hub, token: Self.token, captures: captures), events, [peripheral, central])
    }

    /// Sends one request and runs the loop until it is answered.
    private func call(_ api: ConsoleAPI, _ loop: ManualEventLoop, _ method: String, _ uri: String, body: String = "",
                      token: String? = AirConsoleAPITests.token.text) -> ConsoleResponse {
        let answer = LockedValue<ConsoleResponse?>(nil)
        let request = ConsoleRequest(method: method, uri: uri, authorization: token.map { "Bearer \($0)" }, body: Array(body.utf8))
        api.respond(to: request) { response in answer.store(response) }
        _ = loop.run()
        return answer.load() ?? ConsoleResponse.error(599, "none", "not answered")
    }

    private func object(_ response: ConsoleResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    @Test("the routes are exactly the paths of Docs/air-console.openapi.json")
    func routesMatchTheDocument() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Docs/air-console.openapi.json")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let documented = Set(paths.flatMap { path, operations in operations.keys.map { "\($0.uppercased()) \(path)" } })
        #expect(documented == Set(ConsoleAPI.routes.map { "\($0.method) \($0.path)" }))
    }

    @Test("GET /api/air: both devices by program name, the link with its parameters and traffic")
    func airAsJSON() throws {
        let (loop, hub, api, _, _) = connectedHub()
        _ = call(api, loop, "GET", "/api/air")  // starts the per-link counts
        loop.advance(by: .seconds(1))
        let response = call(api, loop, "GET", "/api/air")
        #expect(response.status == 200)
        let air = object(response)
        let devices = try #require(air["devices"] as? [[String: Any]])
        #expect(devices.map { $0["number"] as? Int } == [1, 2])
        #expect(devices.map { $0["name"] as? String } == ["peripheral-app", "central-app"])
        #expect(devices[0]["advertising"] as? Bool == false)  // a connectable advertiser stops once connected
        let links = try #require(air["links"] as? [[String: Any]])
        #expect(links.count == 1)
        let link = try #require(links.first)
        #expect(link["central"] as? Int == 2)
        #expect(link["peripheral"] as? Int == 1)
        #expect(link["jammed"] as? Bool == false)
        #expect((link["intervalMilliseconds"] as? Double ?? 0) > 0)
        #expect((link["packets"] as? Int ?? 0) > 0)
        #expect((link["events"] as? Int ?? 0) > 0)
        #expect((link["rssi"] as? [String: Any])?["central"] as? Int != nil)
        let listed = call(api, loop, "GET", "/api/links")
        #expect((try? JSONSerialization.jsonObject(with: Data(listed.body)) as? [Any])?.count == 1)
        _ = hub.stop()
    }

    @Test("an advertiser's packets are counted once a view was asked for")
    func advertisingPacketsCounted() throws {
        let loop = ManualEventLoop()
        let hub = AirHub(configuration: AirHubConfiguration(socketPath: nil, seed: 6, statisticsInterval: nil), eventLoop: loop)
        try hub.start()
        let advertiser = PolishManualTransport()
        hub.adopt(advertiser, origin: "test:advertiser", fileLabel: "beacon")
        let api = ConsoleAPI(hub: hub, token: Self.token, captures: ConsoleCaptures(hub: hub))
        _ = call(api, loop, "GET", "/api/air")  // starts the per-advertiser counts
        advertiser.deliver(.reset)
        advertiser.deliver(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 0x20, intervalMax: 0x20)))
        advertiser.deliver(.leSetAdvertisingEnable(true))
        loop.advance(by: .seconds(1))
        let devices = try #require(object(call(api, loop, "GET", "/api/air"))["devices"] as? [[String: Any]])
        // One per advertising event, every 20 ms plus up to 10 ms of random delay (Vol 6 Part B §4.4.2.2.1): 33 to 50.
        let counted = devices.first?["advertisingPackets"] as? Int ?? 0
        #expect(counted >= 33 && counted <= 50, "\(counted)")
        #expect(devices.first?["advertising"] as? Bool == true)
        _ = hub.stop()
    }

    @Test("captures: dev2's HCI traffic as btsnoop and the air as pcap, started, downloaded, stopped, deleted")
    func capturesStartStopDownload() throws {
        let (loop, hub, api, _, transports) = connectedHub()
        let pcap = call(api, loop, "POST", "/api/captures", body: #"{"kind": "pcap"}"#)
        #expect(pcap.status == 201, "\(String(decoding: pcap.body, as: UTF8.self))")
        let snoop = call(api, loop, "POST", "/api/captures", body: #"{"kind": "btsnoop", "device": 2}"#)
        #expect(snoop.status == 201)
        #expect(object(snoop)["filename"] as? String == "dev2-central-app-capture2.btsnoop")
        transports[1].deliver(.readRSSI(handle: 0x0000))
        transports[1].deliver(.leReadRemoteFeatures(handle: 0x0000))
        loop.advance(by: .seconds(1))
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(call(api, loop, "GET", "/api/captures").body)) as? [[String: Any]])
        #expect(listed.map { $0["kind"] as? String } == ["pcap", "btsnoop"])
        #expect(listed.allSatisfy { $0["running"] as? Bool == true && ($0["packets"] as? Int ?? 0) > 0 }, "\(listed)")

        // The btsnoop, read back: dev2's commands and their events only (dev1's traffic is not in it).
        let stopped = call(api, loop, "POST", "/api/captures/2/stop")
        #expect(object(stopped)["running"] as? Bool == false)
        let file = call(api, loop, "GET", "/api/captures/2/file")
        #expect(file.status == 200 && file.attachment == "dev2-central-app-capture2.btsnoop")
        var reader = try BTSnoopReader(bytes: file.body)
        var commands: [HCICommand] = []
        while let record = try reader.next() {
            let frame = try record.frame(datalink: reader.header.datalink)
            if frame.type == .command, let command = try? HCICommand(decoding: frame.packet) { commands.append(command) }
        }
        #expect(commands.contains(.readRSSI(handle: 0x0000)) && commands.contains(.leReadRemoteFeatures(handle: 0x0000)), "\(commands)")
        #expect(!commands.contains { if case .leSetAdvertisingEnable = $0 { true } else { false } })

        // The pcap, downloaded while it runs: the global header (LINKTYPE 256) and the link's data PDUs.
        let air = call(api, loop, "GET", "/api/captures/1/file")
        #expect(air.contentType == "application/vnd.tcpdump.pcap" && air.attachment == "air-capture1.pcap")
        #expect(Array(air.body.prefix(4)) == [0xD4, 0xC3, 0xB2, 0xA1] && air.body.count > 24 + 16 * 10, "\(air.body.count) octets")
        #expect(air.body[20] == 0x00 && air.body[21] == 0x01, "LINKTYPE 256 (Bluetooth LE LL with PHDR)")
        // dev2 leaves: its capture stops by itself, kept for download, and the chart forgets its frames.
        #expect(call(api, loop, "POST", "/api/captures", body: #"{"kind": "btsnoop", "device": 2}"#).status == 201)
        api.captures.forget(device: 2)
        let afterLeaving = try #require(try JSONSerialization.jsonObject(with: Data(call(api, loop, "GET", "/api/captures").body)) as? [[String: Any]])
        #expect(afterLeaving.last?["running"] as? Bool == false && afterLeaving.last?["note"] as? String == "dev2 left the air")
        #expect(!String(decoding: call(api, loop, "GET", "/api/chart").body, as: UTF8.self).contains("dev2 central-app"))
        #expect(call(api, loop, "DELETE", "/api/captures/1").status == 204)
        #expect(hub.airPacketTap.load() == nil, "no pcap runs: the air's packets are no longer tapped")
        #expect(call(api, loop, "GET", "/api/captures/1/file").status == 404)
        #expect(call(api, loop, "POST", "/api/captures/1/stop").status == 404)
        _ = hub.stop()
    }

    @Test("a capture read while it is written is given up to its last whole record (btsnoop and pcap)")
    func capturesEndOnWholeRecords() {
        var writer = BTSnoopWriter(datalink: .hciUART)
        writer.write(H4Frame(type: .command, packet: [0x03, 0x0C, 0x00]), direction: .sent, unixMicroseconds: 1_000)
        let oneRecord = writer.bytes
        writer.write(H4Frame(type: .event, packet: [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]), direction: .received, unixMicroseconds: 2_000)
        let twoRecords = writer.bytes
        #expect(ConsoleCaptures.wholeRecords(twoRecords, kind: .btsnoop) == twoRecords)
        for cut in oneRecord.count..<twoRecords.count {
            #expect(ConsoleCaptures.wholeRecords(Array(twoRecords[..<cut]), kind: .btsnoop) == oneRecord)
        }
        #expect(ConsoleCaptures.wholeRecords(Array(twoRecords[..<10]), kind: .btsnoop) == [])

        let header = LinkLayerSniffer.fileHeader()
        let record: [UInt8] = [1, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 5, 0, 0, 0, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE]
        let pcap = header + record + record
        #expect(ConsoleCaptures.wholeRecords(pcap, kind: .pcap) == pcap)
        #expect(ConsoleCaptures.wholeRecords(Array(pcap.dropLast()), kind: .pcap) == header + record)
        #expect(ConsoleCaptures.wholeRecords(Array(pcap.prefix(header.count + 3)), kind: .pcap) == header)
    }

    @Test("captures refuse a btsnoop without a device, a pcap with one, an unknown kind or device, and a ninth capture")
    func captureRefusals() {
        let (loop, hub, api, _, _) = connectedHub()
        #expect(call(api, loop, "POST", "/api/captures", body: #"{"kind": "btsnoop"}"#).status == 400)
        #expect(call(api, loop, "POST", "/api/captures", body: #"{"kind": "pcap", "device": 1}"#).status == 400)
        #expect(call(api, loop, "POST", "/api/captures", body: #"{"kind": "wav"}"#).status == 400)
        #expect(call(api, loop, "POST", "/api/captures", body: #"{"kind": 1}"#).status == 400)
        #expect(call(api, loop, "POST", "/api/captures", body: #"{"kind": "btsnoop", "device": 9}"#).status == 404)
        for _ in 0..<ConsoleCaptures.captureLimit {
            #expect(call(api, loop, "POST", "/api/captures", body: #"{"kind": "btsnoop", "device": 1}"#).status == 201)
        }
        let ninth = call(api, loop, "POST", "/api/captures", body: #"{"kind": "pcap"}"#)
        #expect(ninth.status == 409)
        #expect((object(ninth)["error"] as? [String: String])?["reason"] == "8 captures are kept already: delete one first")
        #expect(call(api, loop, "PUT", "/api/captures").status == 405)
        #expect(call(api, loop, "GET", "/api/captures/x/file").status == 404)
        _ = hub.stop()
    }

    @Test("GET /api/recording: the hub's --record file so far, which a replay reads; 404 and recording false without one")
    func recordingSoFar() throws {
        let (loop, hub, api, _, _) = connectedHub()
        #expect(call(api, loop, "GET", "/api/recording").status == 404)
        #expect(object(call(api, loop, "GET", "/api/air"))["recording"] as? Bool == false)
        _ = hub.stop()

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ocb-console-recording-\(UUID().uuidString.prefix(8)).air").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let recordingLoop = ManualEventLoop()
        var configuration = AirHubConfiguration(socketPath: nil, seed: 9, statisticsInterval: nil)
        configuration.recordPath = path
        let recorded = AirHub(configuration: configuration, eventLoop: recordingLoop)
        try recorded.start()
        let device = PolishManualTransport()
        recorded.adopt(device, origin: "test:advertiser", fileLabel: "beacon")
        device.deliver(.reset)
        device.deliver(.leSetAdvertisingEnable(true))
        recordingLoop.advance(by: .seconds(1))
        let recordingAPI = ConsoleAPI(hub: recorded, token: Self.token, captures: ConsoleCaptures(hub: recorded))
        #expect(object(call(recordingAPI, recordingLoop, "GET", "/api/air"))["recording"] as? Bool == true)
        let response = call(recordingAPI, recordingLoop, "GET", "/api/recording")
        #expect(response.status == 200 && response.attachment == (path as NSString).lastPathComponent)
        let text = String(decoding: response.body, as: UTF8.self)
        #expect(text.hasPrefix("# opencorebluetooth air recording 1\nseed 9\n"), "\(text.prefix(120))")
        #expect(text.contains(" join 1 ") && text.contains(" frame 1 "), "the device's join and its host's commands")
        // What was downloaded replays (the digests come when the hub stops, so the replay says it was cut).
        let copy = path + ".downloaded"
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try Data(response.body).write(to: URL(fileURLWithPath: copy))
        let replay = try AirReplay.run(path: copy, snoopDirectory: nil, sniffer: nil)
        #expect(replay.devices.count == 1 && replay.matches == nil)
        _ = recorded.stop()
    }

    @Test("GET /api/chart: the sequence chart of the recent traffic, a lane per device named by its program")
    func liveChart() {
        let (loop, hub, api, _, _) = connectedHub()
        loop.advance(by: .seconds(1))
        let chart = call(api, loop, "GET", "/api/chart")
        #expect(chart.status == 200 && chart.contentType.hasPrefix("text/html"))
        let page = String(decoding: chart.body, as: UTF8.self)
        #expect(page.contains("<svg") && page.contains("dev1 peripheral-app") && page.contains("dev2 central-app"))
        #expect(page.contains("connection: "), "the link's creation is drawn (the legend says only \"connection, updates\")")
        _ = hub.stop()
    }

    @Test("a move out of range through the API ends the link at both ends, reported as blue fault reports it")
    func moveOutOfRange() {
        let (loop, hub, api, events, _) = connectedHub()
        let response = call(api, loop, "POST", "/api/devices/2/move", body: #"{"x": 5000, "y": 0}"#)
        #expect(response.status == 200)
        #expect(object(response)["effect"] as? String == "move: dev2 to (5000.0, 0.0, 0.0) m")
        loop.advance(by: .seconds(10))
        let reported = events.withLock { $0 }
        #expect(reported.contains { if case .fault(.move(2, _), _) = $0 { true } else { false } })
        let ended = reported.compactMap { event -> Int? in if case .disconnected(let device, _, _) = event { device } else { nil } }
        #expect(ended.sorted() == [1, 2])
        _ = hub.stop()
    }

    @Test("radio, range, drop and loss give blue fault's lines; a second drop is refused with 409")
    func eachFault() {
        let (loop, hub, api, _, _) = connectedHub()
        #expect(object(call(api, loop, "PUT", "/api/loss", body: #"{"percent": 12.5}"#))["effect"] as? String == "loss 12.5% of packets heard")
        #expect(hub.air.configuration.packetLoss == 0.125)
        #expect(call(api, loop, "PUT", "/api/loss", body: #"{"percent": 0}"#).status == 200)
        let off = call(api, loop, "POST", "/api/devices/1/radio", body: #"{"on": false}"#)
        #expect((object(off)["effect"] as? String)?.hasPrefix("power: dev1's radio off") == true)
        #expect(call(api, loop, "POST", "/api/devices/1/radio", body: #"{"on": true}"#).status == 200)
        let out = call(api, loop, "POST", "/api/devices/1/range", body: #"{"out": true}"#)
        #expect(object(out)["effect"] as? String == "range: dev1 out of range (100 km away)")
        #expect(call(api, loop, "POST", "/api/links/drop", body: #"{"device": 2}"#).status == 200)
        let again = call(api, loop, "POST", "/api/links/drop", body: "")
        #expect(again.status == 409)
        #expect(object(again)["error"] as? [String: String] == ["code": "refused", "reason": "no link on the air"])
        _ = hub.stop()
    }

    @Test("bad requests: 401 without the token, 404 unknown paths and devices, 405 wrong methods, 400 bad bodies", arguments: [
        ("POST", "/api/devices/2/move", #"{"x": 1}"#, 400),
        ("POST", "/api/devices/2/move", #"{"x": "1", "y": 2}"#, 400),
        ("POST", "/api/devices/2/move", #"{"x": true, "y": 2}"#, 400),
        ("POST", "/api/devices/2/move", #"{"x": 1, "y": 2, "w": 3}"#, 400),
        ("POST", "/api/devices/2/move", #"{"x": 1e300, "y": 2}"#, 400),
        ("POST", "/api/devices/2/move", #"[1, 2]"#, 400),
        ("POST", "/api/devices/2/move", #"{"x": 1, "y": "#, 400),
        ("POST", "/api/devices/2/move", "", 400),
        ("POST", "/api/devices/2/radio", #"{"on": 1}"#, 400),
        ("POST", "/api/devices/2/radio", #"{"on": null}"#, 400),
        ("POST", "/api/devices/2/range", #"{"out": "yes"}"#, 400),
        ("POST", "/api/links/drop", #"{"device": 1.5}"#, 400),
        ("POST", "/api/links/drop", #"{"device": 0}"#, 400),
        ("PUT", "/api/loss", #"{"percent": 101}"#, 400),
        ("PUT", "/api/loss", #"{"percent": -1}"#, 400),
        ("PUT", "/api/loss", #"{"percent": {"a": 1}}"#, 400),
        ("POST", "/api/devices/9/move", #"{"x": 1, "y": 2}"#, 404),
        ("POST", "/api/devices/0/radio", #"{"on": true}"#, 404),
        ("POST", "/api/devices/abc/radio", #"{"on": true}"#, 404),
        ("POST", "/api/devices/99999999999999999999/radio", #"{"on": true}"#, 404),
        ("POST", "/api/devices/2/teleport", "{}", 404),
        ("POST", "/api/links/drop", #"{"device": 9}"#, 404),
        ("GET", "/api/nothing", "", 404),
        ("GET", "/nothing", "", 404),
        ("DELETE", "/api/air", "", 405),
        ("GET", "/api/devices/2/move", "", 405),
        ("POST", "/api/loss", #"{"percent": 1}"#, 405),
        ("GET", "/api/events", "", 426),
        ("POST", "/api/events", "", 405),
    ])
    func badRequests(method: String, uri: String, body: String, status: Int) {
        let (loop, hub, api, _, _) = connectedHub()
        let response = call(api, loop, method, uri, body: body)
        #expect(response.status == status, "\(method) \(uri) \(body): \(String(decoding: response.body, as: UTF8.self))")
        let error = object(response)["error"] as? [String: String]
        #expect(error?["reason"]?.isEmpty == false)
        #expect(error?["reason"]?.contains("\n") == false)
        _ = hub.stop()
    }

    @Test("the API needs the token (header or query); the page itself does not")
    func token() {
        let (loop, hub, api, _, _) = connectedHub()
        #expect(call(api, loop, "GET", "/api/air", token: nil).status == 401)
        #expect(call(api, loop, "GET", "/api/air", token: "test-toke").status == 401)
        #expect(call(api, loop, "GET", "/api/air", token: "test-tokens").status == 401)
        #expect(call(api, loop, "POST", "/api/devices/2/radio", body: #"{"on": false}"#, token: "").status == 401)
        #expect(call(api, loop, "GET", "/api/air?token=test-token", token: nil).status == 200)
        #expect(call(api, loop, "GET", "/api/air?token=test%2Dtoken", token: nil).status == 200)
        let page = call(api, loop, "GET", "/", token: nil)
        #expect(page.status == 200)
        #expect(page.contentType.hasPrefix("text/html"))
        #expect(String(decoding: page.body, as: UTF8.self).contains("<!doctype html>"))
        #expect(ConsoleToken().text.count == 64)
        #expect(ConsoleToken().text != ConsoleToken().text)
        #expect(!ConsoleToken("").matches(""))
        _ = hub.stop()
    }
}
