import Foundation
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// `stream-relay chat` as a child process, its output as a script or a pipe sees it
/// (no terminal): standard output holds exactly the answer, across a cut connection;
/// an unreachable relay is named with its URL and cause; Ctrl-C (SIGINT) ends the
/// process within a bound and says whether the relay confirmed the stop.
final class ChatCommandTests: RelayTestCase {
    /// What a finished `chat` process left.
    struct Run {
        var status: Int32
        var stdout: Data
        var stderr: String
        var exited: Bool
        /// Seconds from the SIGINT (when one was sent) to the exit.
        var afterInterrupt: Double?
    }

    /// Runs `stream-relay chat args`; with `interruptAfterText`, sends SIGINT once the first
    /// answer text is on stdout. Waits at most `timeout` s for the exit (then kills it).
    func chat(_ args: [String], interruptAfterText: Bool = false, timeout: Double = 30) throws -> Run {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: TestPaths.relayBinary)
        p.arguments = ["chat"] + args
        p.environment = ChildEnvironment.minimal()
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        let stdout = Box(Data()), stderr = Box(Data())
        out.fileHandleForReading.readabilityHandler = { h in let d = h.availableData; stdout.mutate { $0.append(d) } }
        err.fileHandleForReading.readabilityHandler = { h in let d = h.availableData; stderr.mutate { $0.append(d) } }
        try p.run()
        var interruptedAt: Date?
        if interruptAfterText {
            if pollUntil(timeout: timeout, { !stdout.value.isEmpty || !p.isRunning }), p.isRunning {
                interruptedAt = Date()
                kill(p.processIdentifier, SIGINT)
            }
        }
        let exited = pollUntil(timeout: timeout) { !p.isRunning }
        let exitedAt = Date()
        if !exited { p.terminate() }
        p.waitUntilExit()
        out.fileHandleForReading.readabilityHandler = nil
        err.fileHandleForReading.readabilityHandler = nil
        stdout.mutate { $0.append(out.fileHandleForReading.readDataToEndOfFile()) }
        stderr.mutate { $0.append(err.fileHandleForReading.readDataToEndOfFile()) }
        return Run(status: p.terminationStatus, stdout: stdout.value, stderr: String(decoding: stderr.value, as: UTF8.self),
                   exited: exited, afterInterrupt: interruptedAt.map { exitedAt.timeIntervalSince($0) })
    }

    /// The answer streams through a proxy that cuts the POST's connection after 3,000
    /// response bytes; `chat` resumes on the relay's own URL. Standard output (a pipe) is
    /// byte for byte the answer — no status line, no line break added, no telemetry — and
    /// standard error holds the status lines, the telemetry JSON last.
    func testStdoutIsExactlyTheAnswerAcrossACutConnection() throws {
        let relay = try startRelay()
        let proxy = try FlakyProxy(upstreamPort: relay.port)
        defer { proxy.stop() }
        proxy.setPlan { i in i == 1 ? .cut(afterBytes: 3_000, reset: false) : .forward }   // 0: GET /api/budget, 1: POST
        let r = try chat(["Draft a mutual NDA", "--max-tokens", "300", "--token", RelayProcess.token(),
                          "--url", "http://127.0.0.1:\(proxy.port)", "--url", "http://127.0.0.1:\(relay.port)"])
        XCTAssertTrue(r.exited, r.stderr)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(String(decoding: r.stdout, as: UTF8.self), referenceText(maxTokens: 300), "stdout is the answer, exactly")
        XCTAssertTrue(r.stderr.contains("⟳ connection lost"), r.stderr)
        XCTAssertTrue(r.stderr.contains("⟳ resuming after event "), r.stderr)
        let lastLine = r.stderr.split(separator: "\n").last.map(String.init) ?? ""
        let telemetry = try JSONSerialization.jsonObject(with: Data(lastLine.utf8)) as? [String: Any]
        XCTAssertGreaterThanOrEqual(telemetry?["reconnections"] as? Int ?? 0, 1, r.stderr)
    }

    /// A URL nothing listens on: `chat` says it cannot reach the relay at that URL because
    /// the connection was refused (not "connection lost … resuming"), and exits non-zero
    /// after its few retries.
    func testRefusedRelayIsNamedWithItsURLAndExitsNonZero() throws {
        let (fd, port) = try LoopbackSocket.listen(backlog: 1)
        close(fd)   // the port is free now: a connect is refused
        let url = "http://127.0.0.1:\(port)"
        let r = try chat(["hi", "--token", "x", "--url", url], timeout: 30)
        XCTAssertTrue(r.exited, "chat did not exit: \(r.stderr)")
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertTrue(r.stdout.isEmpty)
        XCTAssertTrue(r.stderr.contains("cannot reach the relay at \(url): connection refused"), r.stderr)
        XCTAssertTrue(r.stderr.contains("✗ cannot reach the relay at \(url)"), "the final line says so too: \(r.stderr)")
        XCTAssertFalse(r.stderr.contains("connection lost"), r.stderr)
        XCTAssertFalse(r.stderr.contains("could not resume"), r.stderr)
    }

    /// Ctrl-C while the relay answers the DELETE: `chat` prints "stopped", that the relay
    /// confirmed the stop, and exits 130; the stream ends `cancelled`.
    func testInterruptWithAnAnsweredDeleteSaysConfirmed() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "100"])
        let r = try chat(["Draft a mutual NDA", "--max-tokens", "3000", "--token", RelayProcess.token(),
                          "--url", "http://127.0.0.1:\(relay.port)"], interruptAfterText: true)
        XCTAssertNotNil(r.afterInterrupt, r.stderr)
        XCTAssertTrue(r.exited, r.stderr)
        XCTAssertEqual(r.status, 130, r.stderr)
        XCTAssertTrue(r.stderr.contains("■ stopped"), r.stderr)
        XCTAssertTrue(r.stderr.contains("stop confirmed by the relay"), r.stderr)
    }

    /// Ctrl-C when no relay answers the DELETE (the stream's URL resets it, the other URL
    /// never completes a connection, so each attempt would wait out its 10 s timeout):
    /// `chat` still exits within a few seconds, says the stop was not confirmed and what
    /// the relay does with an answer nobody stops.
    func testInterruptWithAnUnansweredDeleteExitsPromptlyAndSaysSo() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "100"])
        let proxy = try FlakyProxy(upstreamPort: relay.port)
        defer { proxy.stop() }
        proxy.setPlan { i in i <= 1 ? .forward : .acceptAndClose(reset: true) }   // budget and POST pass; DELETEs are reset
        let blackHole = try BlackHoleListener()
        let r = try chat(["Draft a mutual NDA", "--max-tokens", "3000", "--token", RelayProcess.token(),
                          "--url", "http://127.0.0.1:\(proxy.port)", "--url", "http://127.0.0.1:\(blackHole.port)"],
                         interruptAfterText: true)
        let after = try XCTUnwrap(r.afterInterrupt, r.stderr)
        XCTAssertTrue(r.exited, r.stderr)
        XCTAssertEqual(r.status, 130, r.stderr)
        XCTAssertLessThan(after, 8, "exit after SIGINT took \(after) s: \(r.stderr)")
        XCTAssertTrue(r.stderr.contains("■ stopped"), r.stderr)
        XCTAssertTrue(r.stderr.contains("! stop not confirmed"), r.stderr)
        XCTAssertTrue(r.stderr.contains("keeps generating this answer until it ends by itself"), r.stderr)
        XCTAssertTrue(r.stderr.contains("charges every token"), r.stderr)
    }
    /// On a terminal (a pty from script(1), 60 columns): the status line of the resume after
    /// a drop at event 150 (mid-line in the draft: "6. Return and ", and the text before the
    /// drop is on screen by then, a second after it) erases the answer's unfinished line,
    /// stands in its place, and the unfinished line is written again below it, so the line
    /// reads whole after the status lines.
    func testOnATerminalTheUnfinishedLineMovesBelowTheStatusLine() throws {
        let script = "/usr/bin/script"
        guard FileManager.default.isExecutableFile(atPath: script) else { throw XCTSkip("no script(1)") }
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "400"])
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("chat-tty-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let typescript = dir.appendingPathComponent("typescript")
        let command = "stty cols 60 rows 40; '\(TestPaths.relayBinary)' chat 'Draft a mutual NDA' --max-tokens 400 --drop-after 150 "
            + "--token '\(RelayProcess.token())' --url http://127.0.0.1:\(relay.port)"
        let r = try ToolProcess.run(script, ["-qec", command, typescript.path], environment: ChildEnvironment.minimal(), timeout: 30)
        XCTAssertEqual(r.status, 0, r.stderr)
        let shown = String(decoding: try Data(contentsOf: typescript), as: UTF8.self)
        let status = try XCTUnwrap(shown.range(of: "\u{1B}[J⟳ resuming after event 150"), "the status line erases first: \(shown.suffix(2000))")
        let before = shown[..<status.lowerBound]
        let erase = try XCTUnwrap(before.range(of: "\r", options: .backwards))   // CR, then CUU when the line wrapped
        let unfinished = before[..<erase.lowerBound].components(separatedBy: "\r\n").last ?? ""
        XCTAssertFalse(unfinished.isEmpty, "the drop came mid-line (event 150 of the draft)")
        let after = shown[status.upperBound...]
        let statusEnd = try XCTUnwrap(after.range(of: "\r\n"))
        XCTAssertTrue(after[statusEnd.upperBound...].hasPrefix(unfinished), "the unfinished line is written again below the status line")
    }
}
