import Foundation

/// The environment every child process of the tests gets (relays, redis, nginx, the
/// `chat`/`mint-token` subcommands, promtool, the bench tool): `PATH`, `HOME`, `TMPDIR`
/// and `LANG` only, plus what the test sets. Never the test runner's own environment, so
/// an ambient `RELAY_ADMIN_KEY`, `RELAY_LOSSLESS_RESUME` or `REDIS_URL` cannot change
/// what a test tests (docs/TESTING.md "Child processes are hermetic").
public enum ChildEnvironment {
    /// The variables passed through from the runner (when set there).
    public static let passedThrough = ["PATH", "HOME", "TMPDIR", "LANG"]

    /// The minimal environment with `extra` on top (`extra` wins).
    public static func minimal(_ extra: [String: String] = [:]) -> [String: String] {
        let parent = ProcessInfo.processInfo.environment
        var e: [String: String] = [:]
        for k in passedThrough { if let v = parent[k] { e[k] = v } }
        e["PATH"] = e["PATH"] ?? "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
        e["TMPDIR"] = e["TMPDIR"] ?? NSTemporaryDirectory()
        for (k, v) in extra { e[k] = v }
        return e
    }
}
