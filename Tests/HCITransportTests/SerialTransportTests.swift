import HCI
@testable import HCITransport
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif
import SystemInterface

/// ``SerialH4Transport`` on a pseudo-terminal pair: the slave stands in for the UART device, the test drives the
/// master side as the "controller".
@Suite struct SerialTransportTests {
    @Test func framesCrossAPseudoTerminalBothWaysInRawMode() async throws {
        let (master, slavePath) = try PseudoTerminal.open()
        let transport = try SerialH4Transport(path: slavePath, baudRate: 1_000_000, flowControl: true)
        #expect(transport.name == "serial:\(slavePath),1000000,rtscts")
        // The slave is raw: no echo, no CR/LF translation, 8 bits through.
        var options = termios()
        let slave = open(slavePath, O_RDWR | O_NOCTTY)
        #expect(slave >= 0)
        #expect(tcgetattr(slave, &options) == 0)
        _ = Glibc.close(slave)
        #expect(options.c_lflag & tcflag_t(ECHO | ICANON | ISIG) == 0)
        #expect(options.c_oflag & tcflag_t(OPOST) == 0)
        #expect(options.c_iflag & tcflag_t(ICRNL | IXON) == 0)
        #expect(cfgetospeed(&options) == speed_t(B1000000))

        let seen = Collector()
        try seen.start(transport)
        let controller = RawPeer(fd: master, isSocket: false)
        // Bytes that a cooked tty would mangle: 0x0D, 0x0A, 0x03 (^C), 0x11/0x13 (XON/XOFF), 0x7F.
        let tricky = H4Frame(type: .event, packet: hex("FF 08 0D 0A 03 11 13 7F 04 00"))
        let frames = [tricky] + sampleFrames(count: 20, seed: 20)
        for byte in H4Framer.encode(frames) { try controller.write([byte]) }
        #expect(await seen.waitForFrames(frames.count) == frames)
        let commands = [tricky] + sampleFrames(count: 20, seed: 21)
        for frame in commands { try transport.send(frame) }
        #expect(try await controller.readFrames(commands.count) == commands)

        // The "UART" goes away: the reader reports it.
        controller.close()
        #expect(await seen.waitForClose()??.code == .closedByPeer)
        #expect(throws: HCITransportError.self) { try transport.send(tricky) }
    }

    @Test func localCloseEndsTheReader() async throws {
        let (master, slavePath) = try PseudoTerminal.open()
        defer { _ = Glibc.close(master) }
        let transport = try SerialH4Transport(path: slavePath)
        #expect(transport.name == "serial:\(slavePath),115200")
        let seen = Collector()
        try seen.start(transport)
        transport.close()
        #expect(await seen.waitForClose() == .some(nil))
        #expect(throws: HCITransportError(.closed, "\(transport.name): the transport is closed")) {
            try transport.send(H4Frame(type: .command, packet: hex("03 0C 00")))
        }
    }

    @Test func openingFailsClearly() throws {
        #expect(throws: HCITransportError(
            .openFailed,
            "serial:/dev/null,115200: /dev/null is not a terminal device")) {
            try SerialH4Transport(path: "/dev/null")
        }
        let missing = "/dev/ocb-no-such-tty"
        #expect(throws: HCITransportError(
            .openFailed,
            "serial:\(missing),115200: cannot open \(missing): \(POSIX.errorText(ENOENT)) (no such device; is the adapter plugged in?)")) {
            try SerialH4Transport(path: missing)
        }
        let rates = SerialH4Transport.supportedBaudRates.map(String.init).joined(separator: ", ")
        #expect(throws: HCITransportError(
            .openFailed, "serial:/dev/null,12345: unsupported baud rate 12345; expected one of \(rates)")) {
            try SerialH4Transport(path: "/dev/null", baudRate: 12345)
        }
    }
}
