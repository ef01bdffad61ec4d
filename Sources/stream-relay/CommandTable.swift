import Foundation
import RelayServer

/// The `stream-relay` subcommands, their one-line summaries, help and entry points, and
/// the top-level flags (`--help`, `--version`). One table drives the overview, `help
/// <command>` and the dispatch, so a command cannot be runnable yet missing from the help.
enum CommandTable {
    /// The release this source tree is (semantic versioning).
    static let version = "0.1.0"

    /// One subcommand.
    struct Subcommand: Sendable {
        /// What the user types after `stream-relay`.
        let name: String
        /// Argument synopsis shown in the overview.
        let synopsis: String
        /// One line for the overview.
        let summary: String
        /// Runs the command with the arguments after its name; returns the exit status.
        /// On the main thread: child processes (the private redis-server) inherit the
        /// spawning thread's signal mask, and pool threads block SIGTERM.
        let run: @MainActor @Sendable ([String]) async -> Int32
    }

    static let commands: [Subcommand] = [
        Subcommand(name: "serve", synopsis: "[options]", summary: "run a relay instance (the default command)",
                   run: { ServeCommand.run(arguments: $0) }),
        Subcommand(name: "chat", synopsis: "[options]", summary: "stream an answer from a relay in the terminal",
                   run: { await ChatCommand.run(arguments: $0) }),
        Subcommand(name: "mint-token", synopsis: "--sub USER --sid SESSION", summary: "sign a development JWT",
                   run: { MintTokenCommand.run(arguments: $0) }),
        Subcommand(name: "revoke", synopsis: "SESSION_ID", summary: "revoke a session on every relay (talks to Redis)",
                   run: { RevokeCommand.run(arguments: $0) }),
        Subcommand(name: "docs", synopsis: "errors|config", summary: "print a docs/ table generated from the code",
                   run: { DocsCommand.run(arguments: $0) }),
        Subcommand(name: "version", synopsis: "", summary: "print the version and the commit it was built from",
                   run: { versionCommand($0) }),
        Subcommand(name: "help", synopsis: "[COMMAND]", summary: "show this overview, or a command's options",
                   run: { await help($0) }),
    ]

    /// `stream-relay 0.1.0 (commit 0123456789ab)`; the commit is "unknown" when built
    /// outside a git checkout.
    static var versionLine: String { "stream-relay \(version) (commit \(BuildInfo.commit))" }

    /// `version` (also `--version`, `-V`): prints `versionLine`.
    static func versionCommand(_ arguments: [String]) -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print("usage: stream-relay version   (also --version, -V)\nPrints the version and the commit it was built from.")
            return 0
        }
        guard arguments.isEmpty else {
            printError("version: unexpected \(arguments[0])\n")
            return 2
        }
        print(versionLine)
        return 0
    }

    /// The overview printed by `stream-relay --help`.
    static var overview: String {
        let width = commands.map { $0.name.count + ($0.synopsis.isEmpty ? 0 : $0.synopsis.count + 1) }.max() ?? 0
        var lines = ["usage: stream-relay [COMMAND] [options]", "", "commands:"]
        for c in commands {
            let head = c.synopsis.isEmpty ? c.name : c.name + " " + c.synopsis
            lines.append("  " + head + String(repeating: " ", count: width - head.count + 3) + c.summary)
        }
        lines += [
            "",
            "  --help, -h       this overview (`stream-relay COMMAND --help` for a command's options)",
            "  --version, -V    print the version and the commit it was built from",
            "",
            "With no command, or options only, stream-relay runs `serve`.",
        ]
        return lines.joined(separator: "\n")
    }

    /// `help [COMMAND]`: the overview, or the command's own `--help`.
    @MainActor
    static func help(_ arguments: [String]) async -> Int32 {
        guard let name = arguments.first else {
            print(overview)
            return 0
        }
        guard let c = commands.first(where: { $0.name == name }), name != "help" else {
            if name == "help" { print(overview); return 0 }
            printError("stream-relay: unknown command \(name)\n\(overview)\n")
            return 2
        }
        return await c.run(["--help"])
    }

    /// Parses the whole command line and runs what it names; returns the exit status.
    @MainActor
    static func main(_ arguments: [String]) async -> Int32 {
        var args = arguments
        switch args.first {
        case "--help", "-h": print(overview); return 0
        case "--version", "-V": print(versionLine); return 0
        default: break
        }
        // No command, or options first: serve (so `stream-relay --listen :8080` still works).
        let name = args.first.flatMap { $0.hasPrefix("-") ? nil : $0 } ?? "serve"
        if args.first == name { args.removeFirst() }
        guard let c = commands.first(where: { $0.name == name }) else {
            printError("stream-relay: unknown command \(name)\n\(overview)\n")
            return 2
        }
        if c.name == "serve", !args.contains("--help"), !args.contains("-h") {
            do {
                try Log.configure(environment: ProcessInfo.processInfo.environment)
            } catch {
                printError("stream-relay: \(error)\n")
                return 2
            }
        }
        return await c.run(args)
    }
}
