import Dispatch
import Testing

/// The real-stack fixture's step waits (`RealStackSupport.swift`): a step that happens returns at once, one that
/// does not fails at its own limit with a message naming the step and what was seen.
@Suite struct RealStackSupportTests {
    @Test func aStepThatHappensEndsTheWait() async throws {
        let flag = LockedBox(false)
        DispatchQueue.main.asyncAfter(deadline: .now() + 0.05) { flag.value = true }
        let start = ContinuousClock.now
        // Ends when the flag is set, not at its limit (a limit far beyond what a starved machine needs).
        try await waitFor("the flag", within: .seconds(120), until: { flag.value }, seen: { "flag \(flag.value)" })
        #expect(ContinuousClock.now - start < .seconds(100))
        #expect(await expectStep("the flag again", within: .milliseconds(50), until: { flag.value }, seen: { "" }))
    }

    @Test func aStepThatTimesOutSaysWhichAndWhatWasSeen() async {
        let tries = LockedBox(0)
        var thrown = false
        await withKnownIssue {
            do {
                try await waitFor("the impossible step", within: .milliseconds(100), until: {
                    tries.value += 1
                    return false
                }, seen: { "nothing after \(tries.value > 1 ? "several tries" : "one try")" })
            } catch {
                thrown = true
            }
        } matching: { issue in
            let text = issue.comments.map(\.rawValue).joined(separator: " ")
            return text.contains("step 'the impossible step' timed out") && text.contains("seen: nothing after several tries")
        }
        #expect(thrown, "the step's timeout ends the test")
        var held = true
        await withKnownIssue {
            held = await expectStep("the other impossible step", within: .milliseconds(50), until: { false }, seen: { "no" })
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("step 'the other impossible step' timed out")
        }
        #expect(!held)
    }
}
