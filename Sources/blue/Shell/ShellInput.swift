import FoundationEssentials
import SystemInterface
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The lines `blue shell` runs, read on a thread of their own (never a task's, which a blocking read would hold):
/// from the ``LineEditor`` with a prompt on a terminal, else one command a line from standard input. The next prompt
/// waits until the previous command finished (``next(prompt:)``), so command output never lands in the middle of it.
final class ShellInput: Sendable {
    private let editor: LineEditor?

    init(interactive: Bool, completions: @escaping @Sendable (_ words: [String], _ partial: String) -> [String]) {
        editor = interactive ? LineEditor(completions: completions) : nil
    }

    /// The next line (nil at the end of input), read on a new thread.
    func next(prompt: String) async -> String? {
        await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            let editor = editor
            let started = DetachedThread.spawn(named: "blue.shell-input") {
                let line = editor.map { $0.readLine(prompt: prompt) } ?? Swift.readLine(strippingNewline: true)
                continuation.resume(returning: line)
            }
            if !started { continuation.resume(returning: nil) }  // no thread to read on: the input ends
        }
    }
}
