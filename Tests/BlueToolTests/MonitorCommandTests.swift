import Foundation
import HCI
import TestSupport
import Testing

/// `blue monitor` (issue 14 item 2): the hub's monitor socket streams every controller's traffic, named after the
/// program that joined; the monitor decodes it (ATT through L2CAP), filters by device and layer, prints JSON and
/// records a btsnoop capture our reader (and Wireshark's, in the interop checks) reads.
@Suite(.serialized) struct MonitorCommandTests {
    @Test func theMonitorSeesEveryDeviceDecoded() async throws {
        let tag = UUID().uuidString.prefix(6).lowercased()
        let socket = testTemporaryPath("ocb-mon-\(tag).sock")
        let capture = testTemporaryPath("mon-\(tag).btsnoop")
        defer { try? FileManager.default.removeItem(atPath: capture) }
        let hub = try BackgroundBlue(["air", "--socket", socket, "--stats-interval", "0"])
        defer { hub.stopInBackground() }
        guard await hub.waitFor("listening") else { Issue.record("hub: \(hub.errors)"); return }
        let att = try BackgroundBlue(["monitor", "--hci", "air:\(socket)", "--layer", "att"])
        defer { att.stopInBackground() }
        let json = try BackgroundBlue(["monitor", "--hci", "air:\(socket)", "--json", "--write", capture])
        defer { json.stopInBackground() }
        // A monitor that connects late still learns the devices already there (the hub greets it with them).
        let server = try BackgroundBlue(["serve", "--profile", "battery", "--name", "mon-\(tag)", "--hci", "air:\(socket)"])
        defer { server.stopInBackground() }
        guard await server.waitFor("serving") else { Issue.record("serve: \(server.errors)"); return }
        // Both monitors are connected once they name the server (live, or in the hub's greeting).
        let attReady = await att.waitFor("joined: dev1 ")
        let jsonReady = await json.waitFor("joined: dev1 ")
        #expect(attReady && jsonReady, "\(att.output) \(json.output)")
        let read = try await BlueProcess.run(["read", "mon-\(tag)", "2A19", "--hci", "air:\(socket)"])
        #expect(read.status == 0, "\(read.standardError)")

        #expect(await att.waitFor("blue read < ACL 0x0001 ATT Read Request"), "\(att.output)")
        #expect(await att.waitFor("blue serve < ACL 0x0001 ATT Read Response"), "\(att.output)")
        #expect(att.output.contains("joined: dev1 ") && att.output.contains("via blue serve (pid "))
        #expect(!att.output.contains("Command Complete"), "--layer att keeps ATT only")

        _ = await server.stop()
        _ = await json.stop()
        let objects = json.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let packets = objects.filter { $0["device"] != nil }
        #expect(packets.contains { $0["program"] as? String == "blue serve" })
        #expect(packets.contains { $0["program"] as? String == "blue read" })
        #expect(objects.contains { ($0["note"] as? String)?.hasPrefix("joined: dev1") == true })
        let bytes = try #require(FileManager.default.contents(atPath: capture))
        let recorded = try BTSnoopReader.readAll(Array(bytes))
        // Every packet shown was recorded (the one being handled when the monitor stopped may be in the file only).
        #expect(recorded.error == nil && (packets.count...packets.count + 1).contains(recorded.records.count),
                "\(recorded.records.count) of \(packets.count)")
        _ = await att.stop()
        await hub.stop()
    }

    @Test func aMonitorNeedsAHub() async throws {
        let missing = try await BlueProcess.run(["monitor", "--hci", "air:/nonexistent/air.sock"])
        #expect(missing.status == 69)
        #expect(missing.standardError.hasPrefix("error: no air hub monitor at /nonexistent/air.sock.monitor"), "\(missing.standardError)")
        // The kernel's monitor channel: here (no Bluetooth in this kernel, or no CAP_NET_RAW) one line saying what is
        // missing and 69; on a machine that has both it runs until --timeout (the VM scenario bluez-blue-commands).
        let kernel = try await BlueProcess.run(["monitor", "--hci", "hci0", "--timeout", "1"])
        if kernel.status != 0 {
            #expect(kernel.status == 69)
            #expect(kernel.standardError.hasPrefix("error: cannot "), "\(kernel.standardError)")
            #expect(kernel.standardError.contains("Bluetooth support") || kernel.standardError.contains("CAP_NET_RAW"), "\(kernel.standardError)")
            #expect(kernel.standardError.split(separator: "\n").count == 1)
        }
        let tcp = try await BlueProcess.run(["monitor", "--hci", "tcp:127.0.0.1:9"])
        #expect(tcp.status == 64)
        #expect(tcp.standardError == "error: --hci tcp:127.0.0.1:9: blue monitor reads the shared air's hub (virtual or air:PATH) or the kernel's "
                + "controllers (hciN, kernel); a program of ours on another transport records with --snoop FILE\n")
        let device = try await BlueProcess.run(["monitor", "--hci", "kernel", "--device", "1"])
        #expect(device.status == 64)
        #expect(device.standardError == "error: --device numbers the hub's devices; with --hci kernel choose the controller with --hci hciN\n")
        let layer = try await BlueProcess.run(["monitor", "--layer", "rfcomm"])
        #expect(layer.status == 64 && layer.standardError == "error: --layer rfcomm: expected hci, acl, l2cap, att, smp\n")
    }
}
