#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The text formatting `blue` took from Foundation (`String(format:)`, `padding(toLength:withPad:startingAt:)`),
/// which FoundationEssentials does not have: C's `vsnprintf` in the "C" locale (blue never sets another, so "0.5"
/// never becomes "0,5"), and padding by characters.
enum TextFormat {
    /// `format` with `arguments`, as printf formats them ("%.3f", "%g", "%.1f%%").
    static func printf(_ format: String, _ arguments: any CVarArg...) -> String {
        withVaList(arguments) { list in
            var buffer = [CChar](repeating: 0, count: 256)
            let needed = Int(vsnprintf(&buffer, buffer.count, format, list))
            guard needed >= 0 else { return "" }
            if needed < buffer.count { return String(decoding: buffer.prefix(needed).map { UInt8(bitPattern: $0) }, as: UTF8.self) }
            return longPrintf(format, arguments, length: needed)
        }
    }

    /// The rare result longer than the first buffer: formatted again into one of its size.
    private static func longPrintf(_ format: String, _ arguments: [any CVarArg], length: Int) -> String {
        withVaList(arguments) { list in
            var buffer = [CChar](repeating: 0, count: length + 1)
            _ = vsnprintf(&buffer, buffer.count, format, list)
            return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// `text` padded with spaces, or cut, to `width` characters.
    static func padded(_ text: String, to width: Int) -> String {
        text.count >= width ? String(text.prefix(width)) : text + String(repeating: " ", count: width - text.count)
    }
}
