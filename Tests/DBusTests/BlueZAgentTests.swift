import DBus
import Testing
@testable import BlueZ

/// The Agent1 calls bluetoothd makes (BlueZ's doc/org.bluez.Agent.rst) as requests, and calls with missing or
/// mistyped arguments refused (nil: the agent answers UnknownMethod instead of guessing).
struct BlueZAgentTests {
    private func call(_ member: String, _ body: [DBusValue]) -> DBusMessage {
        .call(destination: nil, path: "/agent", interface: "org.bluez.Agent1", member: member, body: body)
    }

    private let device = DBusValue.objectPath("/org/bluez/hci0/dev_0A_1B_00_00_00_77")
    private let path = "/org/bluez/hci0/dev_0A_1B_00_00_00_77"

    @Test func eachCallIsItsRequest() {
        #expect(BlueZAgent.request(call("RequestConfirmation", [device, .uint32(123_456)])) == .confirmValue(device: path, value: 123_456))
        #expect(BlueZAgent.request(call("DisplayPasskey", [device, .uint32(42), .uint16(3)])) == .displayPasskey(device: path, passkey: 42, entered: 3))
        #expect(BlueZAgent.request(call("RequestPasskey", [device])) == .enterPasskey(device: path))
        #expect(BlueZAgent.request(call("RequestAuthorization", [device])) == .authorizePairing(device: path))
        #expect(BlueZAgent.request(call("AuthorizeService", [device, .string("180d")])) == .authorizeService(device: path, uuid: "180d"))
        #expect(BlueZAgent.request(call("RequestPinCode", [device])) == .enterPinCode(device: path))
        #expect(BlueZAgent.request(call("DisplayPinCode", [device, .string("0000")])) == .displayPinCode(device: path, pinCode: "0000"))
        #expect(BlueZAgent.request(call("Cancel", [])) == .cancelled)
    }

    @Test func malformedCallsAreNoRequest() {
        #expect(BlueZAgent.request(call("RequestConfirmation", [device])) == nil)
        #expect(BlueZAgent.request(call("RequestConfirmation", [device, .string("123456")])) == nil)
        #expect(BlueZAgent.request(call("DisplayPasskey", [device, .uint32(42)])) == nil)
        #expect(BlueZAgent.request(call("Release", [])) == nil)
        #expect(BlueZAgent.request(call("Unknown", [device])) == nil)
    }
}
