import Foundation
import RelayAuth

/// `stream-relay mint-token`: signs a development token and prints it — HS256 with the
/// configured secret (`--secret`, `--secret-file`, or `RELAY_JWT_SECRET`), or with a
/// private JWK (`--jwk PATH`, its `alg` and `kid`; docs/TOKENS.md). `--new-jwk rsa|ec|ec384`
/// generates such a key for tests and demos.
enum MintTokenCommand {
    static let usage = """
    usage: stream-relay mint-token --sub USER --sid SESSION [--tier TIER] [--ttl SECONDS]
                                   [--secret S | --secret-file PATH | --jwk PATH [--alg ALG]]
           stream-relay mint-token --new-jwk rsa|ec|ec384 --out PATH [--kid KID]
    Prints a JWT with claims sub, sid, tier, iat, exp (default ttl 3600 s): HS256 with the
    secret (default RELAY_JWT_SECRET), or signed with the private JWK at PATH (header kid
    and alg from the key; --alg picks RS384/RS512 for an RSA key without alg).
    --new-jwk writes a new private JWK to PATH (mode 0600) and prints the public key set
    {"keys":[…]} to serve as RELAY_JWT_JWKS_URL (a file:// URL works).
    """

    static func run(arguments: [String]) -> Int32 {
        var opts: [String: String] = [:]
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            if a == "--help" || a == "-h" { print(usage); return 0 }
            guard a.hasPrefix("--"), i + 1 < arguments.count else {
                printError("mint-token: unexpected \(a)\n\(usage)\n")
                return 2
            }
            opts[String(a.dropFirst(2))] = arguments[i + 1]
            i += 2
        }
        if let kind = opts["new-jwk"] { return newJWK(kind, opts) }
        guard let sub = opts["sub"], let sid = opts["sid"] else {
            printError("mint-token: --sub and --sid are required\n\(usage)\n")
            return 2
        }
        guard let ttl = Int(opts["ttl"] ?? "3600"), ttl > 0 else {
            printError("mint-token: --ttl must be a positive number of seconds\n")
            return 2
        }
        let now = Int64(Date().timeIntervalSince1970)
        do {
            let token: String
            if let path = opts["jwk"] {
                let key = try readPrivateJWK(path)
                var alg: JWKAlgorithm?
                if let a = opts["alg"] {
                    guard let parsed = JWKAlgorithm(rawValue: a) else {
                        printError("mint-token: --alg must be one of \(JWKAlgorithm.allCases.map(\.rawValue).joined(separator: ", "))\n")
                        return 2
                    }
                    alg = parsed
                }
                token = try TokenMinter.jwk(key, algorithm: alg, sub: sub, sid: sid, tier: opts["tier"], ttlSeconds: ttl, now: now)
            } else {
                guard let secret = try secret(opts) else {
                    printError("mint-token: no key (--jwk, --secret, --secret-file or RELAY_JWT_SECRET)\n")
                    return 2
                }
                token = try TokenMinter.hs256(secret: Array(secret.utf8), sub: sub, sid: sid, tier: opts["tier"],
                                              ttlSeconds: ttl, now: now)
            }
            print(token)
            return 0
        } catch {
            printError("mint-token: \(error)\n")
            return 2
        }
    }

    private static func secret(_ opts: [String: String]) throws -> String? {
        if let f = opts["secret-file"] {
            guard let s = try? String(contentsOfFile: f, encoding: .utf8) else {
                throw AuthConfigurationError("cannot read \(f)")
            }
            return s.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return opts["secret"] ?? ProcessInfo.processInfo.environment["RELAY_JWT_SECRET"]
    }

    private static func readPrivateJWK(_ path: String) throws -> JSONWebKey {
        guard let data = FileManager.default.contents(atPath: path) else { throw AuthConfigurationError("cannot read \(path)") }
        guard let obj = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw AuthConfigurationError("\(path) is not a JSON object (a private JWK, RFC 7517 §4)")
        }
        let key = try JSONWebKey(json: obj, allowPrivate: true)
        guard key.isPrivate else { throw AuthConfigurationError("\(path) is a public JWK; signing needs its private part (d)") }
        return key
    }

    private static func newJWK(_ kindName: String, _ opts: [String: String]) -> Int32 {
        guard let kind = JWKKeyBuilder.Kind(rawValue: kindName) else {
            printError("mint-token: --new-jwk must be rsa, ec or ec384\n")
            return 2
        }
        guard let out = opts["out"] else {
            printError("mint-token: --new-jwk needs --out PATH for the private key\n")
            return 2
        }
        do {
            let key = try JWKKeyBuilder.generate(kind, kid: opts["kid"])
            let priv = try JSONSerialization.data(withJSONObject: key.privateJSON, options: [.sortedKeys])
            guard FileManager.default.createFile(atPath: out, contents: priv, attributes: [.posixPermissions: 0o600]) else {
                throw AuthConfigurationError("cannot write \(out)")
            }
            let set = try JSONSerialization.data(withJSONObject: ["keys": [key.publicJSON]], options: [.sortedKeys])
            print(String(decoding: set, as: UTF8.self))
            return 0
        } catch {
            printError("mint-token: \(error)\n")
            return 2
        }
    }
}
