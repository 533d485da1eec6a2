import HCI
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SystemInterface

/// HCI over a UART (H4, Core 5.4 Vol 4 Part A §2): a tty in raw mode (8 data bits, no parity, one stop bit, no
/// echo or line processing) at a fixed baud rate, optionally with RTS/CTS hardware flow control (which the spec
/// requires of a real UART, §1; USB-serial dongles and pseudo-terminals often do without). The reader model is that
/// of ``SocketH4Transport``: one reader thread, ``H4Framer`` deframing, writes under a lock.
///
/// Known limit: with flow control on and a device that never raises CTS, a write blocks until the device is
/// removed; `close()` cannot interrupt it.
public final class SerialH4Transport: DescriptorBackedTransport {
    /// The baud rates this transport can set (the termios `B...` constants of the platform).
    public static var supportedBaudRates: [Int] { baudConstants.map(\.rate) }

    let core: DescriptorTransportCore
    public let path: String
    public let baudRate: Int
    public let flowControl: Bool

    /// Opens `path` (a tty) and configures it.
    /// - Parameters:
    ///   - baudRate: one of ``supportedBaudRates``.
    ///   - flowControl: RTS/CTS hardware flow control (CRTSCTS).
    public init(
        path: String, baudRate: Int = 115_200, flowControl: Bool = false, maximumPayloadLength: Int = 65535
    ) throws(HCITransportError) {
        let name = "serial:\(path),\(baudRate)\(flowControl ? ",rtscts" : "")"
        guard let speed = Self.baudConstants.first(where: { $0.rate == baudRate })?.constant else {
            let rates = Self.supportedBaudRates.map(String.init).joined(separator: ", ")
            throw HCITransportError(.openFailed, "\(name): unsupported baud rate \(baudRate); expected one of \(rates)")
        }
        // Non-blocking open so a missing carrier cannot block; blocking again once CLOCAL is set.
        let fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            let hint =
                code == EACCES ? " (add yourself to the dialout group or check the device permissions)"
                : code == ENOENT ? " (no such device; is the adapter plugged in?)" : ""
            throw HCITransportError(.openFailed, "\(name): cannot open \(path): \(POSIX.errorText(code))\(hint)")
        }
        guard isatty(fd) == 1 else {
            POSIX.closeDescriptor(fd)
            throw HCITransportError(.openFailed, "\(name): \(path) is not a terminal device")
        }
        var options = termios()
        guard tcgetattr(fd, &options) == 0 else {
            let reason = POSIX.lastErrorText
            POSIX.closeDescriptor(fd)
            throw HCITransportError(.openFailed, "\(name): cannot read the terminal settings: \(reason)")
        }
        cfmakeraw(&options)
        options.c_cflag |= tcflag_t(CLOCAL | CREAD)
        if flowControl {
            options.c_cflag |= tcflag_t(CRTSCTS)
        } else {
            options.c_cflag &= ~tcflag_t(CRTSCTS)
        }
        withUnsafeMutableBytes(of: &options.c_cc) { characters in
            if Int(VMIN) < characters.count { characters[Int(VMIN)] = 1 }
            if Int(VTIME) < characters.count { characters[Int(VTIME)] = 0 }
        }
        guard cfsetispeed(&options, speed) == 0, cfsetospeed(&options, speed) == 0,
              tcsetattr(fd, TCSANOW, &options) == 0
        else {
            let reason = POSIX.lastErrorText
            POSIX.closeDescriptor(fd)
            throw HCITransportError(.openFailed, "\(name): cannot configure \(path) (raw, \(baudRate) baud): \(reason)")
        }
        _ = tcflush(fd, TCIOFLUSH)
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
        core = try DescriptorTransportCore(
            fd: fd, name: name, isSocket: false, writeStyle: .file,
            readMode: .stream(maximumPayloadLength: maximumPayloadLength))
        self.path = path
        self.baudRate = baudRate
        self.flowControl = flowControl
    }

    #if os(Linux)
    static let baudConstants: [(rate: Int, constant: speed_t)] = [
        (9600, speed_t(B9600)), (19200, speed_t(B19200)), (38400, speed_t(B38400)), (57600, speed_t(B57600)),
        (115_200, speed_t(B115200)), (230_400, speed_t(B230400)), (460_800, speed_t(B460800)),
        (500_000, speed_t(B500000)), (576_000, speed_t(B576000)), (921_600, speed_t(B921600)),
        (1_000_000, speed_t(B1000000)), (1_152_000, speed_t(B1152000)), (1_500_000, speed_t(B1500000)),
        (2_000_000, speed_t(B2000000)), (2_500_000, speed_t(B2500000)), (3_000_000, speed_t(B3000000)),
        (3_500_000, speed_t(B3500000)), (4_000_000, speed_t(B4000000)),
    ]
    #else
    static let baudConstants: [(rate: Int, constant: speed_t)] = [
        (9600, speed_t(B9600)), (19200, speed_t(B19200)), (38400, speed_t(B38400)), (57600, speed_t(B57600)),
        (115_200, speed_t(B115200)), (230_400, speed_t(B230400)),
    ]
    #endif
}
