#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A detached POSIX thread running one closure (IEEE Std 1003.1, `pthread_create`): the transports' readers, the
/// listeners' accept loops, a clock's driver. Foundation's `Thread` without Foundation (the libraries run on
/// FoundationEssentials, which has no threads, so that a program need not map Foundation's ICU).
package enum DetachedThread {
    private final class Body {
        let name: String?
        let run: () -> Void
        init(name: String?, run: @escaping () -> Void) {
            self.name = name
            self.run = run
        }
    }

    /// Starts `body` on a new detached thread named `name` (as `ps -L` and a debugger show it: at most 15 bytes, so a
    /// longer name loses its leading dotted components, "OpenCoreBluetooth.air-hub.control" → "air-hub.control", then
    /// its end); false, with `errno` set, when the thread could not be created.
    @discardableResult
    package static func spawn(named name: String? = nil, _ body: @escaping @Sendable () -> Void) -> Bool {
        let box = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        #if canImport(Darwin)
        var thread: pthread_t?
        #else
        var thread = pthread_t()
        #endif
        let result = pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            let body = Unmanaged<Body>.fromOpaque(raw).takeRetainedValue()
            if let name = body.name {
                #if canImport(Darwin)
                pthread_setname_np(name)
                #else
                DetachedThread.nameCurrentThread(DetachedThread.shortName(name))
                #endif
            }
            body.run()
            return nil
        }, box)
        guard result == 0 else {
            Unmanaged<Body>.fromOpaque(box).release()
            errno = result
            return false
        }
        #if canImport(Darwin)
        if let thread { pthread_detach(thread) }
        #else
        pthread_detach(thread)
        #endif
        return true
    }

    #if !canImport(Darwin)
    /// Names the calling thread through /proc/thread-self/comm (what `pthread_setname_np` writes, which the Swift
    /// Glibc module does not offer); a kernel without it leaves the thread unnamed.
    private static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = POSIX.writeAll(fd, Array(name.utf8), style: .file)
        POSIX.closeDescriptor(fd)
    }
    #endif

    /// `name` in the 15 bytes a Linux thread name holds.
    static func shortName(_ name: String) -> String {
        var components = name.split(separator: ".", omittingEmptySubsequences: false)
        while components.count > 1, components.joined(separator: ".").utf8.count > 15 { components.removeFirst() }
        return String(decoding: components.joined(separator: ".").utf8.prefix(15), as: UTF8.self)
    }
}
