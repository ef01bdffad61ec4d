import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RelayClient
import RelayClientCurl
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// The Swift client kit (docs/CLIENT_KITS.md) against real relays through failures the app
/// meets: a cut inside the response head, an expired token, a SIGTERMed relay, `503` with
/// `Retry-After`, a drop in the background, Stop retried on the next base URL, and the
/// terminal client's resume with a token file.
final class ClientKitRecoveryTests: ClientKitTestCase {

    // MARK: - 6. A connection lost inside the response head (Linux FoundationNetworking)

    /// The relay's connection dies while the response head is arriving (a FIN or a RST
    /// after part of the status line or headers). The client must take it as a drop,
    /// resume on the other URL and finish the answer. Run through `stream-relay chat`
    /// in a child process: `chat` streams over libcurl (`CurlTransport`), which reports
    /// such a cut as an ordinary error. (FoundationNetworking's `URLSession` in Swift 6.3
    /// instead stops the whole process with "Transfer completed, but there's no
    /// response" — swift-corelibs-foundation #5285, fixed by PR #5286 — which is why the
    /// in-process random cuts keep FIN cuts out of the head.)
    func testConnectionLostInsideTheResponseHeadIsADrop() throws {
        let relay = try startRelay()
        let reference = referenceText(maxTokens: 60)
        let proxy = try FlakyProxy(upstreamPort: relay.port)
        defer { proxy.stop() }
        _ = try Chat.start(port: proxy.port, token: RelayProcess.token(), maxTokens: 1).readAll()
        let headLength = try XCTUnwrap(find(Array("\r\n\r\n".utf8), in: proxy.responseBytes(0))) + 4
        var crashes: [String] = []
        let head = String(decoding: proxy.responseBytes(0).prefix(headLength), as: UTF8.self)
        // Before `Transfer-Encoding: chunked` has arrived, curl reads the body "until
        // close", so a FIN there completes the transfer without a response head.
        let beforeTE = try XCTUnwrap(head.range(of: "Transfer-Encoding")).lowerBound.utf16Offset(in: head)
        let statusLine = try XCTUnwrap(head.range(of: "\r\n")).upperBound.utf16Offset(in: head)
        let cases: [(Int, Bool)] = [(12, false), (statusLine, false), (beforeTE - 1, false), (headLength - 10, false),
                                    (statusLine, true), (beforeTE - 1, true)]
        for (cut, reset) in cases {
            // `chat` reads the budget first (connection `index`), then POSTs (`index + 1`).
            let index = proxy.connectionCount + 1
            proxy.setPlan { i in i == index ? .cut(afterBytes: cut, reset: reset) : .forward }
            let what = "\(reset ? "RST" : "FIN") after \(cut) of \(headLength) head bytes"
            let outFile = FileManager.default.temporaryDirectory.appendingPathComponent("clientkit-\(UUID().uuidString.prefix(8)).txt")
            defer { try? FileManager.default.removeItem(at: outFile) }
            let p = Process()
            p.executableURL = URL(fileURLWithPath: TestPaths.relayBinary)
            p.arguments = ["chat", "--prompt", "Draft a mutual NDA", "--max-tokens", "60", "--token", RelayProcess.token(),
                           "--url", "http://127.0.0.1:\(proxy.port)", "--url", "http://127.0.0.1:\(relay.port)",
                           "--output", outFile.path]
            p.environment = ChildEnvironment.minimal()
            let err = Pipe()
            p.standardOutput = FileHandle.nullDevice
            p.standardError = err
            try p.run()
            let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            if p.terminationReason == .uncaughtSignal || errText.contains("Fatal error") {
                crashes.append("\(what): killed by signal \(p.terminationStatus): "
                               + (errText.split(separator: "\n").first { $0.contains("Fatal error") }.map(String.init) ?? ""))
                continue
            }
            XCTAssertEqual(p.terminationStatus, 0, "\(what): \(errText.suffix(500))")
            XCTAssertEqual(try String(contentsOf: outFile, encoding: .utf8), reference, what)
            XCTAssertEqual(proxy.responseBytes(index).count, cut, "\(what): the POST was the connection cut")
            XCTAssertTrue(String(decoding: proxy.responseBytes(index), as: UTF8.self).hasPrefix("HTTP/1.1 200"), what)
        }
        XCTAssertEqual(crashes, [], "the client process crashed instead of resuming")
    }

    // MARK: - 7. Token expiry, a draining relay, `stream-relay chat`

