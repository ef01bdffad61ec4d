import Foundation
import RelayTestKit

/// A real `redis-server` for integration tests, on a Unix socket in a fresh temp
/// directory, no persistence. Stopped (and the directory removed) by `stop()`.
public final class RedisServer: @unchecked Sendable {
    public let directory: URL
    public let socketPath: String
    private var process: Process?

    /// `REDIS_URL` for the relay: `unix:///…/redis.sock`.
    public var url: String { "unix://\(socketPath)" }

    /// Starts the server and waits until it answers `PING` (5 s at most).
    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-test-redis-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        socketPath = directory.appendingPathComponent("redis.sock").path
        try start()
    }

    /// (Re)starts the server on the same socket.
    public func start() throws {
        let p = Process()
        // setpriv --pdeathsig: the server dies with the test process even when that is
        // killed, so an interrupted test run leaves no orphan redis-server behind.
        p.executableURL = URL(fileURLWithPath: TestPaths.which("setpriv"))
        p.arguments = ["--pdeathsig", "TERM", TestPaths.which("redis-server"), "--port", "0", "--unixsocket", socketPath,
                       "--save", "", "--appendonly", "no", "--dir", directory.path, "--loglevel", "warning"]
        p.environment = ChildEnvironment.minimal()
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
        guard pollUntil(timeout: 5, { (try? cli("PING")) == "PONG" }) else { throw TestFailure("redis-server did not start") }
    }

    /// Stops the server (SIGTERM) and waits for it.
    public func kill() {
        guard let p = process, p.isRunning else { return }
        p.terminate()
        p.waitUntilExit()
        process = nil
    }

    /// Stops the server and removes its directory.
    public func stop() {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }

    /// Runs one command with `redis-cli` and returns its raw output, trimmed.
    @discardableResult
    public func cli(_ args: String...) throws -> String {
        try cli(args)
    }

    /// Runs one command with `redis-cli` and returns its raw output, trimmed.
    @discardableResult
    public func cli(_ args: [String]) throws -> String {
        try cliRaw(args).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs one command with `redis-cli --raw`; the output without its final newline only.
    /// (`Spawn`, not `Foundation.Process`: see there why.)
    public func cliRaw(_ args: [String]) throws -> String {
        let r = try Spawn.run(TestPaths.which("redis-cli"), ["-s", socketPath, "--raw"] + args,
                              environment: ChildEnvironment.minimal())
        var text = String(decoding: r.stdout, as: UTF8.self)
        if text.hasSuffix("\n") { text.removeLast() }
        return text
    }
}

/// A failure inside test support, with a message.
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ d: String) { description = d }
}

/// Where the test tools live.
public enum TestPaths {
    /// The absolute path of a program on PATH (or /usr/bin, /usr/sbin).
    public static func which(_ name: String) -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for dir in path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/sbin", "/usr/local/bin"] {
            let p = dir + "/" + name
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return "/usr/bin/" + name
    }

    /// The built `stream-relay` executable next to the test bundle (or `$STREAM_RELAY_BIN`).
    public static var relayBinary: String {
        if let b = ProcessInfo.processInfo.environment["STREAM_RELAY_BIN"] { return b }
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("stream-relay").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".build/debug/stream-relay").path
    }
}
