import BluetoothRuntime
import Foundation
import OpenCoreBluetooth
import OpenCoreBluetoothTesting
import Seed004CentralApp
import Testing

nonisolated(unsafe) let androidChatService = CBUUID(string: "E20A39F4-73F5-4BC4-A12F-17D1AD07A961")
nonisolated(unsafe) let androidChatMessage = CBUUID(string: "08590F7E-DB05-467E-8757-72F6FAEB13D4")
nonisolated(unsafe) let androidChatGreeting = CBUUID(string: "C0DE0001-7E57-4C0D-9000-00000000CAFE")

/// The Android chat server of seed 004's article, declared in the test with Android's personality: it echoes each
/// write back as a notification ("echo: TEXT"), after answering it as `answer` says, 10 ms later on the world's clock.
final class AndroidChatServer: SimulatedPeripheralDelegate, @unchecked Sendable {
    let answer: SimulatedResponse<Void>
    /// The world's loop: the echo's delay is virtual time, so the world's clock waits for it (a wall-clock delay on
    /// another queue is work the world cannot see: under load its clock ran to the test's limit first).
    let loop: any EventLoop
    init(answer: SimulatedResponse<Void> = .success(()), loop: any EventLoop) {
        self.answer = answer
        self.loop = loop
    }

    func peripheral(_ peripheral: SimulatedPeripheral, didReceiveWriteRequestFor characteristic: SimulatedCharacteristic,
                    data: Data) -> SimulatedResponse<Void> {
        if answer.isSuccessful {
            // sendResponse first, then notifyCharacteristicChanged, as the Android app does.
            loop.schedule(after: .milliseconds(10)) {
                peripheral.simulateValueUpdate(Data("echo: ".utf8) + data, for: androidChatMessage)
            }
        }
        return answer
    }

    /// `declaringCCCD`: the app added the 0x2902 descriptor Android's server needs (else nobody can subscribe).
    static func spec(in world: SimulatedWorld, declaringCCCD: Bool = true,
                     answer: SimulatedResponse<Void> = .success(())) -> PeripheralSpec {
        PeripheralSpec.simulatePeripheral(proximity: .near)
            .advertising(advertisementData: [CBAdvertisementDataLocalNameKey: "Chat", CBAdvertisementDataServiceUUIDsKey: [androidChatService]])
            .connectable(name: "Chat", services: [SimulatedService(androidChatService, characteristics: [
                SimulatedCharacteristic(androidChatMessage, properties: [.read, .write, .writeWithoutResponse, .notify],
                                        descriptors: declaringCCCD ? [SimulatedDescriptor(CBUUID(string: "2902"), value: Data([0, 0]))] : []),
                SimulatedCharacteristic(androidChatGreeting, properties: [.read], value: Data("Hello from an Android GATT server".utf8)),
            ])], delegate: AndroidChatServer(answer: answer, loop: world.air.eventLoop))
            .personality(.android)
            .build()
    }
}

extension SimulatedResponse {
    var isSuccessful: Bool { if case .success = self { true } else { false } }
}

/// How the seed ended, once.
final class OutcomeBox: @unchecked Sendable {
    private let lock = NSLock()
    private var first: Seed004App.Outcome?
    func set(_ outcome: Seed004App.Outcome) { lock.withLock { if first == nil { first = outcome } } }
    var outcome: Seed004App.Outcome? { lock.withLock { first } }
}

/// Issue 28 item 7: seed 004's central, its view controller unchanged (Examples/Seed004CentralApp), tested with the
/// kit against the Android chat server of its article, declared with Android's personality, which behaves, forgets
/// the CCCD Android leaves to the app, or refuses the write. Serialized: the seed ends through process-wide hooks.
@Suite(.serialized) struct Seed004WithKitTests {
    static func start(in world: SimulatedWorld, _ box: OutcomeBox) async -> Seed004App {
        await withCheckedContinuation { (done: CheckedContinuation<UnsafeTransfer<Seed004App>, Never>) in
            DispatchQueue.main.async {
                done.resume(returning: UnsafeTransfer(world.run { Seed004App(text: "hello Android", log: { _ in }) { box.set($0) } }))
            }
        }.value
    }

    @Test("the seed's exchange: every characteristic subscribed, the text written with response, its echo received")
    func theSeedsExchange() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        try await world.simulatePeripheral(AndroidChatServer.spec(in: world))
        let box = OutcomeBox()
        let app = await Self.start(in: world, box)
        #expect(await world.eventually { box.outcome != nil }, "stage \(app.stage)")
        #expect(box.outcome == .received, "stage \(app.stage)")
        let kinds = world.exchanges.map(\.kind)
        #expect(kinds.contains(.subscribe(characteristic: androidChatMessage.uuidString, enabled: true)), "\(world.exchanges)")
        #expect(kinds.contains(.write(characteristic: androidChatMessage.uuidString, value: Data("hello Android".utf8), withResponse: true)),
                "\(world.exchanges)")
    }

    @Test("an Android server that forgot its 2902: the seed's subscription fails, so it never writes (it waits for it)")
    func anAndroidServerWithoutCCCD() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        try await world.simulatePeripheral(AndroidChatServer.spec(in: world, declaringCCCD: false))
        let box = OutcomeBox()
        let app = await Self.start(in: world, box)
        // Discovery goes through; then nothing: the seed writes only once its subscription is in place.
        #expect(await world.eventually { world.exchanges.contains { $0.kind == .connected } })
        #expect(await world.eventually { app.stage == "discovering" })
        try await Task.sleep(for: .seconds(2))
        #expect(box.outcome == nil)
        #expect(!world.exchanges.contains { if case .write = $0.kind { true } else { false } }, "\(world.exchanges)")
    }

    @Test("an Android server that refuses the write (GATT_FAILURE): the seed fails with the write's error")
    func anAndroidServerThatRefusesTheWrite() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        try await world.simulatePeripheral(AndroidChatServer.spec(in: world, answer: .attError(0x85)))
        let box = OutcomeBox()
        let app = await Self.start(in: world, box)
        #expect(await world.eventually { box.outcome != nil }, "stage \(app.stage)")
        guard case .failed(let reason)? = box.outcome else {
            Issue.record("\(String(describing: box.outcome))")
            return
        }
        #expect(reason.hasPrefix("write failed"), "\(reason)")
    }
}