    /// A token minted with a 3 s lifetime (relay leeway 0): the relay ends the live
    /// stream with `token_expired`; the provider is asked once with `.expired`, and the
    /// answer resumes from the last id with the fresh token, byte-identical.
    func testExpiredTokenMidStreamIsRefreshedOnceAndTheAnswerResumes() async throws {
        let relay = try startRelay(["RELAY_JWT_LEEWAY": "0", "RELAY_HEARTBEAT": "1s", "RELAY_SIMULATED_TOKENS_PER_SECOND": "150"])
        // 6 s at 150 tokens/s. The relay ends a stream once `now > exp` in whole seconds,
        // checked every heartbeat / 4 (250 ms here): 3–4.25 s after minting.
        let maxTokens = 900
        let reference = referenceText(maxTokens: maxTokens)   // the document, independently
        let sid = "expiry-\(UUID().uuidString.prefix(8))"
        let short = RelayProcess.token(sid: sid, ttl: 3)
        let reasons = Box<[RelayChatClient.TokenReason]>([])
        let c = RelayChatClient(baseURLs: [url(relay.port)], tokenProvider: { why in
            reasons.mutate { $0.append(why) }
            return why == .expired ? RelayProcess.token(sid: sid) : short
        }, transport: URLSessionTransport(configuration: .ephemeral))
        let out = try await collect(c.startChat(request(maxTokens: maxTokens)), timeout: 20)
        XCTAssertEqual(out.completion, .finished(finishReason: "length"), "\(out.statuses)")
        XCTAssertEqual(out.text, reference)
        XCTAssertEqual(reasons.value.filter { $0 == .expired }.count, 1, "asked once for the expiry: \(reasons.value)")
        XCTAssertGreaterThanOrEqual(out.telemetry?.reconnections ?? 0, 1)
        XCTAssertTrue(out.statuses.contains { if case .reconnecting(_, _, let last) = $0 { return last > 0 } else { return false } },
                      "resumed from the last id: \(out.statuses)")
    }

