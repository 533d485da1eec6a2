import BluetoothCore
@testable import BluetoothLE
import Host
import Testing

@Suite(.serialized)
struct InProcessStacksTests {
    @Test func threeStacksOnAPrivateAirSeeEachOtherAndTalk() async throws {
        let world = try await InProcessStacks.make(count: 3)
        let (server, client, bystander) = (world.stacks[0], world.stacks[1], world.stacks[2])
        let level = Characteristic(BluetoothUUID(0x2A19), properties: [.read, .notify], value: [77])
        try await server.publish(deviceName: "battery") { Service(BluetoothUUID(0x180F)) { level } }
        let advertising = try await server.advertise(name: "battery", services: [BluetoothUUID(0x180F)], interval: .milliseconds(20))
        // Two scanners on the air both hear it.
        for scanner in [client, bystander] {
            let heard = try await withTimeout { () -> Advertisement? in
                for try await advertisement in scanner.scan(services: [BluetoothUUID(0x180F)]) where advertisement.localName == "battery" {
                    return advertisement
                }
                return nil
            }
            let serverAddress = await server.localAddress()
            #expect(heard?.address == serverAddress)
        }
        let peripheral = try await withTimeout { try await client.connect(to: await server.localAddress(), timeout: .seconds(5)) }
        await advertising.stop()
        let characteristic = try await peripheral.characteristic(BluetoothUUID(0x2A19), service: BluetoothUUID(0x180F))
        #expect(try await peripheral.read(characteristic) == [77])
        try await withTimeout { try await peripheral.disconnect() }
        for stack in world.stacks {
            let quiet = await eventually { await stack.resources().isQuiescent }
            let resources = await stack.resources()
            #expect(quiet, "\(resources)")
        }
        await world.shutdown()
    }
}

/// `BluetoothStack.open(_:)`: the names `--hci` and `OCB_HCI` take, opened through StackLauncher's one reading.
@Suite(.serialized)
struct BluetoothStackOpenTests {
    @Test func inProcessOpensAStartedStackOnTheProcessAir() async throws {
        let first = try await BluetoothStack.open(" in-process ")
        let second = try await BluetoothStack.open("in-process")
        // Both on the process's own air: one hears the other advertise.
        let advertising = try await first.advertise(name: "open-test", services: [], interval: .milliseconds(20))
        let heard = try await withTimeout { () -> Advertisement? in
            for try await advertisement in second.scan() where advertisement.localName == "open-test" { return advertisement }
            return nil
        }
        #expect(heard?.address == (await first.localAddress()))
        await advertising.stop()
        await first.shutdown()
        await second.shutdown()
    }

    @Test(arguments: ["nonsense", "bluez:", "tcp:nowhere"])
    func aNameThatDoesNotParseIsRefusedWithTheParsersReason(_ name: String) async {
        do {
            let stack = try await BluetoothStack.open(name)
            await stack.shutdown()
            Issue.record("\(name) opened")
        } catch let error as BluetoothLEError {
            #expect(error.code == .notReady)
            #expect(error.reason.hasPrefix("\(name): "), "\(error.reason)")
        } catch {
            Issue.record("\(name): \(error)")
        }
    }
}
