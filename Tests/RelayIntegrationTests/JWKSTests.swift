import Foundation
import RelayAuth
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// JSON Web Key Sets (docs/TOKENS.md, RFC 7517) against a real relay process: keys from a
/// JWKS served on loopback by the test
/// (`FakeUpstreamServer`, whose answers the test changes), rotation without a restart,
/// the refetch rate limit, attacks, readiness, `file://` and `mint-token --jwk`.
final class JWKSTests: RelayTestCase {
    static let rsa = try! JWKKeyBuilder.generate(.rsa, kid: "rsa-1")
    static let ec = try! JWKKeyBuilder.generate(.ec, kid: "ec-1")
    static let third = try! JWKKeyBuilder.generate(.rsa, kid: "rsa-3")

    private var jwksServer: FakeUpstreamServer?

    override func tearDown() {
        jwksServer?.stop()
        jwksServer = nil
        super.tearDown()
    }

    static func document(_ keys: [[String: Any]]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: ["keys": keys]))
    }

    static func serve(_ keys: [JSONWebKey], cacheControl: String = "no-cache") -> FakeUpstreamServer.Script {
        serve(document(keys.map(\.publicJSON)), cacheControl: cacheControl)
    }

    static func serve(_ body: [UInt8], cacheControl: String = "no-cache") -> FakeUpstreamServer.Script {
        .init([.head(status: 200, contentType: "application/json", chunked: false, cacheControl: cacheControl), .send(body)])
    }

    static let failing = FakeUpstreamServer.Script([.head(status: 500, contentType: "text/plain", chunked: false), .send(Array("down".utf8))])

    /// Starts the JWKS server with `script` at `/jwks` and a relay using it.
    private func start(_ script: FakeUpstreamServer.Script, env: [String: String] = [:], waitReady: Bool = true) throws
        -> (FakeUpstreamServer, RelayProcess) {
        let server = try FakeUpstreamServer(routes: ["/jwks": script])
        jwksServer = server
        var e = ["RELAY_JWT_JWKS_URL": server.baseURL + "/jwks", "RELAY_SIMULATED_TOKENS_PER_SECOND": "2000"]
        for (k, v) in env { e[k] = v }
        if waitReady { return (server, try startRelay(e)) }
        let relay = try RelayProcess(redisURL: redis.url, env: e, waitReady: false)
        addTeardownBlock { relay.kill9() }
        return (server, relay)
    }

    static func token(_ key: JSONWebKey, sub: String = "alice", ttl: Int = 600) -> String {
        try! TokenMinter.jwk(key, sub: sub, sid: "s-" + UUID().uuidString, tier: nil, ttlSeconds: ttl,
                             now: Int64(Date().timeIntervalSince1970))
    }

    /// A well-formed ES256 token naming `kid`, with a signature no key made.
    static func junkToken(kid: String) -> String {
        let now = Int(Date().timeIntervalSince1970)
        return b64(#"{"alg":"ES256","kid":"\#(kid)"}"#) + "." + b64(#"{"sub":"mallory","sid":"s1","exp":\#(now + 600)}"#)
            + "." + b64([UInt8](repeating: 7, count: 64))
    }

    /// The status of an authenticated `GET /api/budget` (200 or 401).
    private func status(_ relay: RelayProcess, _ token: String) throws -> Int {
        try HTTPClient.request(port: relay.port, method: "GET", path: "/api/budget",
                               headers: [("Authorization", "Bearer \(token)")]).status
    }

    /// A `/metrics` value, 0 when absent.
    private func value(_ relay: RelayProcess, _ name: String) throws -> Double { try metric(relay, name) ?? 0 }

    private func jwksRequests(_ s: FakeUpstreamServer) -> Int { s.requests.filter { $0.path == "/jwks" }.count }

    // MARK: tests

    func testBothKeysVerifyAndAThirdPublishedWhileMaxAgeIsAWeekVerifiesOnItsFirstUse() throws {
        let (server, relay) = try start(Self.serve([Self.rsa, Self.ec], cacheControl: "public, max-age=604800"))
        XCTAssertEqual(jwksRequests(server), 1)
        XCTAssertEqual(server.requests.first?.method, "GET")
        XCTAssertEqual(try status(relay, Self.token(Self.rsa)), 200)
        XCTAssertEqual(try status(relay, Self.token(Self.ec)), 200)
        let c = try Chat.start(port: relay.port, token: Self.token(Self.ec))
        XCTAssertEqual(c.status, 200)
        assertSequence(try c.readAll())

        // Rotation at the provider while its set says it is good for a week: the first token
        // of the new key waits for the refetch it causes and passes.
        server.setRoute("/jwks", Self.serve([Self.rsa, Self.ec, Self.third], cacheControl: "public, max-age=604800"))
        let t0 = Date()
        XCTAssertEqual(try status(relay, Self.token(Self.third)), 200, "the new key on its first use")
        print(String(format: "new key published under max-age=604800: first use answered in %.0f ms", Date().timeIntervalSince(t0) * 1000))
        XCTAssertEqual(jwksRequests(server), 2)
        XCTAssertEqual(try value(relay, "relay_jwks_unknown_kid_refetches_total"), 1)
        XCTAssertEqual(try value(relay, "relay_jwks_waiting_requests_total"), 1)
        XCTAssertEqual(try status(relay, Self.token(Self.third)), 200)
        XCTAssertEqual(jwksRequests(server), 2, "a known kid never fetches")
    }

    func testOneFetchWakesTheWaitingRequestsOfEveryWorker() throws {
        // Waiting requests are only released by the fetch's end here: their own bound
        // (RELAY_JWT_JWKS_TIMEOUT, 60 s) is far beyond the test client's 10 s.
        let (server, relay) = try start(Self.serve([Self.rsa], cacheControl: "public, max-age=604800"),
                                        env: ["RELAY_WORKERS": "4", "RELAY_JWT_JWKS_TIMEOUT": "60s",
                                              "RELAY_JWT_JWKS_UNKNOWN_KID_INTERVAL": "3s"])
        let fresh = try JWKKeyBuilder.generate(.ec, kid: "fresh")
        let tokens = (0..<40).map { _ in Self.token(fresh) }
        server.setRoute("/jwks", Self.serve([Self.rsa, fresh], cacheControl: "public, max-age=604800"))
        let statuses = LockedBox([Int]())
        let group = DispatchGroup()
        for t in tokens {
            DispatchQueue.global().async(group: group) {
                let st = (try? HTTPClient.request(port: relay.port, method: "GET", path: "/api/budget",
                                                  headers: [("Authorization", "Bearer \(t)")], timeout: 10).status) ?? -1
                statuses.mutate { $0.append(st) }
            }
        }
        group.wait()
        XCTAssertEqual(statuses.value, [Int](repeating: 200, count: 40))
        XCTAssertLessThanOrEqual(jwksRequests(server), 3, "the start, then one fetch (two when some arrived during the first)")
        XCTAssertGreaterThanOrEqual(try value(relay, "relay_jwks_waiting_requests_total"), 1)
    }

    func testAPostSignedWithANewKeyWaitsWithItsBodyAndStreams() throws {
        let (server, relay) = try start(Self.serve([Self.rsa], cacheControl: "public, max-age=604800"))
        let fresh = try JWKKeyBuilder.generate(.ec, kid: "fresh-post")
        server.setRoute("/jwks", Self.serve([Self.rsa, fresh], cacheControl: "public, max-age=604800"))
        let c = try Chat.start(port: relay.port, token: Self.token(fresh), maxTokens: 20)
        XCTAssertEqual(c.status, 200, "the POST, parked with its body until the refetch, is admitted")
        let events = try c.readAll()
        assertSequence(events)
        XCTAssertEqual(events.count, 21)
        XCTAssertEqual(try value(relay, "relay_jwks_waiting_requests_total"), 1)
    }

    func testJunkKidsThenARealNewKeyPassesOnItsFirstUse() throws {
        let (server, relay) = try start(Self.serve([Self.rsa], cacheControl: "public, max-age=604800"))
        let junk = try (0..<4).map { try JWKKeyBuilder.generate(.ec, kid: "junk-\($0)") }
        // Anyone can start a refetch with one junk kid; it is refused once that fetch lacks it…
        XCTAssertEqual(try status(relay, Self.token(junk[0])), 401)
        XCTAssertEqual(jwksRequests(server), 2)
        // …and then refused at once, without a fetch (negative cache).
        XCTAssertEqual(try status(relay, Self.token(junk[0])), 401)
        XCTAssertEqual(jwksRequests(server), 2)
        // Junk keeps coming from other clients while the provider publishes a key, which is used at once.
        let stop = LockedBox(false)
        let junkSent = LockedBox(0)
        let flood = DispatchGroup()
        for k in 1..<4 {
            DispatchQueue.global().async(group: flood) {
                while !stop.value {
                    _ = try? HTTPClient.request(port: relay.port, method: "GET", path: "/api/budget",
                                                headers: [("Authorization", "Bearer \(Self.token(junk[k]))")])
                    junkSent.mutate { $0 += 1 }
                }
            }
        }
        try eventually(10, "junk refetches under way") { jwksRequests(server) >= 3 }
        let real = try JWKKeyBuilder.generate(.rsa, kid: "real-new")
        server.setRoute("/jwks", Self.serve([Self.rsa, real], cacheControl: "public, max-age=604800"))
        let t0 = Date()
        let first = try status(relay, Self.token(real))
        let ms = Date().timeIntervalSince(t0) * 1000
        stop.value = true
        flood.wait()
        XCTAssertEqual(first, 200, "the real new key on its first use, junk kids notwithstanding")
        print(String(format: "real key after junk kids: first use answered in %.0f ms; %d junk requests, %d JWKS fetches", ms, junkSent.value, jwksRequests(server)))
    }

    func testAnOutageAtStartEndsInReadinessWithinTheCappedBackoffAndATokenFetchesAtOnce() throws {
        let (server, relay) = try start(Self.failing, waitReady: false)
        // Six seconds of outage: the backoff (250 ms, doubling) has reached its 2 s cap.
        try eventually(15, "five failed fetches") { jwksRequests(server) >= 5 }
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "GET", path: "/readyz").status, 503)
        XCTAssertEqual(try status(relay, Self.token(Self.rsa)), 401, "no set: the token waited for a failed fetch")
        server.setRoute("/jwks", Self.serve([Self.rsa]))
        // A token arriving now does not wait for the backoff: it causes a fetch and passes.
        let t0 = Date()
        XCTAssertEqual(try status(relay, Self.token(Self.rsa)), 200)
        let ms = Date().timeIntervalSince(t0) * 1000
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "GET", path: "/readyz").status, 200)
        print(String(format: "JWKS back after an outage at start: a token passed after %.0f ms", ms))
    }

    func testAnOutageAtStartEndsInReadinessWithoutAnyTokenWithinTheCappedBackoff() throws {
        let (server, relay) = try start(Self.failing, waitReady: false)
        try eventually(15, "five failed fetches") { jwksRequests(server) >= 5 }
        server.setRoute("/jwks", Self.serve([Self.rsa]))
        let t0 = Date()
        try eventually(10, "ready once the provider answers") {
            try HTTPClient.request(port: relay.port, method: "GET", path: "/readyz").status == 200
        }
        print(String(format: "JWKS back after an outage at start: ready after %.0f ms (backoff cap %d ms)",
                     Date().timeIntervalSince(t0) * 1000, JWKSRefreshPolicy.startupRetryCapMs))
        XCTAssertEqual(try status(relay, Self.token(Self.rsa)), 200)
    }

    func testTenThousandJunkKidTokensCostAboutOneFetchPerInterval() throws {
        // Junk tokens wait at most 300 ms (RELAY_JWT_JWKS_TIMEOUT) so the flood is quick.
        let (server, relay) = try start(Self.serve([Self.rsa], cacheControl: "public, max-age=604800"),
                                        env: ["RELAY_JWT_JWKS_TIMEOUT": "300ms"])
        let total = 10_000, threads = 200
        let statuses = LockedBox([Int: Int]())
        let before = jwksRequests(server)
        let t0 = Date()
        let group = DispatchGroup()
        for t in 0..<threads {
            group.enter()
            let th = Thread {
                var local: [Int: Int] = [:]
                for i in stride(from: t, to: total, by: threads) {
                    // Each token names a different made-up kid; nobody needs a key to send one.
                    let token = Self.junkToken(kid: "junk-\(i)")
                    let st = (try? HTTPClient.request(port: relay.port, method: "GET", path: "/api/budget",
                                                      headers: [("Authorization", "Bearer \(token)")]).status) ?? -1
                    local[st, default: 0] += 1
                }
                statuses.mutate { s in for (k, v) in local { s[k, default: 0] += v } }
                group.leave()
            }
            th.start()
        }
        group.wait()
        let elapsed = Date().timeIntervalSince(t0)
        let fetches = jwksRequests(server) - before
        print(String(format: "%d junk-kid tokens in %.1f s: %d JWKS fetches, statuses %@", total, elapsed, fetches,
                     "\(statuses.value.sorted { $0.key < $1.key })"))
        XCTAssertEqual(statuses.value, [401: total])
        // One fetch at once, then at most one per interval (1 s) while the flood lasts.
        XCTAssertLessThanOrEqual(fetches, Int(elapsed) + 2)
        XCTAssertEqual(try status(relay, Self.token(Self.rsa)), 200, "real tokens pass meanwhile")
    }

    func testFailedRefreshKeepsTheSetAndRemovedKeysStopWithoutCuttingLiveStreams() throws {
        let (server, relay) = try start(Self.serve([Self.rsa, Self.ec]),
                                        env: ["RELAY_JWT_JWKS_REFRESH": "150ms", "RELAY_SIMULATED_TOKENS_PER_SECOND": "40"])
        // A live stream of a token signed by the key that will be removed (~4 s at 40 tokens/s).
        let rsaToken = Self.token(Self.rsa)
        let live = try Chat.start(port: relay.port, token: rsaToken, maxTokens: 160)
        XCTAssertEqual(live.status, 200)
        XCTAssertNotNil(try live.nextEvent())

        server.setRoute("/jwks", Self.failing)
        try eventually(10, "three failed refreshes") { try value(relay, "relay_jwks_fetches_total{result=\"error\"}") >= 3 }
        XCTAssertEqual(try status(relay, Self.token(Self.rsa)), 200, "the last good set stays in use")
        XCTAssertEqual(try status(relay, Self.token(Self.ec)), 200)
        XCTAssertEqual(relay.log.components(separatedBy: "JWKS refresh failed").count - 1, 1, "logged once per run of failures")

        server.setRoute("/jwks", Self.serve([Self.ec]))
        try eventually(10, "the removed key to stop verifying") { try status(relay, Self.token(Self.rsa)) == 401 }
        XCTAssertEqual(try status(relay, Self.token(Self.ec)), 200)
        XCTAssertTrue(relay.log.contains("JWKS fetch works again"))
        XCTAssertEqual(try value(relay, "relay_jwks_keys"), 1)

        // The stream admitted before the removal runs to its end.
        let rest = try live.readAll()
        guard let last = rest.last, case .done? = try? StreamEvent(json: last.data) else {
            return XCTFail("live stream did not end with done: \(rest.last?.data ?? "nothing")")
        }
        // A reconnect is a new authentication: the removed key no longer verifies.
        XCTAssertEqual(try status(relay, rsaToken), 401)
    }

    func testAttacksAreUnauthorized() throws {
        // A 512-bit RSA key in the set, with a token it really signed.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-weak-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let weakKey = dir.appendingPathComponent("weak.pem").path
        try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:512", "-out", weakKey])
        let modulusHex = try openssl(["rsa", "-in", weakKey, "-modulus", "-noout"])
            .trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "Modulus=", with: "")
        let weak: [String: Any] = ["kty": "RSA", "kid": "weak", "alg": "RS256", "n": Self.b64(Self.bytes(hex: modulusHex)), "e": "AQAB"]
        let (_, relay) = try start(Self.serve(Self.document([Self.rsa.publicJSON, Self.ec.publicJSON, weak])))

        let now = Int(Date().timeIntervalSince1970)
        let claims = #"{"sub":"mallory","sid":"s1","exp":\#(now + 600)}"#
        let weakToken = try signRS256(header: #"{"alg":"RS256","kid":"weak"}"#, payload: claims, key: weakKey, dir: dir)
        XCTAssertEqual(try status(relay, weakToken), 401, "512-bit modulus")

        guard case .rsa(let n, _) = Self.rsa.material else { return XCTFail() }
        let hsInput = Self.b64(#"{"alg":"HS256","kid":"rsa-1"}"#) + "." + Self.b64(claims)
        let hsSig = try openssl(["mac", "-digest", "SHA256", "-macopt", "hexkey:" + n.map { String(format: "%02x", $0) }.joined(),
                                 "-in", write(hsInput, dir), "HMAC"])
        let hsToken = hsInput + "." + Self.b64(Self.bytes(hex: hsSig.filter(\.isHexDigit)))
        XCTAssertEqual(try status(relay, hsToken), 401, "HS256 with the modulus as secret")

        let none = Self.b64(#"{"alg":"none","kid":"rsa-1"}"#) + "." + Self.b64(claims) + "."
        XCTAssertEqual(try status(relay, none), 401, "alg none")

        // A real RS256 signature by rsa-1, but the header names the EC key.
        let rsaPEM = dir.appendingPathComponent("rsa.pem").path
        try JWKKeyBuilder.privatePEM(Self.rsa).write(toFile: rsaPEM, atomically: true, encoding: .utf8)
        let confused = try signRS256(header: #"{"alg":"RS256","kid":"ec-1"}"#, payload: claims, key: rsaPEM, dir: dir)
        XCTAssertEqual(try status(relay, confused), 401, "kid of an EC key with an RS256 header")
        let honest = try signRS256(header: #"{"alg":"RS256","kid":"rsa-1"}"#, payload: claims, key: rsaPEM, dir: dir)
        XCTAssertEqual(try status(relay, honest), 200, "the same signature under the right kid (control)")
    }

    func testRefreshFollowsCacheControlMaxAge() throws {
        let doc = Self.document([Self.rsa.publicJSON])
        let script = FakeUpstreamServer.Script([.head(status: 200, contentType: "application/json", chunked: false,
                                                      cacheControl: "public, max-age=1"), .send(doc)])
        // RELAY_JWT_JWKS_REFRESH stays 10 min: only the header can cause the refreshes.
        let (server, relay) = try start(script, env: ["RELAY_JWT_JWKS_MIN_INTERVAL": "500ms"])
        try eventually(10, "two refreshes after max-age=1") { jwksRequests(server) >= 3 }
        XCTAssertEqual(try value(relay, "relay_jwks_unknown_kid_refetches_total"), 0)
        XCTAssertEqual(try status(relay, Self.token(Self.rsa)), 200)
    }

    func testNotReadyUntilAKeySetIsLoaded() throws {
        let (server, relay) = try start(Self.failing, env: ["RELAY_JWT_JWKS_MIN_INTERVAL": "200ms"], waitReady: false)
        try eventually(10, "a failed first fetch") { jwksRequests(server) >= 1 }
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "GET", path: "/readyz").status, 503)
        XCTAssertEqual(try status(relay, Self.token(Self.rsa)), 401)
        server.setRoute("/jwks", Self.serve([Self.rsa]))
        try eventually(10, "ready once the set is loaded") {
            try HTTPClient.request(port: relay.port, method: "GET", path: "/readyz").status == 200
        }
        XCTAssertEqual(try status(relay, Self.token(Self.rsa)), 200)
    }

    func testFileURLAndMintTokenWithAJWK() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-file-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let keyPath = dir.appendingPathComponent("key.jwk").path
        let jwks = try cli(["mint-token", "--new-jwk", "ec", "--kid", "demo", "--out", keyPath])
        let jwksPath = dir.appendingPathComponent("jwks.json").path
        try jwks.write(toFile: jwksPath, atomically: true, encoding: .utf8)
        let relay = try startRelay(["RELAY_JWT_JWKS_URL": "file://" + jwksPath])
        let token = try cli(["mint-token", "--jwk", keyPath, "--sub", "dana", "--sid", "s1"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(try status(relay, token), 200)
        XCTAssertEqual(try status(relay, RelayProcess.token()), 401, "the HS256 secret is not used with a JWKS")
    }

    // MARK: helpers

    static func b64(_ s: String) -> String { b64(Array(s.utf8)) }
    static func b64(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func bytes(hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var it = hex.makeIterator()
        while let a = it.next(), let b = it.next() { out.append(UInt8(String([a, b]), radix: 16)!) }
        return out
    }

    private func write(_ text: String, _ dir: URL) throws -> String {
        let f = dir.appendingPathComponent(UUID().uuidString).path
        try text.write(toFile: f, atomically: true, encoding: .utf8)
        return f
    }

    private func signRS256(header: String, payload: String, key: String, dir: URL) throws -> String {
        let input = Self.b64(header) + "." + Self.b64(payload)
        // `-hex` prints "…= <hex signature>".
        let out = try openssl(["dgst", "-sha256", "-sign", key, "-hex", try write(input, dir)])
        let hex = out.split(separator: "=").last.map { $0.filter(\.isHexDigit) } ?? ""
        return input + "." + Self.b64(Self.bytes(hex: String(hex)))
    }

    /// Runs `openssl` and returns its stdout.
    @discardableResult
    private func openssl(_ args: [String]) throws -> String { try run("/usr/bin/openssl", args) }

    /// Runs `stream-relay` and returns its stdout.
    private func cli(_ args: [String]) throws -> String { try run(TestPaths.relayBinary, args) }

    private func run(_ exe: String, _ args: [String]) throws -> String {
        let r = try ToolProcess.run(exe, args)
        guard r.status == 0 else { throw TestFailure("\(exe) \(args) failed: \(r.stderr)") }
        return r.stdout
    }

    /// A provider that stops answering (the connection accepted, nothing sent) while tokens
    /// name a new kid: each parked request is answered (401) once `RELAY_JWT_JWKS_TIMEOUT`
    /// passes — none hangs — and a token of a known key is served meanwhile; the relay stays
    /// live, and answers the next unknown kid the same way once the fetch has timed out.
    func testAProviderThatHangsLeavesNoRequestWaitingPastTheJWKSTimeout() throws {
        let (server, relay) = try start(Self.serve([Self.rsa], cacheControl: "public, max-age=604800"),
                                        env: ["RELAY_JWT_JWKS_TIMEOUT": "2s"])
        server.setRoute("/jwks", .init([.holdOpen]))
        let newKey = try JWKKeyBuilder.generate(.rsa, kid: "unpublished")
        let results = LockedBox([Int]())
        let t0 = Date()
        let group = DispatchGroup()
        for _ in 0..<20 {
            group.enter()
            Thread.detachNewThread {
                let s = (try? HTTPClient.request(port: relay.port, method: "GET", path: "/api/budget",
                                                 headers: [("Authorization", "Bearer \(Self.token(newKey))")]))?.status ?? -1
                results.mutate { $0.append(s) }
                group.leave()
            }
        }
        group.wait()
        let elapsed = Date().timeIntervalSince(t0)
        XCTAssertEqual(results.value, Array(repeating: 401, count: 20), "every waiting request is answered 401")
        XCTAssertLessThan(elapsed, 9, "no request waited much longer than RELAY_JWT_JWKS_TIMEOUT")
        XCTAssertEqual(try status(relay, Self.token(Self.rsa)), 200, "a known key is served while the provider hangs")
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "GET", path: "/healthz").status, 200)
        XCTAssertEqual(try status(relay, Self.token(newKey)), 401)
    }

    /// Kids an attacker shapes (docs/TOKENS.md): control characters, a NUL, a lone surrogate
    /// escape, a non-string kid, a 257-byte and a 64 KB kid, quotes and braces. Each token is
    /// refused 401 (never another status, never a crash), the refetches they cause stay within
    /// the unknown-kid interval's rate, and a real token still verifies afterwards.
    func testKidsWithOddBytesOrHugeLengthAreRefusedAndTheRelayStaysWhole() throws {
        let (server, relay) = try start(Self.serve([Self.rsa], cacheControl: "public, max-age=604800"))
        let now = Int(Date().timeIntervalSince1970)
        let claims = Self.b64(#"{"sub":"mallory","sid":"s1","exp":\#(now + 600)}"#)
        let kids = [#""a\u0000b""#, #""\u0001\n\r\t""#, #""\ud800""#, #""\udc00x""#, "17", "null", #"{"k":1}"#, "[\"x\"]",
                    "\"" + String(repeating: "k", count: 257) + "\"", "\"" + String(repeating: "k", count: 6_000) + "\"",
                    #""\"}{\\""#, #""%00%0d%0a""#]
        let fetchesBefore = jwksRequests(server)
        for kid in kids {
            let token = Self.b64(#"{"alg":"ES256","kid":\#(kid)}"#) + "." + claims + "." + Self.b64([UInt8](repeating: 7, count: 64))
            let answer = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/budget",
                                                headers: [("Authorization", "Bearer \(token)")])
            XCTAssertEqual(answer.status, 401, "kid \(kid.prefix(40))")
        }
        XCTAssertLessThanOrEqual(jwksRequests(server) - fetchesBefore, kids.count, "at most one fetch per unknown kid")
        XCTAssertEqual(try status(relay, Self.token(Self.rsa)), 200)
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "GET", path: "/healthz").status, 200)
    }
}
