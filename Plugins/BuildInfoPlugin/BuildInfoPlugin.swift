import Foundation
import PackagePlugin

/// Records the git commit a target is built from (`stream-relay --version`).
///
/// A prebuild command runs `scripts/build-info.sh` before every build; the script writes
/// `BuildInfo.swift` (an `enum BuildInfo` with `commit`) into the plugin's work directory,
/// and rewrites it only when the commit changes, so an unchanged checkout recompiles
/// nothing. The generated file is never in git. Outside a git checkout (the Docker build
/// copies no `.git`) or without `git` installed, the commit is `"unknown"`.
@main
struct BuildInfoPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "generated")
        let script = context.package.directoryURL.appending(path: "scripts/build-info.sh")
        return [
            .prebuildCommand(
                displayName: "Recording the git commit of \(target.name)",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: [script.path, context.package.directoryURL.path, output.path],
                outputFilesDirectory: output),
        ]
    }
}
