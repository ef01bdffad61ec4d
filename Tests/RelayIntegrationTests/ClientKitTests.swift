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

/// The Swift client kit (docs/CLIENT_KITS.md): `RelayClient` against real
/// `stream-relay serve` processes and a
/// real Redis — cuts at random points (client-side drops and real TCP failures through
/// `FlakyProxy`), three failed reconnections → `needsResume`, stop → `DELETE`, a
/// revoked session, and the budget pill from `GET /api/budget`.
final class ClientKitTests: ClientKitTestCase {
    // MARK: - 1. Fifty cuts at random points

    /// 50 runs against two relay processes, alternating the first instance; each cut
    /// once at a random point, then resumed by the client on the *other* instance.
    /// Even runs of each pair cut inside the client (`dropAfterEvents`, a random event
    /// index); the others cut the TCP connection in `FlakyProxy` after a random number
    /// of response bytes (mid-head, mid-chunk, mid-event, mid-UTF-8 alike), with a FIN
    /// or a RST. Every run must end with exactly the text of an uninterrupted run, each
    /// delta received exactly once, and at least one reconnection in the telemetry.
    ///
    /// The client runs on a clock 10× faster than real time so the 1 s backoff costs
    /// 100 ms (`FastClock`); `CLIENTKIT_SEED=<n>` replays a failing seed.
    func testFiftyRandomCutsEndByteIdenticalAcrossTwoRelays() async throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "2000"]
        let relays = [try startRelay(env), try startRelay(env)]
        let maxTokens = 300
        let referenceEvents = try Chat.start(port: relays[0].port, token: RelayProcess.token(sub: "reference"),
                                             maxTokens: maxTokens).readAll()
        let reference = Chat.text(referenceEvents)
        XCTAssertEqual(reference, referenceText(maxTokens: maxTokens), "the relay's uninterrupted text is the document's own")
        let deltaCount = referenceEvents.count - 1
        guard case .done(let finishReason, _, _)? = try? StreamEvent(json: referenceEvents.last!.data) else {
            return XCTFail("reference ends with done")
        }
        let proxies = [try FlakyProxy(upstreamPort: relays[0].port), try FlakyProxy(upstreamPort: relays[1].port)]
        defer { proxies.forEach { $0.stop() } }

        // Where `done` starts in a whole response through the proxy: cuts stay before it.
        let probeClient = client([proxies[0].port], clock: FastClock())
        let probe = try await collect(probeClient.startChat(request(maxTokens: maxTokens)))
        XCTAssertEqual(probe.text, reference)
        let probeBytes = proxies[0].responseBytes(0)
        let doneAt = try XCTUnwrap(find(Array("\"type\":\"done\"".utf8), in: probeBytes), "done in the proxied response")
        let headLength = try XCTUnwrap(find(Array("\r\n\r\n".utf8), in: probeBytes)) + 4
        // Chunk framing varies with how the relay batches writes: keep a margin.
        let maxCut = max(headLength + 1, doneAt - 2_500)

        let seed = ProcessInfo.processInfo.environment["CLIENTKIT_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64(UInt32.max))
        var rng = SplitMix64(seed: seed)
        print("ClientKitTests cuts: seed \(seed) (CLIENTKIT_SEED=\(seed) replays), \(deltaCount) deltas, cut bytes < \(maxCut)")
        let clock = FastClock()
        let started = Date()
        for run in 0..<50 {
            let first = run % 2                 // alternate the instance of the first connection
            let other = 1 - first
            let viaProxy = (run / 2) % 2 == 1
            let tele = Box<[TelemetryRecord]>([])
            let stream: RelayStream
            let what: String
            let expectedReconnectURL: URL
            if viaProxy {
                // A real network failure: the proxy cuts the TCP connection.
                let reset = rng.next() % 2 == 0
                // A FIN inside the response head can crash FoundationNetworking (see
                // testConnectionLostInsideTheResponseHeadIsADrop): FIN cuts start in the body.
                let low = reset ? 1 : headLength + 1
                let cut = rng.next() % 5 == 0 ? Int.random(in: low...(headLength + 300), using: &rng)
                                               : Int.random(in: low...maxCut, using: &rng)
                let index = proxies[first].connectionCount   // the next connection it accepts
                proxies[first].setPlan { i in i == index ? .cut(afterBytes: cut, reset: reset) : .forward }
                what = "proxy \(reset ? "RST" : "FIN") after \(cut) bytes"
                let c = client([proxies[first].port, relays[other].port], clock: clock, telemetry: { r in tele.mutate { $0.append(r) } })
                stream = c.startChat(request(maxTokens: maxTokens))
                expectedReconnectURL = url(relays[other].port)
            } else {
                let n = Int.random(in: 1...deltaCount, using: &rng)
                what = "dropAfterEvents \(n)"
                let c = client(relays.map(\.port), clock: clock, telemetry: { r in tele.mutate { $0.append(r) } })
                stream = c.startChat(request(maxTokens: maxTokens), options: .init(dropAfterEvents: n, firstURLIndex: first))
                expectedReconnectURL = url(relays[other].port)
            }
            let context = "seed \(seed) run \(run): first instance \(first), \(what), request \(stream.requestId)"
            if ProcessInfo.processInfo.environment["CLIENTKIT_VERBOSE"] != nil { FileHandle.standardError.write(Data((context + "\n").utf8)) }
            let out: Outcome
            do {
                out = try await collect(stream, timeout: 20)
            } catch {
                XCTFail("\(context): \(error)")
                continue
            }
            XCTAssertEqual(out.completion, .finished(finishReason: finishReason.rawValue), context)
            XCTAssertEqual(out.text, reference, "\(context): text byte-identical to an uninterrupted run")
            XCTAssertEqual(Array(out.text.utf8), Array(reference.utf8), context)
            XCTAssertGreaterThanOrEqual(out.telemetry?.reconnections ?? 0, 1, "\(context): telemetry counts the reconnection")
            // A resume from before the relay's retained window (200 events) gets the missing
            // events back from the text, each as it was streamed.
            XCTAssertLessThanOrEqual(out.telemetry?.tokensReceived ?? .max, deltaCount, context)
            XCTAssertGreaterThan(out.telemetry?.tokensReceived ?? 0, 0, context)
            XCTAssertEqual(tele.value.count, 1, "\(context): one telemetry record")
            XCTAssertEqual(tele.value.first, out.telemetry, context)
            XCTAssertTrue(out.statuses.contains { s in
                if case .reconnecting(_, let u, _) = s { return u == expectedReconnectURL }
                return false
            }, "\(context): resumed on the other instance; statuses \(out.statuses)")
        }
        print(String(format: "ClientKitTests cuts: 50 runs in %.1f s", Date().timeIntervalSince(started)))
    }

    // MARK: - 2. Three drops in a row → needsResume → resume()

    /// The first connection is cut after some events; the three reconnections then
    /// fail three different ways (RST on accept, FIN on accept, a 200 head and no body).
    /// The answer ends `needsResume` after exactly three 1 s waits (real clock), and
    /// `resume()` re-sends the whole request and completes it.
    func testThreeDropsInARowNeedResumeThenResumeCompletes() async throws {
        let relay = try startRelay()
        let reference = referenceText(maxTokens: 200)
        let proxy = try FlakyProxy(upstreamPort: relay.port)
        defer { proxy.stop() }
        proxy.setPlan { i in
            switch i {
            case 0: return .cut(afterBytes: 2_000, reset: false)
            case 1: return .acceptAndClose(reset: true)
            case 2: return .acceptAndClose(reset: false)
            case 3: return .cutAfterHead(reset: false)
            default: return .forward
            }
        }
        let tele = Box<[TelemetryRecord]>([])
        let tokens = Box(0)
        let c = RelayChatClient(baseURLs: [url(proxy.port)], token: { tokens.mutate { $0 += 1 }; return RelayProcess.token() },
                                telemetry: { r in tele.mutate { $0.append(r) } }, configuration: .ephemeral, random: { 0 })
        let stream = c.startChat(request(maxTokens: 200))
        let t0 = Date()
        let out = try await collect(stream, timeout: 15)
        let elapsed = Date().timeIntervalSince(t0)
        XCTAssertEqual(out.completion, .needsResume, "statuses: \(out.statuses)")
        XCTAssertEqual(stream.completion, .needsResume)
        XCTAssertTrue(out.completion?.offersRetry == true)
        XCTAssertEqual(proxy.connectionCount, 4, "the request and three reconnections")
        XCTAssertEqual(tokens.value, 4, "a token per connection")
        let waits = out.statuses.compactMap { s -> [Int64]? in
            if case .waitingToReconnect(let a, let d) = s { return [Int64(a), d] }
            return nil
        }
        XCTAssertEqual(waits, [[1, 0], [2, 1_000], [3, 1_000]], "r = 0: the first at once (full jitter), then the backoff")
        let resumedFrom = out.statuses.compactMap { s -> UInt64? in
            if case .reconnecting(_, _, let last) = s { return last }
            return nil
        }
        XCTAssertEqual(resumedFrom.count, 3)
        XCTAssertEqual(Set(resumedFrom).count, 1, "every attempt resumes from the same event: \(resumedFrom)")
        XCTAssertGreaterThan(resumedFrom.first ?? 0, 0, "events arrived before the cut")
        XCTAssertGreaterThanOrEqual(elapsed, 1.9, "waits of 0, 1 and 1 s")
        XCTAssertLessThan(elapsed, 8)
        XCTAssertTrue(reference.hasPrefix(out.text), "the partial text is a prefix of the answer")
        XCTAssertEqual(out.telemetry?.reconnections, 3)

        let again = stream.resume()
        XCTAssertNotEqual(again.requestId, stream.requestId, "a manual resume is a new request")
        let out2 = try await collect(again, timeout: 15)
        XCTAssertEqual(out2.completion, .finished(finishReason: "length"))
        XCTAssertEqual(out2.text, reference)
        XCTAssertEqual(out2.telemetry?.reconnections, 4, "the re-sent request counts as a reconnection")
        XCTAssertEqual(proxy.connectionCount, 5)
        XCTAssertEqual(tele.value.map(\.requestId), [stream.requestId.value, again.requestId.value])
        XCTAssertFalse(out2.statuses.contains { if case .reconnecting = $0 { return true } else { return false } })
    }

    /// Nothing listens behind the other base URL: connection refused counts as a
    /// drop like any other, and the rotation reaches the live relay again.
    func testRefusedConnectionsRotateToALiveInstance() async throws {
        let relay = try startRelay()
        let reference = referenceText(maxTokens: 120)
        let dead = try FlakyProxy(upstreamPort: relay.port)
        dead.stop()   // its port is now closed
        let c = client([relay.port, dead.port], clock: FastClock())
        let out = try await collect(c.startChat(request(maxTokens: 120), options: .init(dropAfterEvents: 10)))
        XCTAssertEqual(out.text, reference)
        XCTAssertEqual(out.telemetry?.reconnections, 2, "refused by the dead port, then back on the relay: \(out.statuses)")
        XCTAssertEqual(out.completion, .finished(finishReason: "length"))
    }

    /// A load balancer in front of a relay that is down (a plain nginx, relay A's port
    /// closed) answers `502 Bad Gateway` with its HTML page: a retryable drop, so the
    /// `POST` goes to the next base URL (relay B) after the backoff and the answer
    /// completes — over URLSession and libcurl alike.
    func testA502FromALoadBalancerWhoseRelayIsDownMovesToTheNextBaseURL() async throws {
        try XCTSkipUnless(NginxProcess.isAvailable, "nginx is not installed")
        let relay = try startRelay()
        let reference = referenceText(maxTokens: 120)
        let dead = try FlakyProxy(upstreamPort: relay.port)
        dead.stop()   // its port is now closed: relay A is down
        let lb = try NginxProcess(plainProxyTo: dead.port)
        defer { lb.stop() }
        for transport in [URLSessionTransport(configuration: .ephemeral) as any RelayTransport, CurlTransport()] {
            let c = RelayChatClient(baseURLs: [url(lb.port), url(relay.port)], tokenProvider: { _ in RelayProcess.token(sub: "lb") },
                                    clock: FastClock(), transport: transport)
            let out = try await collect(c.startChat(request(maxTokens: 120)))
            let what = "\(type(of: transport)): \(out.statuses)"
            XCTAssertEqual(out.completion, .finished(finishReason: "length"), what)
            XCTAssertEqual(out.text, reference, what)
            XCTAssertTrue(out.statuses.contains { if case .reconnecting(_, let u, 0) = $0 { return u == url(relay.port) } else { return false } },
                          "the POST went to the next base URL: \(what)")
        }
        XCTAssertTrue(lb.accessLog.contains("\" 502 "), "the load balancer answered 502: \(lb.accessLog.suffix(500))")
    }

    // MARK: - 3. stop() → DELETE → generation cancelled

    /// Stop mid-answer: the stream completes as `stopped` without any reconnection,
    /// the relay records `cancelled`, and the generation ends (no more events).
    func testStopSendsDeleteAndEndsTheGeneration() async throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "200"])
        let c = client([relay.port])
        let stream = c.startChat(request(maxTokens: 5_000))
        let id = stream.requestId.value
        let out = try await collectStoppingAtFirstText(stream)
        XCTAssertEqual(out.completion, .stopped)
        XCTAssertEqual(stream.completion, .stopped)
        XCTAssertFalse(out.statuses.contains { if case .reconnecting = $0 { return true } else { return false } },
                       "a stop is not a drop: \(out.statuses)")
        try assertCancelled(id)
        XCTAssertLessThan(out.telemetry?.tokensReceived ?? .max, 1_000)
    }

    /// Stop while waiting to reconnect after a drop: no reconnection, and the DELETE
    /// still reaches the relay, which cancels the generation.
    func testStopWhileWaitingToReconnectStillCancels() async throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "200"])
        let c = client([relay.port])
        let stream = c.startChat(request(maxTokens: 5_000), options: .init(dropAfterEvents: 5))
        let out = try await collect(stream, timeout: 10) { u in
            if case .connection(.waitingToReconnect) = u { stream.stop() }
        }
        XCTAssertEqual(out.completion, .stopped)
        XCTAssertFalse(out.statuses.contains { if case .reconnecting = $0 { return true } else { return false } },
                       "stopped before the reconnection: \(out.statuses)")
        XCTAssertEqual(out.telemetry?.reconnections, 0)
        try assertCancelled(stream.requestId.value)
    }

    // MARK: - 4. Revoked session

    /// Revocation while streaming: one `error` update (401 `session_revoked`), no
    /// reconnection attempt, the stream ends within a few seconds. The relay's `error`
    /// event repeats the seq of the last delta (`id: 9` after `id: 9`, so a resume with a
    /// fresh token skips nothing); the client must still take it as terminal.
    func testRevokedSessionMidStreamFailsWithoutReconnecting() async throws {
        let relay = try startRelay(["RELAY_ADMIN_KEY": Self.adminKey, "RELAY_SIMULATED_TOKENS_PER_SECOND": "100"])
        let other = try startRelay(["RELAY_ADMIN_KEY": Self.adminKey, "RELAY_SIMULATED_TOKENS_PER_SECOND": "100"])
        let sid = "revoked-\(UUID().uuidString.prefix(8))"
        let tokens = Box(0)
        let c = RelayChatClient(baseURLs: [url(relay.port), url(other.port)],
                                token: { tokens.mutate { $0 += 1 }; return RelayProcess.token(sid: sid) }, configuration: .ephemeral)
        let stream = c.startChat(request(maxTokens: 3_000))
        let revokedAt = Box<Date?>(nil)
        let out = try await collect(stream, timeout: 10) { u in
            if case .render(let r) = u, !r.text.isEmpty, revokedAt.value == nil {
                revokedAt.value = Date()
                let status = try? Self.revoke(other, sid: sid)   // revoked on the *other* instance
                XCTAssertEqual(status, 202)
            }
        }
        let t = try XCTUnwrap(revokedAt.value)
        guard case .failed(401, "session_revoked", _)? = out.completion else {
            return XCTFail("fails with the 401 session_revoked error event, got \(String(describing: out.completion)); \(out.statuses)")
        }
        XCTAssertFalse(out.completion!.offersRetry)
        XCTAssertLessThan(Date().timeIntervalSince(t), 5, "ends promptly (pub/sub; no reconnect or backoff of 1 s × 3)")
        XCTAssertFalse(out.statuses.contains { s in
            switch s {
            case .waitingToReconnect, .reconnecting: return true
            default: return false
            }
        }, "no reconnection after the error: \(out.statuses)")
        XCTAssertEqual(tokens.value, 1, "one connection only")
        XCTAssertEqual(out.telemetry?.reconnections, 0)
    }

    /// Revocation while the client waits to reconnect: the reconnection is refused
    /// with plain HTTP 401 `unauthorized` ("session revoked", docs/PROTOCOL.md). A 401 to a
    /// reconnection may be an expired token (`conformance/CLIENT_RULES.md`), so the provider is asked
    /// once for a fresh token; the reconnection with it is refused again and the answer
    /// fails there — no third attempt, no loop.
    func testRevokedWhileDisconnectedFailsOnTheFirstReconnection() async throws {
        let relay = try startRelay(["RELAY_ADMIN_KEY": Self.adminKey, "RELAY_SIMULATED_TOKENS_PER_SECOND": "100"])
        let sid = "revoked-\(UUID().uuidString.prefix(8))"
        let tokens = Box(0)
        let c = RelayChatClient(baseURLs: [url(relay.port)], token: { tokens.mutate { $0 += 1 }; return RelayProcess.token(sid: sid) },
                                clock: FastClock(), configuration: .ephemeral)
        let stream = c.startChat(request(maxTokens: 3_000), options: .init(dropAfterEvents: 5))
        let out = try await collect(stream, timeout: 10) { u in
            if case .connection(.waitingToReconnect) = u {
                XCTAssertEqual(try? Self.revoke(relay, sid: sid), 202)
            }
        }
        // Refused before the stream begins: plain HTTP 401 `unauthorized` (docs/PROTOCOL.md).
        guard case .failed(401, "unauthorized", "session revoked")? = out.completion else {
            return XCTFail("fails with HTTP 401 unauthorized (session revoked), got \(String(describing: out.completion)); \(out.statuses)")
        }
        let attempts = out.statuses.filter { if case .reconnecting = $0 { return true } else { return false } }
        XCTAssertEqual(attempts.count, 2, "one reconnection, then one with a fresh token, both refused: \(out.statuses)")
        XCTAssertEqual(tokens.value, 3)
    }


    // MARK: - 5. Budget pill from GET /api/budget

    func testBudgetPillFromTheRelayAndEachDone() async throws {
        let relay = try startRelay(["RELAY_BUDGETS": "free=1000,pro=500000"])
        let user = "budget-\(UUID().uuidString.prefix(8))"
        let free = client([relay.port], token: { RelayProcess.token(sub: user) }, clock: FastClock())
        let b0 = try await free.fetchBudget()
        XCTAssertEqual(b0.tier, "free")
        XCTAssertEqual(b0.limit, 1_000)
        XCTAssertEqual(b0.used, 0)
        XCTAssertEqual(b0.remaining, 1_000)
        XCTAssertEqual(b0.pillText, "~1,000 tokens remaining this month")
        XCTAssertTrue(b0.canSend)
        XCTAssertFalse(b0.isWarning)
        XCTAssertEqual(free.budget, b0)

        let pro = client([relay.port], token: { RelayProcess.token(sub: user, tier: "pro") })
        let p = try await pro.fetchBudget()
        XCTAssertEqual(p.tier, "pro")
        XCTAssertEqual(p.pillText, "~500,000 tokens remaining this month")

        // An answer of 850 tokens: the client's budget follows its `done` usage and
        // agrees with the relay's count; under 20 % left is a warning.
        let out = try await collect(free.startChat(request(maxTokens: 850)))
        XCTAssertEqual(out.completion, .finished(finishReason: "length"))
        let local = try XCTUnwrap(out.budgets.last, "a budget update after done")
        XCTAssertGreaterThan(local.used, 850)
        let b1 = try await free.fetchBudget()
        XCTAssertEqual(b1.used, local.used, "client and relay count the same usage")
        XCTAssertEqual(b1.remaining, local.remaining)
        XCTAssertTrue(b1.isWarning)
        XCTAssertTrue(b1.canSend)
        XCTAssertEqual(b1.pillText, "~\(BudgetState.grouped(BudgetState.approximate(b1.remaining))) tokens remaining this month")

        // Use the rest: Send disabled; a request anyway fails with 429, no reconnection.
        _ = try await collect(free.startChat(request(maxTokens: 300)))
        let b2 = try await free.fetchBudget()
        XCTAssertEqual(b2.remaining, 0)
        XCTAssertFalse(b2.canSend)
        XCTAssertEqual(b2.pillText, "No tokens remaining this month")
        let refused = try await collect(free.startChat(request(maxTokens: 10)))
        guard case .failed(429, "token_budget_exhausted", _)? = refused.completion else {
            return XCTFail("429 token_budget_exhausted, got \(String(describing: refused.completion))")
        }
        XCTAssertFalse(refused.statuses.contains { if case .reconnecting = $0 { return true } else { return false } })
    }

    // MARK: - 5b. An answer cut by the budget

    /// `RELAY_BUDGETS=free=300`: an answer that fits is not flagged; one asking for 1,000
    /// tokens is granted what remains, ends with `done` `length` + `budget_limited`, and the
    /// kit shows the flag on its last update only, with the pill at "No tokens remaining"
    /// — as the relay says (`remaining` 0, nothing left reserved) and enforces (429).
    /// `stream-relay chat` prints the note on stderr for another user's cut answer.
    func testAnswerCutByTheBudgetShowsTheFlagAndAnEmptyPill() async throws {
        let relay = try startRelay(["RELAY_BUDGETS": "free=300", "RELAY_SIMULATED_TOKENS_PER_SECOND": "2000"])
        let user = "cut-\(UUID().uuidString.prefix(8))"
        let c = client([relay.port], token: { RelayProcess.token(sub: user) }, clock: FastClock())
        let b0 = try await c.fetchBudget()
        XCTAssertEqual([b0.limit, b0.used, b0.reserved, b0.remaining], [300, 0, 0, 300])

        let fits = try await collect(c.startChat(request(maxTokens: 20)))
        XCTAssertEqual(fits.completion, .finished(finishReason: "length"))
        XCTAssertFalse(fits.renders.contains { $0.budgetLimited }, "max_tokens, not the budget, ended it")
        let afterFits = try XCTUnwrap(fits.budgets.last)
        XCTAssertTrue(afterFits.canSend)

        let cut = try await collect(c.startChat(request(maxTokens: 1_000)))
        XCTAssertEqual(cut.completion, .finished(finishReason: "length"))
        XCTAssertEqual(cut.renders.last?.budgetLimited, true, "the final update says the budget cut it")
        XCTAssertFalse(cut.renders.dropLast().contains { $0.budgetLimited }, "only the final update carries the flag")
        XCTAssertFalse(cut.text.isEmpty)
        let pill = try XCTUnwrap(cut.budgets.last, "a budget update after done")
        XCTAssertEqual(pill.remaining, 0)
        XCTAssertFalse(pill.canSend)
        XCTAssertEqual(pill.pillText, "No tokens remaining this month")
        XCTAssertEqual(pill.budgetLimitedNote, "Answer shortened: this month's token budget is used up")

        let relaySays = try await c.fetchBudget()
        XCTAssertEqual(relaySays.reserved, 0, "the reservation was settled")
        XCTAssertEqual(relaySays.remaining, 0, "the relay agrees nothing remains")
        XCTAssertEqual(relaySays.used, pill.used, "client and relay count the same usage")
        XCTAssertLessThanOrEqual(relaySays.used, 300)
        let refused = try await collect(c.startChat(request(maxTokens: 10)))
        guard case .failed(429, "token_budget_exhausted", _)? = refused.completion else {
            return XCTFail("429 token_budget_exhausted, got \(String(describing: refused.completion))")
        }

        // The command-line client: a status line on stderr, the answer on stdout.
        let p = Process()
        p.executableURL = URL(fileURLWithPath: TestPaths.relayBinary)
        p.arguments = ["chat", "--prompt", "Draft a mutual NDA", "--max-tokens", "1000",
                       "--token", RelayProcess.token(sub: "\(user)-cli"), "--url", "http://127.0.0.1:\(relay.port)"]
        let err = Pipe(), out = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, errText)
        XCTAssertTrue(errText.contains("Answer shortened: this month's token budget is used up"), errText)
        XCTAssertTrue(errText.contains("No tokens remaining this month"), errText)
        XCTAssertFalse(String(decoding: outData, as: UTF8.self).contains("Answer shortened"), "stdout holds only the answer")
    }
}
