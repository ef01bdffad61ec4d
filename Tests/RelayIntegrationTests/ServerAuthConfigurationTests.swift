import Foundation
import RelayCore
import RelayTestSupport
import XCTest

/// The server side of token verification as configured by an operator (docs/TOKENS.md) —
/// `RELAY_JWT_PUBLIC_KEY` (RS256 and ES256 keys from `openssl genpkey`), `RELAY_JWT_ISSUER`
/// and `RELAY_JWT_AUDIENCE` — and `stream-relay mint-token`, each against a real relay.
/// Tokens are signed by openssl, not by the relay's code.
final class ServerAuthConfigurationTests: RelayTestCase {
    static let issuer = "https://auth.example.test"
    static let audience = "stream-relay-tests"

    /// The HTTP status and error code of a short stream opened with `token`.
    func attempt(_ relay: RelayProcess, _ token: String) throws -> (Int, String?) {
        let r = try HTTPClient.request(port: relay.port, method: "POST", path: "/api/chat/stream",
                                       headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                                       body: Chat.body(maxTokens: 3))
        return (r.status, r.errorCode)
    }

    /// A relay verifying `algorithm` tokens of `key` with the issuer and audience set:
    /// a token with both streams; a wrong or missing `iss`/`aud`, another key of the same
    /// kind, and an HS256 token (algorithm confusion) are 401 `unauthorized`.
    func assertPublicKeyConfiguration(_ algorithm: SigningKeyPair.Algorithm, file: StaticString = #filePath, line: UInt = #line) throws {
        let key = try SigningKeyPair(algorithm), other = try SigningKeyPair(algorithm)
        let relay = try startRelay(["RELAY_JWT_PUBLIC_KEY": key.publicKeyPath, "RELAY_JWT_ALGORITHM": algorithm.rawValue,
                                    "RELAY_JWT_ISSUER": Self.issuer, "RELAY_JWT_AUDIENCE": Self.audience])
        let good = try key.token(iss: Self.issuer, aud: Self.audience)
        let events = try Chat.start(port: relay.port, token: good, maxTokens: 5).readAll()
        XCTAssertEqual(events.count, 6, "\(algorithm): a valid token streams", file: file, line: line)
        XCTAssertEqual(Chat.text(events), referenceText(maxTokens: 5), file: file, line: line)
        let refused: [(String, String)] = [
            ("wrong issuer", try key.token(iss: "https://evil.example.test", aud: Self.audience)),
            ("no issuer", try key.token(aud: Self.audience)),
            ("wrong audience", try key.token(iss: Self.issuer, aud: "another-service")),
            ("no audience", try key.token(iss: Self.issuer)),
            ("another key", try other.token(iss: Self.issuer, aud: Self.audience)),
            ("HS256 with the test secret", RelayProcess.token()),
        ]
        for (what, token) in refused {
            let (status, code) = try attempt(relay, token)
            XCTAssertEqual(status, 401, "\(algorithm), \(what)", file: file, line: line)
            XCTAssertEqual(code, "unauthorized", "\(algorithm), \(what)", file: file, line: line)
        }
    }

    func testRS256PublicKeyWithIssuerAndAudience() throws {
        try assertPublicKeyConfiguration(.rs256)
    }

    func testES256PublicKeyWithIssuerAndAudience() throws {
        try assertPublicKeyConfiguration(.es256)
    }

    /// An audience claim may be an array (RFC 7519 §4.1.3): one matching entry is enough.
    func testAudienceArrayContainingTheConfiguredAudienceIsAccepted() throws {
        let key = try SigningKeyPair(.es256)
        let relay = try startRelay(["RELAY_JWT_PUBLIC_KEY": key.publicKeyPath, "RELAY_JWT_ALGORITHM": "ES256",
                                    "RELAY_JWT_AUDIENCE": Self.audience])
        let now = Int(Date().timeIntervalSince1970)
        let claims: [String: Any] = ["sub": "alice", "sid": "s-aud", "iat": now, "exp": now + 600]
        var with = claims
        with["aud"] = ["other", Self.audience]
        XCTAssertEqual(try attempt(relay, try key.token(claims: with)).0, 200)
        var without = claims
        without["aud"] = ["other", "yet-another"]
        XCTAssertEqual(try attempt(relay, try key.token(claims: without)).0, 401)
    }

