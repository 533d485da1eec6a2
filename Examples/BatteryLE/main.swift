// A battery service with the async API (BluetoothLE), in either role, on whichever stack `--hci` (or OCB_HCI)
// names: our host on a transport ("virtual": the shared air, "hci1", "tcp:..."), or bluetoothd ("bluez", "bluez:hciN").
//
// Usage: BatteryLE --role peripheral [--hci NAME] [--timeout SECONDS]
//        BatteryLE --role central [--hci NAME] [--count N] [--pair] [--timeout SECONDS]
// The peripheral publishes the Battery Service (0x180F) with a Battery Level (0x2A19: read, write, notify),
// advertises it, prints "ready", notifies a falling level every 100 ms to a subscribed central, prints each value
// written, echoes SDUs on an L2CAP channel (PSM 0x0081) with "echo: " in front, and exits 0 once its first central
// has gone. The central finds the service, connects (and pairs, with --pair), reads the level, takes --count notifications (default 3),
// writes 50, reads it back, sends a line on an L2CAP channel and prints the echo, disconnects and exits 0. Either exits 1 with one
// line on a failure or at the timeout (default 60 s).
import BluetoothLE
import ExampleSupport
import Foundation

let example = ExampleProgram("BatteryLE")
let batteryService = BluetoothUUID(0x180F)
let batteryLevel = BluetoothUUID(0x2A19)
let echoPSM: UInt16 = 0x0081

func log(_ text: String) { example.log(text) }

let limit = example.timeout(default: 60)
let transport = example.option("--hci") ?? ProcessInfo.processInfo.environment["OCB_HCI"] ?? "virtual"
Task.detached {
    try? await Task.sleep(for: .seconds(limit))
    example.fail("not done within \(limit) s")
}

do {
    let stack = try await BluetoothStack.open(transport)
    log("stack on \(transport), own address \(await stack.localAddress())")
    switch example.option("--role") {
    case "peripheral": try await servePeripheral(stack)
    case "central": try await runCentral(stack, count: Int(example.option("--count") ?? "3") ?? 3)
    default: example.fail("--role peripheral or --role central")
    }
    await stack.shutdown()
} catch {
    example.fail("\(error)")
}

func servePeripheral(_ stack: BluetoothStack) async throws {
    let level = Characteristic(batteryLevel, properties: [.read, .write, .notify], value: [100])
        .onWrite { write in print("wrote \(write.value)") }
    try await stack.publish(deviceName: "BatteryLE") { Service(batteryService) { level } }
    let centrals = stack.connections()
    let channels = try await stack.publishL2CAPChannel(psm: echoPSM)
    let echo = Task {
        for await channel in channels {
            Task {
                for await sdu in channel.incoming { try await channel.send(Array("echo: ".utf8) + sdu) }
            }
        }
    }
    defer { echo.cancel() }
    let advertising = try await stack.advertise(name: "BatteryLE", services: [batteryService])
    // Unbuffered, for whoever waits for it through a pipe.
    FileHandle.standardOutput.write(Data("ready\n".utf8))
    var iterator = centrals.makeAsyncIterator()
    guard let central = await iterator.next() else { return }
    log("central \(central.address) connected")
    await advertising.stop()
    let notifier = Task {
        var value: UInt8 = 99
        while !Task.isCancelled, central.isConnected {
            if !level.subscribedConnections.isEmpty {
                try await stack.notify(level, value: [value])
                value = value == 1 ? 99 : value - 1
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
    let reason = try await central.disconnected()
    notifier.cancel()
    print("central gone: \(reason)")
}

func runCentral(_ stack: BluetoothStack, count: Int) async throws {
    var found: Advertisement?
    for try await advertisement in stack.scan(services: [batteryService]) {
        found = advertisement
        break
    }
    guard let advertisement = found else { example.fail("the scan ended without a battery service") }
    print("found \(advertisement.address) \(advertisement.localName ?? "(no name)")")
    let peripheral = try await stack.connect(to: advertisement, timeout: .seconds(30))
    print("connected, ATT_MTU \(peripheral.mtu)")
    if example.flag("--pair") {
        let outcome = try await peripheral.pair()
        print("paired: \(outcome.method.map { "\($0)" } ?? "existing bond"), \(outcome.bonded ? "bonded" : "not bonded")")
    }
    let level = try await peripheral.characteristic(batteryLevel, service: batteryService)
    print("level \(try await peripheral.read(level))")
    var received: [[UInt8]] = []
    for await value in try await peripheral.notifications(for: level) {
        received.append(value)
        if received.count == count { break }
    }
    print("notified \(received)")
    try await peripheral.write(level, value: [50])
    print("read back \(try await peripheral.read(level))")
    let channel = try await peripheral.openL2CAPChannel(psm: echoPSM)
    try await channel.send(Array("hello over L2CAP".utf8))
    var replies = channel.incoming.makeAsyncIterator()
    guard let reply = await replies.next() else { example.fail("the channel closed without an echo") }
    print("L2CAP \(String(decoding: reply, as: UTF8.self)) (peer MTU \(channel.peerMTU))")
    await channel.close()
    try await peripheral.disconnect()
    print("disconnected")
}
