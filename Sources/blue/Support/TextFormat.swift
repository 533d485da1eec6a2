#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The text formatting `blue` took from Foundation (`String(format:)`, `padding(toLength:withPad:startingAt:)`),
/// which FoundationEssentials does not have: C's `vsnprintf` in the "C" locale (blue never sets another, so "0.5"
/// never becomes "0,5"), and padding by characters.
enum TextFormat {
    /// `format` with `arguments`, as printf formats them ("%.3f", "%g", "%.1f%%"). A result longer than the first
    /// buffer is formatted again into one of its size (vsnprintf says how many bytes it needed).
    static func printf(_ format: String, _ arguments: any CVarArg...) -> String {
        var capacity = 256
        while true {
            var buffer = [CChar](repeating: 0, count: capacity)
            let needed = Int(withVaList(arguments) { vsnprintf(&buffer, capacity, format, $0) })
            guard needed >= 0 else { return "" }
            if needed < capacity { return String(decoding: buffer.prefix(needed).map { UInt8(bitPattern: $0) }, as: UTF8.self) }
            capacity = needed + 1
        }
    }

    /// `text` padded with spaces, or cut, to `width` characters.
    static func padded(_ text: String, to width: Int) -> String {
        text.count >= width ? String(text.prefix(width)) : text + String(repeating: " ", count: width - text.count)
    }
}
