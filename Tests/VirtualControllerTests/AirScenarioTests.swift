import BluetoothCore
import BluetoothRuntime
import Foundation
import HCI
import HCITransport
import TestSupport
import Testing
@testable import SharedAir
@testable import VirtualController

/// Scenario files (issue 29 item 6): parsed strictly with one line per mistake, played on the hub's clock as
/// `blue fault` applies them, and hostile files refused without a crash (issue 30 item 5).
@Suite struct AirScenarioTests {
    private static let example = #"""
        {"seed": 7, "steps": [{"at": 5, "fault": "move dev2 500 0"}, {"at": 8, "fault": "loss 20%"},
                              {"at": 2.5, "fault": "power dev3 off"}, {"at": 12, "fault": "drop all"}]}
        """#

    @Test("a scenario parses into its steps in time order, with its seed")
    func parses() throws {
        let scenario = try AirScenario(parsing: Array(Self.example.utf8))
        #expect(scenario.seed == 7)
        #expect(scenario.steps.map(\.at) == [.milliseconds(2500), .seconds(5), .seconds(8), .seconds(12)])
        #expect(scenario.steps.map(\.fault.line) == ["power dev3 off", "move dev2 500.0 0.0 0.0", "loss 20%", "drop all"])
        #expect(try AirScenario(parsing: Array(#"{"steps": []}"#.utf8)).steps.isEmpty)
    }

    @Test("mistakes are one line naming the step", arguments: [
        (#"{"steps": [{"at": 1, "fault": "warp dev2"}]}"#, "step 1 (\"warp dev2\"): unknown command"),
        (#"{"steps": [{"at": -1, "fault": "loss 1"}]}"#, "step 1: \"at\" must be seconds"),
        (#"{"steps": [{"at": 1e300, "fault": "loss 1"}]}"#, "step 1: \"at\" must be seconds"),
        (#"{"steps": [{"at": 1, "fault": "loss 1"}, {"at": 2, "fault": "devices"}]}"#, "step 2: \"devices\" asks"),
        (#"{"steps": [{"at": 1, "fault": "move dev2 1e9 0"}]}"#, "is not a coordinate"),
        (#"{"steps": [{"at": "1", "fault": "loss 1"}]}"#, "at .steps[0].at:"),
        (#"{"steps": [{"fault": "loss 1"}]}"#, "missing \"at\""),
        (#"{"seed": -1, "steps": []}"#, "at .seed:"),
        (#"{"stepz": []}"#, "missing \"steps\""),
        (#"[]"#, "expected {"),
        (#"{"steps": [{"at": 1, "fault": "loss 1"}"#, "expected {"),
        ("", "expected {"),
    ])
    func refuses(text: String, expected: String) {
        #expect(throws: AirHubError.self) { try AirScenario(parsing: Array(text.utf8)) }
        do {
            _ = try AirScenario(parsing: Array(text.utf8))
        } catch {
            #expect(error.reason.contains(expected), "\(error.reason)")
            #expect(!error.reason.contains("\n"))
        }
    }

    @Test("6,000 mutations of a scenario: each parses or is refused in one line, none crashes")
    func mutations() {
        var generator = SeededGenerator(seed: 29)
        let base = Array(Self.example.utf8)
        let alphabet = Array(#"{}[]":,-.0123456789eE tuflnsdevprmoagxyz%\"#.utf8)
        var parsed = 0
        for _ in 0..<6_000 {
            var bytes = base
            for _ in 0..<(1 + Int(generator.next() % 4)) {
                let index = Int(generator.next() % UInt64(max(bytes.count, 1)))
                switch generator.next() % 4 {
                case 0 where !bytes.isEmpty: bytes[index] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                case 1 where !bytes.isEmpty: bytes.remove(at: index)
                case 2: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: min(index, bytes.count))
                default: bytes = Array(bytes.prefix(index))
                }
            }
            do {
                let scenario = try AirScenario(parsing: bytes)
                parsed += 1
                #expect(scenario.steps.allSatisfy { $0.at >= .zero && $0.at <= .seconds(AirScenario.maximumSeconds) })
            } catch {
                #expect(!error.reason.isEmpty && !error.reason.contains("\n"))
            }
        }
        #expect(parsed > 0)
    }

    @Test("played on the hub's clock: each step at its time, reported as blue fault's; a missing device is a warning")
    func plays() throws {
        let loop = ManualEventLoop()
        let hub = AirHub(configuration: AirHubConfiguration(socketPath: nil, seed: 7, statisticsInterval: nil), eventLoop: loop)
        let events = LockedValue<[AirHubEvent]>([])
        hub.onEvent = { event in events.withLock { $0.append(event) } }
        try hub.start()
        let host = PolishManualTransport()
        hub.adopt(host, origin: "test:device")
        host.deliver(.reset)
        _ = loop.run()
        hub.play(try AirScenario(parsing: Array(#"{"steps": [{"at": 1, "fault": "move dev1 30 40"}, {"at": 2, "fault": "power dev3 off"}, {"at": 3, "fault": "loss 5"}]}"#.utf8)))
        loop.advance(by: .milliseconds(999))
        #expect(hub.controller(ofDevice: 1)?.position == AirPosition(x: 0, y: 0))
        loop.advance(by: .milliseconds(2))
        #expect(hub.controller(ofDevice: 1)?.position == AirPosition(x: 30, y: 40))
        loop.advance(by: .seconds(2))
        #expect(hub.air.configuration.packetLoss == 0.05)
        let texts = events.withLock { $0 }.map(\.text)
        #expect(texts.contains("fault: move: dev1 to (30.0, 40.0, 0.0) m"))
        #expect(texts.contains { $0.hasPrefix("warning: scenario at 2 s: power dev3 off: no dev3 on the air") })
        #expect(texts.contains("fault: loss 5% of packets heard"))
        _ = hub.stop()
    }
}

