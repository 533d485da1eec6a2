/// The secret a console's control API asks for (issue 29 item 3), as Jupyter's: 32 random octets in hex, printed by
/// `blue air` in the console's address, compared in constant time.
public struct ConsoleToken: Hashable, Sendable {
    public let text: String

    /// A new random token (the system's random source).
    public init() {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef")
        text = String((0..<64).map { _ in digits[Int(generator.next() & 0xF)] })
    }

    /// A token given by the user (`--console-token`, tests).
    public init(_ text: String) {
        self.text = text
    }

    /// Whether `candidate` is this token; takes the same time wherever they differ.
    public func matches(_ candidate: String?) -> Bool {
        guard let candidate else { return false }
        let expected = Array(text.utf8), given = Array(candidate.utf8)
        var difference = UInt8(truncatingIfNeeded: expected.count ^ given.count)
        for index in 0..<expected.count {
            difference |= expected[index] ^ (index < given.count ? given[index] : 0)
        }
        return difference == 0 && !expected.isEmpty
    }
}
