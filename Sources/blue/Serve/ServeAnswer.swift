import BluetoothCore

/// How `blue serve`'s app answers one kind of request (a ``ServeDefinition/Answer`` checked): Android's
/// `BluetoothGattServer.sendResponse` after a while, with an ATT error (Core 5.4 Vol 3 Part F §3.4.1.1), or never,
/// so the client's ATT transaction times out after 30 s (§3.3.3).
struct ServeAnswer: Sendable, Equatable {
    var delay: Duration = .zero
    var error: ATTErrorCode?
    var never = false

    /// At once, with success: what the app does when the definition says nothing.
    static let atOnce = ServeAnswer()

    init() {}

    init(_ answer: ServeDefinition.Answer, context: String) throws(CLIFailure) {
        let seconds = answer.delay ?? 0
        guard seconds >= 0, seconds <= 60 else { throw CLIFailure(.usage, "\(context).delay: give 0...60 seconds") }
        never = answer.never ?? false
        guard !never || (answer.delay == nil && answer.error == nil) else {
            throw CLIFailure(.usage, "\(context): \"never\" answers nothing, so it takes no delay or error")
        }
        delay = .milliseconds(Int64((seconds * 1000).rounded()))
        if let code = answer.error {
            guard code != 0 else { throw CLIFailure(.usage, "\(context).error: 0 is not an ATT error") }
            error = ATTErrorCode(code)
        }
    }

    /// How the answer reads in the server's output.
    var summary: String {
        if never { return "never answered (the client's ATT transaction times out after 30 s)" }
        let outcome = error.map { "error \($0)" } ?? "success"
        return delay == .zero ? outcome : "\(outcome) after \(delay)"
    }
}
