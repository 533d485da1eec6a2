// Writes BuildInfo.swift for `blue --version`: the commit the build comes from (git rev-parse, "+changes" when
// tracked files differ from it, "unknown" outside a git checkout). A prebuild command, so it runs at every build; the
// file is rewritten only when its content changes, so an unchanged tree recompiles nothing.
import Foundation
import PackagePlugin

@main
struct BuildInfo: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let directory = context.pluginWorkDirectoryURL.appending(path: "generated")
        let output = directory.appending(path: "BuildInfo.swift").path
        let root = context.package.directoryURL.path
        let script = """
            mkdir -p '\(directory.path)'
            commit=$(git -C '\(root)' rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
            if [ "$commit" != unknown ] && [ -n "$(git -C '\(root)' status --porcelain --untracked-files=no 2>/dev/null | head -1)" ]; then
                commit="$commit+changes"
            fi
            text="enum BuildInfo { static let commit = \\"$commit\\" }"
            [ "$(cat '\(output)' 2>/dev/null)" = "$text" ] || printf '%s\\n' "$text" > '\(output)'
            """
        return [.prebuildCommand(displayName: "Build info for \(target.name)", executable: URL(fileURLWithPath: "/bin/sh"),
                                 arguments: ["-c", script], outputFilesDirectory: directory)]
    }
}
