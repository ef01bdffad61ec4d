import Foundation

/// One run of `stream-relay-bench` (the load generator of `make bench`) as a child
/// process, for the tests that drive it against a real relay.
public struct BenchRun {
    /// The process's exit status.
    public let status: Int32
    /// Its stdout lines `RESULT <json>`, each parsed as a JSON object.
    public let results: [[String: Any]]
    /// Its stderr (the parameters and progress it prints).
    public let stderr: String

    /// The bench executable next to the relay binary under test (or `$STREAM_RELAY_BENCH_BIN`).
    public static var binary: String {
        if let b = ProcessInfo.processInfo.environment["STREAM_RELAY_BENCH_BIN"] { return b }
        return URL(fileURLWithPath: TestPaths.relayBinary).deletingLastPathComponent()
            .appendingPathComponent("stream-relay-bench").path
    }

    /// Runs `stream-relay-bench args…` with the test signing secret, waiting up to
    /// `timeout` s.
    /// - Throws: `TestFailure` when the executable is not built, or the run's timeout.
    public static func run(_ args: [String], timeout: Double = 120) throws -> BenchRun {
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw TestFailure("stream-relay-bench not built at \(binary) (swift build builds it)")
        }
        let env = ChildEnvironment.minimal(["RELAY_JWT_SECRET": RelayProcess.secret])
        let run = try ToolProcess.run(binary, args, environment: env, timeout: timeout)
        let results = run.stdout.split(separator: "\n").compactMap { line -> [String: Any]? in
            guard line.hasPrefix("RESULT ") else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(line.dropFirst(7).utf8)) as? [String: Any]
        }
        return BenchRun(status: run.status, results: results, stderr: run.stderr)
    }

    /// The result of `scenario`, from a run that exited 0.
    /// - Throws: `TestFailure` with stderr when the run failed or reported no such result.
    public func result(_ scenario: String) throws -> [String: Any] {
        guard status == 0 else { throw TestFailure("stream-relay-bench exited \(status): \(stderr)") }
        guard let r = results.first(where: { $0["scenario"] as? String == scenario }) else {
            throw TestFailure("no \(scenario) result: \(stderr)")
        }
        return r
    }
}