    /// Two relays behind two base URLs; the first is SIGTERMed (drain) mid-answer: its
    /// live connection closes and it refuses new ones. The client resumes on the other
    /// (reconnections rotate) and the answer completes byte-identical, over libcurl and
    /// over URLSession alike.
    func testSIGTERMedRelayBehindTwoBaseURLsResumesOnTheOther() async throws {
        let maxTokens = 400
        let reference = referenceText(maxTokens: maxTokens)   // the document, independently
        for transport in [URLSessionTransport(configuration: .ephemeral) as any RelayTransport, CurlTransport()] {
            let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "300", "RELAY_DRAIN_TIMEOUT": "20s"]
            let a = try startRelay(env)
            let b = try startRelay(env)
            let c = RelayChatClient(baseURLs: [url(a.port), url(b.port)], tokenProvider: { _ in RelayProcess.token(sub: "drain") },
                                    clock: FastClock(), transport: transport)
            let stream = c.startChat(request(maxTokens: maxTokens))
            let terminated = Box(false)
            let out = try await collect(stream, timeout: 25) { u in
                if case .render(let r) = u, !r.text.isEmpty, !terminated.value {
                    terminated.value = true
                    DispatchQueue.global().async { a.terminate() }
                }
            }
            let what = "\(type(of: transport))"
            XCTAssertEqual(out.completion, .finished(finishReason: "length"), "\(what): \(out.statuses)")
            XCTAssertEqual(out.text, reference, what)
            XCTAssertTrue(out.statuses.contains { if case .reconnecting(_, let u, _) = $0 { return u == url(b.port) } else { return false } },
                          "\(what): resumed on the other relay: \(out.statuses)")
            b.terminate()
        }
    }

    /// A relay at its connection cap answers the resume with `503 not_ready` and a
    /// `Retry-After` of R = 1–3 s: a retryable drop — the client waits `max(R, backoff) + jitter`,
    /// rotates to the other base URL and completes the answer.
    func test503WithRetryAfterOnAResumeIsARetryableDrop() async throws {
        let capped = try startRelay(["RELAY_MAX_CONNECTIONS": "1", "RELAY_SIMULATED_TOKENS_PER_SECOND": "50"])
        let open = try Chat.start(port: capped.port, token: RelayProcess.token(sub: "occupant"), maxTokens: 2_000)
        defer { open.close() }
        XCTAssertNotNil(try open.nextEvent(), "the occupant's stream is live")
        let relay = try startRelay()
        let reference = referenceText(maxTokens: 120)
        // FastClock at 2× only: the client lengthens its backoff to 3 s when a response takes
        // over 500 ms of clock time, which at 10× is 50 ms of real time — a cold relay's first
        // POST on a loaded 2-core machine. At 2× that threshold is 250 ms of real time.
        let c = RelayChatClient(baseURLs: [url(relay.port), url(capped.port)], tokenProvider: { _ in RelayProcess.token() },
                                clock: FastClock(factor: 2), transport: URLSessionTransport(configuration: .ephemeral), random: { 0.16 })
        let out = try await collect(c.startChat(request(maxTokens: 120), options: .init(dropAfterEvents: 10)))
        XCTAssertEqual(out.completion, .finished(finishReason: "length"), "\(out.statuses)")
        XCTAssertEqual(out.text, reference)
        let waits = out.statuses.compactMap { s -> [Int64]? in
            if case .waitingToReconnect(let a, let d) = s { return [Int64(a), d] }
            return nil
        }
        XCTAssertEqual(waits.first, [1, 160], "the drop: the full jitter, floor(0.16 × 1001)")
        XCTAssertEqual(waits.count, 2, "\(waits)")
        XCTAssertTrue(waits.count == 2 && waits[1][0] == 2 && [1_040, 2_040, 3_040].contains(waits[1][1]),
                      "then the 503: its Retry-After (1–3 s) + floor(0.16 × 251) = 40 ms: \(waits)")
        let urls = out.statuses.compactMap { s -> URL? in if case .reconnecting(_, let u, _) = s { return u } else { return nil } }
        XCTAssertEqual(urls, [url(capped.port), url(relay.port)], "refused by the capped relay, then back on the other")
    }

    /// The connection drops while the app is in the background (`dropAfterEvents`); the
    /// app comes back 90 s later (clock time; `FastClock` at 100×): no `timedOut` (the
    /// hard timeout counts only foreground, connected time), no reconnection while in
    /// the background, and on foreground the answer resumes from `lastEventId` at once,
    /// byte-identical.
    func testDropInTheBackgroundResumesOnForegroundNinetySecondsLater() async throws {
        let relay = try startRelay()
        let reference = referenceText(maxTokens: 150)
        let clock = FastClock(factor: 100)
        let c = client([relay.port], clock: clock)
        let stream = c.startChat(request(maxTokens: 150), options: .init(dropAfterEvents: 20))
        stream.enterBackground()
        let backgroundAt = clock.nowMs()
        let foregroundAt = Box<Int64?>(nil)
        let early = Box<[ChatUpdate]>([])
        Task {
            // The scenario itself: 90 s of clock time in the background (a clock
            // condition: it ends when the fast clock has moved; `collect` has the deadline).
            guard await pollUntil(timeout: 30, every: 0.01, { clock.nowMs() - backgroundAt >= 90_000 }) else { return }
            foregroundAt.value = clock.nowMs()
            stream.enterForeground()
        }
        let out = try await collect(stream, timeout: 15) { u in
            if foregroundAt.value == nil { early.mutate { $0.append(u) } }
        }
        XCTAssertEqual(out.completion, .finished(finishReason: "length"), "\(out.statuses)")
        XCTAssertEqual(out.text, reference, "no token dropped")
        XCTAssertFalse(early.value.contains { if case .connection(.reconnecting) = $0 { return true } else { return false } },
                       "no reconnection in the background: \(early.value)")
        XCTAssertFalse(early.value.contains { if case .render = $0 { return true } else { return false } }, "nothing rendered in the background")
        XCTAssertTrue(out.statuses.contains(.reconnecting(attempt: 1, url: url(relay.port), lastEventId: 20)), "\(out.statuses)")
        XCTAssertFalse(out.statuses.contains { if case .waitingToReconnect = $0 { return true } else { return false } }, "at once")
    }

    /// Stop while the stream's own base URL (a proxy) resets the `DELETE`: the UI gets
    /// `stopped` at once; the `DELETE` is retried 1 s later (clock time) on the next base
    /// URL, whose relay cancels the generation; the counters show two attempts, delivered.
    func testStopDeleteIsRetriedOnTheNextBaseURL() async throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "200"])
        let proxy = try FlakyProxy(upstreamPort: relay.port)
        defer { proxy.stop() }
        proxy.setPlan { i in i == 0 ? .forward : .acceptAndClose(reset: true) }   // the stream passes, the DELETE is reset
        let c = client([proxy.port, relay.port], clock: FastClock())
        let stream = c.startChat(request(maxTokens: 5_000))
        let out = try await collectStoppingAtFirstText(stream)
        XCTAssertEqual(out.completion, .stopped)
        await c.waitForStopDeliveries()
        let d = c.stopDeliveries
        XCTAssertEqual(d.requested, 1)
        XCTAssertEqual(d.delivered, 1)
        XCTAssertEqual(d.attempts, 2, "reset by the proxy, then accepted by the relay")
        XCTAssertEqual(proxy.connectionCount, 2, "the stream and the first DELETE")
        try assertCancelled(stream.requestId.value)
    }

    /// `stream-relay chat` end to end (libcurl transport): a dropped connection and a
    /// resume (`--drop-after`), and a token file holding a 3 s token that is rewritten
    /// with a fresh one while the answer streams: the relay ends the stream with
    /// `token_expired`, `chat` re-reads the file and resumes; the text equals an
    /// uninterrupted run's.
    func testChatCommandResumesAfterADropAndAnExpiredTokenFromTheTokenFile() throws {
        let relay = try startRelay(["RELAY_JWT_LEEWAY": "0", "RELAY_HEARTBEAT": "1s", "RELAY_SIMULATED_TOKENS_PER_SECOND": "150"])
        let maxTokens = 900   // 6 s: outlives the 3 s token (see the test above)
        let reference = referenceText(maxTokens: maxTokens)   // the document, independently
        let sid = "chat-\(UUID().uuidString.prefix(8))"
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("chat-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let tokenFile = dir.appendingPathComponent("token")
        let outFile = dir.appendingPathComponent("answer.txt")
        try Data((RelayProcess.token(sid: sid, ttl: 3) + "\n").utf8).write(to: tokenFile)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: TestPaths.relayBinary)
        p.arguments = ["chat", "Draft a mutual NDA", "--max-tokens", String(maxTokens), "--token-file", tokenFile.path,
                       "--url", "http://127.0.0.1:\(relay.port)", "--drop-after", "5", "--output", outFile.path]
        p.environment = ChildEnvironment.minimal()
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        let stdout = Box(Data()), stderr = Box(Data())
        let rewritten = Box(false)
        out.fileHandleForReading.readabilityHandler = { h in
            let d = h.availableData
            let total = stdout.mutate { $0.append(d); return $0.count }
            // Text well past event 5 means the resume after the drop is made (with the
            // 3 s token): now the refresher writes a fresh token (atomically, by rename).
            if total > 300, !rewritten.value {
                rewritten.value = true
                try? Data(RelayProcess.token(sid: sid).utf8).write(to: tokenFile, options: .atomic)
            }
        }
        err.fileHandleForReading.readabilityHandler = { h in let d = h.availableData; stderr.mutate { $0.append(d) } }
        try p.run()
        pollUntil(timeout: 30) { !p.isRunning }
        if p.isRunning { p.terminate() }
        p.waitUntilExit()
        out.fileHandleForReading.readabilityHandler = nil
        err.fileHandleForReading.readabilityHandler = nil
        stdout.mutate { $0.append(out.fileHandleForReading.readDataToEndOfFile()) }
        stderr.mutate { $0.append(err.fileHandleForReading.readDataToEndOfFile()) }
        let errText = String(decoding: stderr.value, as: UTF8.self)
        XCTAssertEqual(p.terminationStatus, 0, errText)
        XCTAssertEqual(try String(contentsOf: outFile, encoding: .utf8), reference)
        XCTAssertTrue(errText.contains("resuming after event 5 "), "the drop after 5 events resumed: \(errText)")
        XCTAssertEqual(String(decoding: stdout.value, as: UTF8.self), reference, "standard output is exactly the answer")
        let lines = errText.split(separator: "\n")   // the telemetry JSON is standard error's last line
        let tele = try JSONSerialization.jsonObject(with: Data((lines.last ?? "").utf8)) as? [String: Any]
        XCTAssertGreaterThanOrEqual(tele?["reconnections"] as? Int ?? 0, 2, "the drop and the token expiry: \(errText)")
        XCTAssertEqual(Set(tele?.keys.map { $0 } ?? []), ["requestId", "tokensReceived", "latencyMs", "reconnections"])
    }
}

/// A clock running `factor` times faster than real time, so the client's 1 s backoff
/// and 50 ms render interval take a tenth of that (every rule still applies, in
/// clock time).
struct FastClock: RelayClock {
    var factor: Int64 = 10
    func nowMs() -> Int64 { SystemClock().nowMs() * factor }
    func sleep(ms: Int64) async throws {
        guard ms > 0 else { return }
        // The client's own wait (a backoff, a render interval), `factor` times shorter:
        // the clock it paces itself with, not a test's wait.
        try await SystemClock().sleep(ms: max(1, ms / factor))
    }
}


/// The shared lock box (`RelayCore.LockedBox`) under this file's short name.
typealias Box<T> = LockedBox<T>
