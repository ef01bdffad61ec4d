import Foundation

/// Runs a command-line tool (promtool, the relay binary's subcommands) to completion and
/// returns its exit status and combined stdout + stderr.
public enum ToolProcess {
    /// The finished run.
    public struct Result {
        public var status: Int32
        public var output: String
    }

    /// Runs `executable` with `arguments`, feeding `input` on stdin (empty when nil), in
    /// `directory` (the current one when nil).
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
        if let environment { p.environment = environment }
        let outURL = FileManager.default.temporaryDirectory.appendingPathComponent("tool-\(UUID().uuidString.prefix(8)).out")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: outURL) }
        let out = try FileHandle(forWritingTo: outURL)
        p.standardOutput = out
        p.standardError = out
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
        let text = (try? String(contentsOf: outURL, encoding: .utf8)) ?? ""
        return Result(status: p.terminationStatus, output: text)
    }
}
