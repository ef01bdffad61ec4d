import Foundation

/// Runs a command-line tool (promtool, the relay binary's subcommands) to completion and
/// returns its exit status, stdout and stderr.
public enum ToolProcess {
    /// The finished run.
    public struct Result {
        public var status: Int32
        public var stdout: String
        public var stderr: String
        /// stdout as bytes (for binary output, e.g. a signature).
        public var stdoutData: Data
        /// stdout then stderr, for assertion messages and tools that mix them.
        public var output: String { stdout + stderr }
    }

    /// Runs `executable` with `arguments`, feeding `input` on stdin (empty when nil), in
    /// `directory` (the current one when nil), with `environment` (the minimal
    /// `ChildEnvironment` when nil; never the runner's own).
    /// - Throws: `TestFailure` when it cannot start or runs longer than `timeout` seconds
    ///   (it is then killed).
    public static func run(_ executable: String, _ arguments: [String], input: Data? = nil,
                           directory: URL? = nil, environment: [String: String]? = nil,
                           timeout: Double = 30) throws -> Result {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw TestFailure("\(executable) is not installed (scripts/install-deps.sh installs it)")
        }
        // `Spawn`, not `Foundation.Process`: its exit detection can miss an exit (`Spawn`).
        let r = try Spawn.run(executable, arguments, environment: environment ?? ChildEnvironment.minimal(),
                              input: input ?? Data(), directory: directory?.path, timeout: timeout)
        return Result(status: r.status, stdout: String(decoding: r.stdout, as: UTF8.self),
                      stderr: String(decoding: r.stderr, as: UTF8.self), stdoutData: r.stdout)
    }
}
