import Foundation
import RelayAuth
import RelayTestKit

/// A `stream-relay serve` process for integration tests, on an ephemeral port of
/// 127.0.0.1. The port is read from its `listening` log line.
public final class RelayProcess: @unchecked Sendable {
    /// The HS256 secret every test relay and token use.
    public static let secret = "integration-test-secret-0123456789abcdef"

    public let port: Int
    public let process: Process
    private let logURL: URL

    /// Starts a relay against `redis` (`REDIS_URL`, or nil for the private default)
    /// with extra environment variables on top of `ChildEnvironment.minimal()`, and waits
    /// until it listens and is ready. A variable set to "" in `env` is passed as empty.
    /// `openFileLimit` starts it under `prlimit --nofile=N:N` (its `RLIMIT_NOFILE`, soft and
    /// hard, from its first instruction; prlimit(1) executes the relay in its own process).
    public init(redisURL: String?, env: [String: String] = [:], waitReady: Bool = true, openFileLimit: Int? = nil) throws {
        // A minimal, explicit environment (ChildEnvironment): nothing ambient leaks in.
        // RELAY_JWT_SECRET unless the test configures a public key instead.
        var e = ChildEnvironment.minimal(["RELAY_LISTEN": "127.0.0.1:0", "RELAY_WORKERS": "2"])
        if env["RELAY_JWT_PUBLIC_KEY"] == nil { e["RELAY_JWT_SECRET"] = RelayProcess.secret }
        if let r = redisURL { e["REDIS_URL"] = r }
        for (k, v) in env { e[k] = v }
        let p = Process()
        if let n = openFileLimit {
            p.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
            p.arguments = ["--nofile=\(n):\(n)", "--", TestPaths.relayBinary, "serve"]
        } else {
            p.executableURL = URL(fileURLWithPath: TestPaths.relayBinary)
            p.arguments = ["serve"]
        }
        p.environment = e
        logURL = FileManager.default.temporaryDirectory.appendingPathComponent("relay-\(UUID().uuidString.prefix(8)).log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let h = try FileHandle(forWritingTo: logURL)
        p.standardError = h
        p.standardOutput = h
        try p.run()
        process = p
        var found: Int?
        let log = logURL
        pollUntil(timeout: 15) {
            if let text = try? String(contentsOf: log, encoding: .utf8) {
                for line in text.split(separator: "\n") where line.contains("\"msg\":\"listening\"") {
                    if let data = line.data(using: .utf8),
                       let obj = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                       let port = obj["port"] as? Int {
                        found = port
                    }
                }
            }
            return found != nil || !p.isRunning
        }
        guard let port = found else {
            p.terminate()
            throw TestFailure("relay did not start: \((try? String(contentsOf: logURL, encoding: .utf8)) ?? "")")
        }
        self.port = port
        if waitReady {
            guard pollUntil(timeout: 10, { (try? HTTPClient.request(port: port, method: "GET", path: "/readyz"))?.status == 200 }) else {
                throw TestFailure("relay never became ready")
            }
        }
    }

    /// The relay's stderr so far.
    public var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    /// Sends SIGTERM (graceful drain) and waits up to `timeout` seconds for the exit.
    @discardableResult
    public func terminate(timeout: Double = 40) -> Int32? {
        guard process.isRunning else { return process.terminationStatus }
        process.terminate()
        return waitExit(timeout)
    }

    /// Sends SIGKILL and waits for the exit.
    public func kill9() {
        guard process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        _ = waitExit(10)
    }

    private func waitExit(_ timeout: Double) -> Int32? {
        let p = process
        pollUntil(timeout: timeout, every: 0.01) { !p.isRunning }
        return process.isRunning ? nil : process.terminationStatus
    }

    deinit {
        if process.isRunning { kill9() }
        try? FileManager.default.removeItem(at: logURL)
    }

    /// A signed HS256 token for `sub`/`sid` (valid `ttl` seconds).
    public static func token(sub: String = "alice", sid: String = "s-" + UUID().uuidString, tier: String? = nil, ttl: Int = 3600) -> String {
        try! TokenMinter.hs256(secret: Array(secret.utf8), sub: sub, sid: sid, tier: tier, ttlSeconds: ttl,
                               now: Int64(Date().timeIntervalSince1970))
    }
}
