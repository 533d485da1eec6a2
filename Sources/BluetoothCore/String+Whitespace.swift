extension StringProtocol {
    /// The text without leading and trailing whitespace (Unicode White_Space: spaces, tabs, line ends), as
    /// Foundation's `trimmingCharacters(in: .whitespacesAndNewlines)` without Foundation.
    public func trimmingWhitespace() -> String {
        let scalars = String(self).unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}
