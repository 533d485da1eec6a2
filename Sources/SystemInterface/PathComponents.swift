/// The parent and the last component of a file path, as Foundation's `NSString.deletingLastPathComponent` and
/// `lastPathComponent` give them (IEEE Std 1003.1 §4.13 pathname resolution: trailing slashes ignored, a run of
/// slashes one separator), without Foundation.
package enum PathComponents {
    /// "/a/b/c" → "/a/b", "/a" → "/", "a" → "", "/" → "/", "a/b/" → "a".
    package static func parent(of path: String) -> String {
        let trimmed = withoutTrailingSlashes(path)
        guard trimmed != "/" else { return "/" }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        let parent = withoutTrailingSlashes(String(trimmed[..<slash]))
        return parent.isEmpty ? "/" : parent
    }

    /// "/a/b/c" → "c", "/a/b/" → "b", "/" → "/", "" → "".
    package static func last(of path: String) -> String {
        let trimmed = withoutTrailingSlashes(path)
        guard trimmed != "/" else { return "/" }
        guard let slash = trimmed.lastIndex(of: "/") else { return trimmed }
        return String(trimmed[trimmed.index(after: slash)...])
    }

    /// The path without its trailing slashes ("/" stays "/").
    private static func withoutTrailingSlashes(_ path: String) -> String {
        var text = Substring(path)
        while text.count > 1, text.hasSuffix("/") { text.removeLast() }
        return String(text)
    }
}
