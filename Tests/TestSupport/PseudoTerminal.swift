#if canImport(Glibc)
import Glibc
#endif

/// A pseudo-terminal pair for serial-transport tests: the slave stands in for a UART device (`serial:SLAVE`), the
/// test drives the master as the "controller", and closing the master is the device being unplugged.
public enum PseudoTerminal {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    /// Looks up a libc function the Glibc module does not export (the XSI pseudo-terminal calls).
    private static func libc<Function>(_ name: String, as type: Function.Type) throws -> Function {
        guard let symbol = dlsym(nil, name) else { throw Failure(description: "dlsym \(name) failed") }
        return unsafeBitCast(symbol, to: type)
    }

    /// Opens a master (posix_openpt, close-on-exec from the start so no child another test spawns keeps the
    /// "device" plugged in; grantpt, unlockpt, ptsname_r) and returns it with the slave's path. The caller closes
    /// the master, once.
    public static func open() throws -> (master: Int32, slavePath: String) {
        typealias OpenPT = @convention(c) (Int32) -> Int32
        typealias OnMaster = @convention(c) (Int32) -> Int32
        typealias PTSName = @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32
        let master = try libc("posix_openpt", as: OpenPT.self)(O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard master >= 0 else { throw Failure(description: "posix_openpt: \(errno)") }
        var name = [CChar](repeating: 0, count: 128)
        guard try libc("grantpt", as: OnMaster.self)(master) == 0, try libc("unlockpt", as: OnMaster.self)(master) == 0,
              try libc("ptsname_r", as: PTSName.self)(master, &name, name.count) == 0 else {
            let code = errno
            _ = close(master)
            throw Failure(description: "grantpt/unlockpt/ptsname_r: \(code)")
        }
        return (master, String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}
