import DBus
import Foundation
import TestSupport
import Testing

/// The test's own dbus-daemon (TestSupport), or nil with an issue recorded when it is missing and required.
func startTestBus() async throws -> TestDBusDaemon? {
    guard let bus = try await TestDBusDaemon.start() else {
        if TestDBusDaemon.required { Issue.record("OCB_REQUIRE_INTEROP=1 but dbus-daemon is not installed (apt-get install dbus-daemon)") }
        return nil
    }
    return bus
}

/// gdbus on `bus`, or nil with an issue recorded when it is missing and required.
func gdbus(_ bus: TestDBusDaemon, _ arguments: [String]) async throws -> CompletedProcess? {
    guard let result = try await bus.gdbus(arguments) else {
        if TestDBusDaemon.required { Issue.record("OCB_REQUIRE_INTEROP=1 but gdbus is not installed (apt-get install libglib2.0-bin)") }
        return nil
    }
    return result
}

/// Our client against code we did not write: a real dbus-daemon (which drops a connection that sends it anything
/// malformed) and GLib's gdbus (which calls our exported object and emits a signal we receive).
@Suite(.timeLimit(.minutes(2)))
struct DBusDaemonTests {
    @Test func helloThenTheBusMethods() async throws {
        guard let bus = try await startTestBus() else { return }
        defer { Task { await bus.stop() } }
        let connection = try await DBusConnection.connect(address: bus.address)
        defer { connection.close() }
        #expect(connection.uniqueName.hasPrefix(":1."))
        #expect(connection.serverGUID.count == 32)
        let daemon = { (member: String, body: [DBusValue]) in
            DBusMessage.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                             member: member, body: body)
        }
        let id = try await connection.call(daemon("GetId", []))
        #expect(id.body.first?.stringValue?.utf8.count == 32)
        let requested = try await connection.call(daemon("RequestName", [.string("org.opencorebluetooth.Test"), .uint32(4)]))
        #expect(requested.body == [.uint32(1)], "primary owner")
        let names = try await connection.call(daemon("ListNames", []))
        let listed = names.body.first?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(listed.contains(connection.uniqueName) && listed.contains("org.opencorebluetooth.Test"))
        // An error reply keeps its name.
        do {
            _ = try await connection.call(daemon("NoSuchMethod", []))
            Issue.record("an unknown method was answered")
        } catch {
            #expect(error.code == .errorReply)
            #expect(error.name == "org.freedesktop.DBus.Error.UnknownMethod")
        }
    }

    /// gdbus calls a method we export with every kind of argument; we answer with the same values, and gdbus prints
    /// what it decoded.
    @Test func gdbusCallsOurObjectAndReadsOurReply() async throws {
        guard let bus = try await startTestBus() else { return }
        defer { Task { await bus.stop() } }
        let connection = try await DBusConnection.connect(address: bus.address)
        defer { connection.close() }
        let received = LockedBoxDB<[DBusValue]>([])
        connection.export(path: "/org/opencorebluetooth/Echo") { call in
            guard call.interface == "org.opencorebluetooth.Echo", call.member == "Echo" else {
                return call.errorReply(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "no \(call.member ?? "?")")
            }
            received.value = call.body
            return call.methodReturn(call.body)
        }
        guard let result = try await gdbus(bus, [
            "call", "--dest", connection.uniqueName, "--object-path", "/org/opencorebluetooth/Echo",
            "--method", "org.opencorebluetooth.Echo.Echo",
            "'héllo'", "uint32 4000000000", "int16 -5", "true", "objectpath '/org/bluez/hci0'",
            "{'Name': <'blue'>, 'RSSI': <int16 -60>}", "[byte 1, 2, 255]", "(1, ('x', 2.5))",
        ]) else { return }
        #expect(result.status == 0, "\(result)")
        #expect(result.output == "('héllo', uint32 4000000000, int16 -5, true, objectpath '/org/bluez/hci0', "
                + "{'Name': <'blue'>, 'RSSI': <int16 -60>}, [byte 0x01, 0x02, 0xff], (1, ('x', 2.5)))\n")
        let body = received.value
        #expect(body.count == 8)
        #expect(body.first == .string("héllo"))
        #expect(body[5].dictionaryValue?["RSSI"]?.intValue == -60)
        #expect(body[6].bytesValue == [1, 2, 255])
        // A path we did not export: the standard error, which gdbus reports.
        guard let missing = try await gdbus(bus, [
            "call", "--dest", connection.uniqueName, "--object-path", "/nothing", "--method", "org.example.X.Y",
        ]) else { return }
        #expect(missing.status != 0)
        #expect(missing.errors.contains("org.freedesktop.DBus.Error.UnknownObject"), "\(missing)")
    }

    @Test func signalsArriveThroughAMatchRule() async throws {
        guard let bus = try await startTestBus() else { return }
        defer { Task { await bus.stop() } }
        let connection = try await DBusConnection.connect(address: bus.address)
        defer { connection.close() }
        let signals = LockedBoxDB<[DBusMessage]>([])
        let everything = LockedBoxDB<[DBusMessage]>([])
        connection.addSignalHandler { message in
            everything.value.append(message)
            if message.interface == "org.opencorebluetooth.Test" { signals.value.append(message) }
        }
        try await connection.addMatch("type='signal',interface='org.opencorebluetooth.Test'")
        guard let emitted = try await gdbus(bus, [
            "emit", "--object-path", "/org/opencorebluetooth/Sender", "--signal", "org.opencorebluetooth.Test.Ping",
            "42", "'pong'",
        ]) else { return }
        #expect(emitted.status == 0, "\(emitted)")
        #expect(await poll(within: .seconds(10)) { !signals.value.isEmpty }, "signals seen: \(everything.value)")
        let signal = try #require(signals.value.first)
        #expect(signal.member == "Ping" && signal.path == "/org/opencorebluetooth/Sender")
        #expect(signal.body == [.int32(42), .string("pong")])
    }

    @Test func callsEndByTheirTimeLimitOrWithTheConnection() async throws {
        guard let bus = try await startTestBus() else { return }
        let connection = try await DBusConnection.connect(address: bus.address)
        // Our own object never answers.
        connection.export(path: "/silent") { _ in nil }
        let call = DBusMessage.call(destination: connection.uniqueName, path: "/silent", interface: "org.example.S", member: "Wait")
        do {
            _ = try await connection.call(call, timeout: .milliseconds(300))
            Issue.record("a call nobody answers returned")
        } catch {
            #expect(error.code == .timedOut)
        }
        // The bus going away ends pending calls and tells onClose.
        let closed = LockedBoxDB<DBusError?>(nil)
        connection.onClose { closed.value = $0 }
        let pending = Task { () -> DBusError? in
            do throws(DBusError) {
                _ = try await connection.call(call, timeout: .seconds(60))
                return nil
            } catch {
                return error
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        await bus.stop()
        let failure = await pending.value
        #expect(failure?.code == .disconnected)
        #expect(await poll(within: .seconds(10)) { closed.value != nil })
        #expect(connection.isClosed)
        do {
            _ = try await connection.call(call)
            Issue.record("a call on a closed connection went out")
        } catch {
            #expect(error.code == .disconnected)
        }
    }

    @Test func aMissingBusIsOneClearError() async throws {
        do {
            _ = try await DBusConnection.connect(address: "unix:path=/nonexistent-ocb/bus")
            Issue.record("connected to nothing")
        } catch {
            #expect(error.code == .connectFailed)
            #expect(error.reason.hasPrefix("cannot connect to the bus at /nonexistent-ocb/bus: "))
        }
        #expect(throws: DBusError(.connectFailed, "no unix:path= entry in the bus address \"tcp:host=x\" (other transports are not supported)")) {
            _ = try DBusConnection.socketPath(of: "tcp:host=x")
        }
        #expect(try DBusConnection.socketPath(of: "unix:abstract=x;unix:path=/run/a%20b,guid=1") == "/run/a b")
    }
}

/// A value shared between the test and handler threads.
final class LockedBoxDB<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
