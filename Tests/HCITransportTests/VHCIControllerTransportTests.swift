@testable import HCITransport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `/dev/vhci` is only in a kernel with the hci_vhci module (the VM scenarios of Scripts/vm-test.sh use it for
/// real): here, its refusals and the creation handshake, read from a pipe standing in for the device.
@Suite struct VHCIControllerTransportTests {
    @Test func aMissingDeviceFailsWithWhatToDo() {
        let error = #expect(throws: HCITransportError.self) {
            try VHCIControllerTransport(path: "/nonexistent/vhci")
        }
        #expect(error?.code == .openFailed)
        #expect(error?.reason.hasPrefix("vhci: cannot open /nonexistent/vhci: ") == true)
        #expect(error?.reason.contains("modprobe hci_vhci") == true)
    }

    /// A pipe whose read end gets `bytes` (none: stays empty).
    func pipeReading(_ bytes: [UInt8]) -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        if !bytes.isEmpty { #expect(write(ends[1], bytes, bytes.count) == bytes.count) }
        return (ends[0], ends[1])
    }

    @Test func theCreationAnswerCarriesTheIndex() throws {
        let ends = pipeReading([0xFF, 0x00, 0x02, 0x01])
        defer { close(ends.read); close(ends.write) }
        #expect(try VHCIControllerTransport.readCreationAnswer(ends.read, timeout: 1_000) == 0x0102)
    }

    @Test(arguments: [[0x04, 0x0E, 0x00, 0x00], [0xFF, 0x01, 0x00, 0x00], [0xFF, 0x00]] as [[UInt8]])
    func anotherAnswerIsRefused(bytes: [UInt8]) {
        let ends = pipeReading(bytes)
        defer { close(ends.read); close(ends.write) }
        let error = #expect(throws: HCITransportError.self) {
            try VHCIControllerTransport.readCreationAnswer(ends.read, timeout: 1_000)
        }
        #expect(error?.reason.hasPrefix("vhci: unexpected answer") == true)
    }

    @Test func noAnswerEndsAfterTheTimeout() {
        let ends = pipeReading([])
        defer { close(ends.read); close(ends.write) }
        let error = #expect(throws: HCITransportError.self) {
            try VHCIControllerTransport.readCreationAnswer(ends.read, timeout: 50)
        }
        #expect(error?.reason == "vhci: the kernel did not create a controller within 50 ms")
    }
}
