import Foundation
import RelayTestSupport
import RelayUpstream
import XCTest

/// The `stream-relay` command overview, per-command help and version (docs/OPERATIONS.md).
final class CommandLineTests: XCTestCase {
    func relay(_ args: [String], env: [String: String] = [:]) throws -> ToolProcess.Result {
        try ToolProcess.run(TestPaths.relayBinary, args, environment: ChildEnvironment.minimal(env), timeout: 20)
    }

    func testHelpListsEveryCommandOnOneLine() throws {
        for flag in ["--help", "-h", "help"] {
            let r = try relay([flag])
            XCTAssertEqual(r.status, 0, r.output)
            for command in ["serve", "chat", "mint-token", "revoke", "docs", "version", "help"] {
                let lines = r.output.split(separator: "\n").filter { $0.hasPrefix("  \(command) ") || $0 == "  \(command)" }
                XCTAssertEqual(lines.count, 1, "\(flag): one overview line for \(command):\n\(r.output)")
            }
            XCTAssertFalse(r.output.contains("--listen"), "the overview is not serve's option list")
        }
    }

    func testCommandHelpShowsItsOptions() throws {
        let expectations = ["serve": "--listen", "chat": "--url", "mint-token": "--sub", "revoke": "SESSION_ID", "docs": "errors|config", "version": "--version"]
        for (command, option) in expectations {
            for args in [["help", command], [command, "--help"]] {
                let r = try relay(args)
                XCTAssertEqual(r.status, 0, "\(args): \(r.output)")
                XCTAssertTrue(r.output.contains("usage: stream-relay \(command)"), "\(args):\n\(r.output)")
                XCTAssertTrue(r.output.contains(option), "\(args) shows \(option):\n\(r.output)")
            }
        }
        let unknown = try relay(["help", "frobnicate"])
        XCTAssertEqual(unknown.status, 2)
        XCTAssertTrue(unknown.output.contains("unknown command frobnicate"), unknown.output)
    }

    /// `chat` takes the prompt as its one positional argument (the end-to-end chat test in
    /// ClientKitTests streams with it); a second prompt is a usage error, not a guess.
    func testChatRefusesTwoPrompts() throws {
        for args in [["chat", "first", "second"], ["chat", "--prompt", "first", "second"], ["chat", "first", "--prompt", "second"]] {
            let r = try relay(args)
            XCTAssertEqual(r.status, 2, "\(args): \(r.output)")
            XCTAssertTrue(r.output.contains("the prompt is given twice"), "\(args):\n\(r.output)")
        }
        let unknown = try relay(["chat", "--frobnicate", "x"])
        XCTAssertEqual(unknown.status, 2)
        XCTAssertTrue(unknown.output.contains("unexpected argument --frobnicate"), unknown.output)
    }

    /// `docs simulated MODEL` prints the simulated document byte for byte (the browser test's
    /// independent reference); an unknown model is a usage error.
    func testDocsSimulatedPrintsTheDocument() throws {
        for model in ["simulated", "simulated-ar"] {
            let r = try relay(["docs", "simulated", model])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertEqual(r.stdoutData, Data(try XCTUnwrap(SimulatedDocuments.document(forModel: model)).utf8), model)
        }
        let unknown = try relay(["docs", "simulated", "nope"])
        XCTAssertEqual(unknown.status, 2)
        XCTAssertTrue(unknown.stderr.contains("unknown model nope"), unknown.output)
    }

    func testVersionNamesTheCommit() throws {
        let pattern = try NSRegularExpression(pattern: #"^stream-relay \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)$"#)
        var seen = Set<String>()
        for args in [["--version"], ["-V"], ["version"]] {
            let r = try relay(args)
            XCTAssertEqual(r.status, 0, r.output)
            let line = r.output.trimmingCharacters(in: .whitespacesAndNewlines)
            XCTAssertEqual(pattern.numberOfMatches(in: line, range: NSRange(line.startIndex..., in: line)), 1, "\(args): \(line)")
            seen.insert(line)
        }
        XCTAssertEqual(seen.count, 1, "every spelling prints the same line: \(seen)")
        // Built from this checkout (when the suite runs in one): a clean build names HEAD;
        // a build with uncommitted changes names the commit they were made on, HEAD or an
        // ancestor of it (the changes may have been committed since, without a rebuild).
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let git = TestPaths.which("git")
        guard let line = seen.first, let head = try? ToolProcess.run(git, ["-C", root.path, "rev-parse", "--short=12", "HEAD"]),
              head.status == 0 else { return }
        let headCommit = head.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let built = String(line.split(separator: " ").last!.dropLast())  // "0123456789ab)" or "0123456789ab-dirty)"
        if built.hasSuffix("-dirty") {
            let base = String(built.dropLast("-dirty".count))
            let ancestor = try ToolProcess.run(git, ["-C", root.path, "merge-base", "--is-ancestor", base, "HEAD"])
            XCTAssertEqual(ancestor.status, 0, "\(line): \(base) is HEAD (\(headCommit)) or an ancestor of it")
        } else {
            XCTAssertEqual(built, headCommit, "\(line) names HEAD")
        }
    }

    func testInvalidLogSettingsStopServeWithAClearError() throws {
        let r = try relay(["serve"], env: ["RELAY_LOG_LEVEL": "loud", "RELAY_LISTEN": "127.0.0.1:0", "REDIS_URL": "redis://127.0.0.1:1"])
        XCTAssertEqual(r.status, 2, r.output)
        XCTAssertTrue(r.output.contains("RELAY_LOG_LEVEL=loud: expected debug, info, warn or error"), r.output)
        let f = try relay(["serve"], env: ["RELAY_LOG_FORMAT": "xml", "RELAY_LISTEN": "127.0.0.1:0", "REDIS_URL": "redis://127.0.0.1:1"])
        XCTAssertEqual(f.status, 2, f.output)
        XCTAssertTrue(f.output.contains("RELAY_LOG_FORMAT=xml"), f.output)
    }
}
