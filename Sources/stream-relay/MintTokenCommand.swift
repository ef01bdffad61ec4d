import Foundation
import RelayAuth

/// `stream-relay mint-token`: signs an HS256 development token with the configured
/// secret (`--secret`, `--secret-file`, or `RELAY_JWT_SECRET`) and prints it.
enum MintTokenCommand {
    static let usage = """
    usage: stream-relay mint-token --sub USER --sid SESSION [--tier TIER] [--ttl SECONDS]
                                   [--secret S | --secret-file PATH]
    Prints an HS256 JWT with claims sub, sid, tier, iat, exp (default ttl 3600 s).
    The secret defaults to RELAY_JWT_SECRET.
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
        guard let sub = opts["sub"], let sid = opts["sid"] else {
            printError("mint-token: --sub and --sid are required\n\(usage)\n")
            return 2
        }
        var secret = opts["secret"] ?? ProcessInfo.processInfo.environment["RELAY_JWT_SECRET"]
        if let f = opts["secret-file"] {
            guard let s = try? String(contentsOfFile: f, encoding: .utf8) else {
                printError("mint-token: cannot read \(f)\n")
                return 2
            }
            secret = s.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let secret else {
            printError("mint-token: no secret (--secret, --secret-file or RELAY_JWT_SECRET)\n")
            return 2
        }
        guard let ttl = Int(opts["ttl"] ?? "3600"), ttl > 0 else {
            printError("mint-token: --ttl must be a positive number of seconds\n")
            return 2
        }
        do {
            let token = try TokenMinter.hs256(secret: Array(secret.utf8), sub: sub, sid: sid, tier: opts["tier"],
                                              ttlSeconds: ttl, now: Int64(Date().timeIntervalSince1970))
            print(token)
            return 0
        } catch {
            printError("mint-token: \(error)\n")
            return 2
        }
    }
}
