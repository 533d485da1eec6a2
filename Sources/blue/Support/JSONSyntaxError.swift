/// Why a document is not JSON (RFC 8259), and where: the byte offset of the first byte that could not be read.
struct JSONSyntaxError: Error, Equatable {
    let offset: Int
    let reason: String

    /// The 1-based line and column of the offset in `bytes` (columns count characters, not bytes).
    func position(in bytes: [UInt8]) -> (line: Int, column: Int) {
        let end = min(max(offset, 0), bytes.count)
        var line = 1
        var lineStart = 0
        for index in 0..<end where bytes[index] == 0x0A {
            line += 1
            lineStart = index + 1
        }
        let column = String(decoding: bytes[lineStart..<end], as: UTF8.self).count + 1
        return (line, column)
    }
}
