import Foundation
import Testing

/// `blue --version` names the commit and the build configuration; the shell completion scripts the argument parser
/// generates cover the commands and their options (README "Shell completion and manual").
@Suite struct VersionAndCompletionTests {
    @Test func theVersionNamesTheCommitAndTheBuild() async throws {
        let version = try await BlueProcess.run(["--version"])
        #expect(version.status == 0)
        let pattern = #"^0\.1\.0 \(commit ([0-9a-f]{12}(\+changes)?|unknown), (debug|release) build\)\n$"#
        #expect(version.standardOutput.range(of: pattern, options: .regularExpression) != nil, "\(version.standardOutput)")
        #if DEBUG
        #expect(version.standardOutput.contains("debug build"))
        #endif
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScriptsKnowTheCommands(shell: String) async throws {
        let script = try await BlueProcess.run(["--generate-completion-script", shell])
        #expect(script.status == 0, "\(script.standardError)")
        for word in ["scan", "explore", "subscribe", "serve", "pair", "rssi-min", "timestamps"] {
            #expect(script.standardOutput.contains(word), "\(shell) completion lacks \(word)")
        }
    }
}