    // MARK: mint-token

    func mintToken(_ args: [String], env: [String: String] = [:]) throws -> ToolProcess.Result {
        try ToolProcess.run(TestPaths.relayBinary, ["mint-token"] + args, environment: ChildEnvironment.minimal(env), timeout: 20)
    }

    /// The claims of a compact JWS (the payload, base64url-decoded).
    func claims(_ token: String) throws -> [String: Any] {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 3, "a compact JWS: \(token)")
        var b64 = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        let data = try XCTUnwrap(Data(base64Encoded: b64), "payload is base64url")
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// `mint-token` with `--secret`, `--secret-file` and `RELAY_JWT_SECRET`: the tokens carry
    /// the asked claims and lifetime, and a relay with the same secret accepts them (the
    /// tier's budget applies); a token minted with another secret is refused.
    func testMintTokenIsAcceptedByARelayWithTheSameSecret() throws {
        let relay = try startRelay(["RELAY_BUDGETS": "free=1000,pro=700000"])
        let flag = try mintToken(["--sub", "bob", "--sid", "mint-1", "--tier", "pro", "--ttl", "120", "--secret", RelayProcess.secret])
        XCTAssertEqual(flag.status, 0, flag.output)
        let token = flag.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let c = try claims(token)
        XCTAssertEqual(c["sub"] as? String, "bob")
        XCTAssertEqual(c["sid"] as? String, "mint-1")
        XCTAssertEqual(c["tier"] as? String, "pro")
        let iat = try XCTUnwrap(c["iat"] as? Int), exp = try XCTUnwrap(c["exp"] as? Int)
        XCTAssertEqual(exp - iat, 120, "--ttl 120")
        XCTAssertLessThan(abs(iat - Int(Date().timeIntervalSince1970)), 60, "issued now")
        let events = try Chat.start(port: relay.port, token: token, maxTokens: 4).readAll()
        XCTAssertEqual(events.count, 5, "the relay accepts the minted token")
        let budget = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/budget",
                                            headers: [("Authorization", "Bearer \(token)")])
        XCTAssertEqual(budget.status, 200)
        XCTAssertTrue(budget.text.contains("700000"), "the tier claim selects the pro budget: \(budget.text)")

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mint-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let secretFile = dir.appendingPathComponent("secret")
        try Data((RelayProcess.secret + "\n").utf8).write(to: secretFile)
        let fromFile = try mintToken(["--sub", "carol", "--sid", "mint-2", "--secret-file", secretFile.path])
        XCTAssertEqual(fromFile.status, 0, fromFile.output)
        XCTAssertEqual(try attempt(relay, fromFile.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).0, 200, "--secret-file")
        let fromEnv = try mintToken(["--sub", "dave", "--sid", "mint-3"], env: ["RELAY_JWT_SECRET": RelayProcess.secret])
        XCTAssertEqual(fromEnv.status, 0, fromEnv.output)
        XCTAssertEqual(try attempt(relay, fromEnv.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).0, 200, "RELAY_JWT_SECRET")

        let foreign = try mintToken(["--sub", "eve", "--sid", "mint-4", "--secret", String(repeating: "x", count: 40)])
        XCTAssertEqual(foreign.status, 0, foreign.output)
        XCTAssertEqual(try attempt(relay, foreign.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).0, 401, "another secret")
    }

    /// Without `--sub`/`--sid` or without any secret, `mint-token` exits non-zero with a
    /// message naming what is missing, and prints no token.
    func testMintTokenWithoutRequiredInputFails() throws {
        let noSub = try mintToken(["--sid", "s1", "--secret", RelayProcess.secret])
        XCTAssertNotEqual(noSub.status, 0)
        XCTAssertTrue(noSub.stderr.contains("--sub"), noSub.output)
        XCTAssertEqual(noSub.stdout, "")
        let noSecret = try mintToken(["--sub", "a", "--sid", "s1"])
        XCTAssertNotEqual(noSecret.status, 0)
        XCTAssertTrue(noSecret.stderr.lowercased().contains("secret"), noSecret.output)
        XCTAssertEqual(noSecret.stdout, "")
    }
}
