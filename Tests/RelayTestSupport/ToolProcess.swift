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
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        if let directory { p.currentDirectoryURL = directory }
        p.environment = environment ?? ChildEnvironment.minimal()
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("tool-\(UUID().uuidString.prefix(8))")
        let outURL = base.appendingPathExtension("out"), errURL = base.appendingPathExtension("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        p.standardOutput = out
        p.standardError = err
        let stdin = Pipe()
        p.standardInput = stdin
        try p.run()
        stdin.fileHandleForWriting.write(input ?? Data())
        try? stdin.fileHandleForWriting.close()
        let until = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < until { usleep(10_000) }
        if p.isRunning {
            p.terminate()
            p.waitUntilExit()
            throw TestFailure("\(executable) \(arguments.joined(separator: " ")) did not finish in \(timeout) s")
        }
        try? out.close()
        try? err.close()
        let outData = (try? Data(contentsOf: outURL)) ?? Data()
        return Result(status: p.terminationStatus,
                      stdout: String(decoding: outData, as: UTF8.self),
                      stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "",
                      stdoutData: outData)
    }
}
