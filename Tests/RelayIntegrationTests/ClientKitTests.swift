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
final class ClientKitTests: RelayTestCase {
    static let adminKey = "admin-key-for-client-tests-0123456789"
    static let prompt = ChatMessage(role: "user", content: "Draft a mutual NDA")

    func request(maxTokens: Int, model: String = "simulated") -> ChatRequest {
        ChatRequest(messages: [Self.prompt], model: model, maxTokens: maxTokens)
    }

    func url(_ port: Int) -> URL { URL(string: "http://127.0.0.1:\(port)")! }

    func client(_ ports: [Int], token: @escaping @Sendable () -> String = { RelayProcess.token(sub: "client-kit") },
                clock: any RelayClock = SystemClock(), telemetry: TelemetrySink? = nil) -> RelayChatClient {
        RelayChatClient(baseURLs: ports.map(url), token: { token() }, clock: clock, telemetry: telemetry,
                        configuration: .ephemeral)
    }

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

    /// `relay:{id}:meta` state `cancelled`, the log ends with `done` `cancelled`, and
    /// `last_seq` stops moving.
    func assertCancelled(_ id: String, sub: String = "client-kit", file: StaticString = #filePath, line: UInt = #line) throws {
        let meta = streamKey(id, "meta", sub: sub)
        try eventually(5, "state cancelled") { try redis.cli("HGET", meta, "state") == "cancelled" }
        let last = try redis.cli("XREVRANGE", streamKey(id, "events", sub: sub), "+", "-", "COUNT", "1")
        XCTAssertTrue(last.contains("\"done\"") && last.contains("cancelled"), "log ends with done cancelled: \(last)", file: file, line: line)
        // The generation stopped: the `done` entry is the stream's last one (its id is
        // last_seq), so nothing was appended after it.
        let seq = try redis.cli("HGET", meta, "last_seq")
        XCTAssertTrue(last.hasPrefix("\(seq)-"), "the done entry is the last one (last_seq \(seq)): \(last.prefix(40))", file: file, line: line)
        XCTAssertLessThan(Int(seq) ?? .max, 5_000, file: file, line: line)
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

    static func revoke(_ relay: RelayProcess, sid: String) throws -> Int {
        try HTTPClient.request(port: relay.port, method: "POST", path: "/admin/sessions/\(sid)/revoke",
                               headers: [("Authorization", "Bearer \(Self.adminKey)")]).status
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

    // MARK: - Helpers

    /// Everything a `RelayStream` yielded.
    struct Outcome {
        var updates: [ChatUpdate] = []
        var statuses: [ConnectionStatus] {
            updates.compactMap { if case .connection(let s) = $0 { return s } else { return nil } }
        }
        var budgets: [BudgetState] {
            updates.compactMap { if case .budget(let b) = $0 { return b } else { return nil } }
        }
        var renders: [RenderUpdate] {
            updates.compactMap { if case .render(let r) = $0 { return r } else { return nil } }
        }
        /// The text on screen at the end.
        var text: String { renders.last?.text ?? "" }
        var completion: Completion? { renders.last?.completion }
        var telemetry: TelemetryRecord? {
            if case .telemetry(let t)? = updates.last { return t }
            return nil
        }
    }

    /// Reads `stream`, pressing Stop once the first text is on screen.
    func collectStoppingAtFirstText(_ stream: RelayStream) async throws -> Outcome {
        let stopped = Box(false)
        return try await collect(stream, timeout: 10) { u in
            if case .render(let r) = u, !r.text.isEmpty, !stopped.value {
                stopped.value = true
                stream.stop()
            }
        }
    }

    /// Reads `stream` to its end (at most `timeout` seconds; then stops it and throws),
    /// calling `onUpdate` for each update as it arrives.
    func collect(_ stream: RelayStream, timeout: Double = 20,
                 _ onUpdate: @escaping @Sendable (ChatUpdate) -> Void = { _ in }) async throws -> Outcome {
        let result = Box<Outcome?>(nil)
        let reader = Task {
            var o = Outcome()
            for await u in stream {
                onUpdate(u)
                o.updates.append(u)
            }
            result.value = o
        }
        do {
            try await eventually(timeout, "stream \(stream.requestId) to end", every: 0.01) { result.value != nil }
        } catch {
            stream.stop()
            reader.cancel()
            throw error
        }
        let o = try XCTUnwrap(result.value)
        // The sequence ends with the completion, then the telemetry record.
        XCTAssertNotNil(o.telemetry, "the last update is the telemetry record")
        XCTAssertNotNil(o.completion, "the last render carries the completion")
        return o
    }

    func find(_ needle: [UInt8], in hay: [UInt8]) -> Int? {
        guard hay.count >= needle.count else { return nil }
        for i in 0...(hay.count - needle.count) where hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
        return nil
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
