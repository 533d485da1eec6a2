import BluetoothCore
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The interactive line of `blue shell` (the readline subset a BLE console needs): the terminal in raw mode while a
/// line is typed; printable characters, Backspace, Left/Right, Home/End (Ctrl-A/Ctrl-E), Up/Down through the history,
/// Tab completing the word under the cursor from `completions` (all matches listed when they differ), Ctrl-C clears
/// the line, Ctrl-D on an empty line ends input. Not a Bluetooth type: no Core section applies. Used by one thread at a
/// time (``ShellInput`` reads one line after another), which makes the `@unchecked Sendable` sound.
final class LineEditor: @unchecked Sendable {
    private var history: [String] = []
    private let completions: @Sendable (_ words: [String], _ partial: String) -> [String]

    init(completions: @escaping @Sendable (_ words: [String], _ partial: String) -> [String]) {
        self.completions = completions
    }

    /// Reads one line after `prompt`; nil at the end of input.
    func readLine(prompt: String) -> String? {
        var saved = termios()
        guard tcgetattr(0, &saved) == 0 else { return Swift.readLine() }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
        tcsetattr(0, TCSADRAIN, &raw)
        defer { tcsetattr(0, TCSADRAIN, &saved) }

        var line: [Character] = []
        var cursor = 0
        var historyIndex = history.count
        func redraw() {
            Console.write("\r\u{1B}[2K" + prompt + String(line) + (cursor < line.count ? "\u{1B}[\(line.count - cursor)D" : ""))
        }
        redraw()
        while true {
            guard let byte = readByte() else { return line.isEmpty ? nil : String(line) }
            switch byte {
            case 0x0D, 0x0A:
                Console.write("\r\n")
                let text = String(line)
                if !text.trimmingWhitespace().isEmpty, history.last != text { history.append(text) }
                return text
            case 0x03:
                Console.write("^C\r\n")
                line = []
                cursor = 0
                redraw()
            case 0x04:
                if line.isEmpty {
                    Console.write("\r\n")
                    return nil
                }
            case 0x7F, 0x08:
                if cursor > 0 {
                    line.remove(at: cursor - 1)
                    cursor -= 1
                    redraw()
                }
            case 0x01:
                cursor = 0
                redraw()
            case 0x05:
                cursor = line.count
                redraw()
            case 0x09:
                complete(&line, &cursor, prompt: prompt)
                redraw()
            case 0x1B:
                guard readByte() == 0x5B, let code = readByte() else { continue }
                switch code {
                case 0x41 where historyIndex > 0:
                    historyIndex -= 1
                    line = Array(history[historyIndex])
                    cursor = line.count
                case 0x42 where historyIndex < history.count:
                    historyIndex += 1
                    line = historyIndex == history.count ? [] : Array(history[historyIndex])
                    cursor = line.count
                case 0x43 where cursor < line.count: cursor += 1
                case 0x44 where cursor > 0: cursor -= 1
                case 0x48: cursor = 0
                case 0x46: cursor = line.count
                default: break
                }
                redraw()
            default:
                guard byte >= 0x20 else { continue }
                var bytes = [byte]
                // A UTF-8 sequence: its continuation octets follow.
                let extra = byte >= 0xF0 ? 3 : byte >= 0xE0 ? 2 : byte >= 0xC0 ? 1 : 0
                for _ in 0..<extra { if let next = readByte() { bytes.append(next) } }
                for character in String(decoding: bytes, as: UTF8.self) {
                    line.insert(character, at: cursor)
                    cursor += 1
                }
                redraw()
            }
        }
    }

    /// Completes the word before the cursor: the common prefix of the candidates, listing them when several remain.
    private func complete(_ line: inout [Character], _ cursor: inout Int, prompt: String) {
        let before = String(line[..<cursor])
        var words = before.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        let partial = before.hasSuffix(" ") || before.isEmpty ? "" : (words.popLast() ?? "")
        let candidates = completions(words, partial).filter { $0.lowercased().hasPrefix(partial.lowercased()) }
        guard !candidates.isEmpty else { return }
        var common = candidates[0]
        for candidate in candidates.dropFirst() {
            while !candidate.lowercased().hasPrefix(common.lowercased()) { common.removeLast() }
        }
        let insertion = candidates.count == 1 ? candidates[0] + " " : common
        if insertion.count > partial.count {
            line.replaceSubrange((cursor - partial.count)..<cursor, with: Array(insertion))
            cursor += insertion.count - partial.count
        } else if candidates.count > 1 {
            Console.write("\r\n" + candidates.joined(separator: "  ") + "\r\n")
        }
    }

    private func readByte() -> UInt8? {
        var byte: UInt8 = 0
        while true {
            let count = read(0, &byte, 1)
            if count == 1 { return byte }
            if count < 0, errno == EINTR { continue }
            return nil
        }
    }
}
