import Foundation

/// A private `redis-server` on a Unix socket in a fresh temp directory, for laptops
/// and demos when no `REDIS_URL` is set (docs/CONFIGURATION.md). No persistence; stopped (and
/// the directory removed) by `stop()`.
final class PrivateRedis {
    let directory: URL
    let socketPath: String
    private let process: Process

    /// Starts `redis-server` and waits (up to 5 s) until its socket answers.
    /// - Throws: `PrivateRedisError` when the binary is missing or does not come up.
    init() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stream-relay-redis-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        directory = dir
        socketPath = dir.appendingPathComponent("redis.sock").path
        guard let exe = PrivateRedis.find("redis-server") else {
            throw PrivateRedisError("redis-server not found on PATH; install it (apt-get install redis-server) or set REDIS_URL")
        }
        process = Process()
        let args = ["--port", "0", "--unixsocket", socketPath, "--unixsocketperm", "700",
                             "--save", "", "--appendonly", "no", "--dir", dir.path, "--daemonize", "no",
                             "--loglevel", "warning"]
        // With util-linux's setpriv, the server gets SIGTERM when the relay dies, even
        // by SIGKILL (prctl PR_SET_PDEATHSIG), instead of living on as an orphan.
        if let setpriv = PrivateRedis.find("setpriv") {
            process.executableURL = URL(fileURLWithPath: setpriv)
            process.arguments = ["--pdeathsig", "TERM", exe] + args
        } else {
            process.executableURL = URL(fileURLWithPath: exe)
            process.arguments = args
        }
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if PrivateRedis.canConnect(socketPath) { return }
            if !process.isRunning { break }
            usleep(20_000)
        }
        stop()
        throw PrivateRedisError("redis-server did not start on \(socketPath)")
    }

    /// Stops the server and removes its directory.
    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") + ["/usr/sbin", "/usr/bin"] {
            let p = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    static func canConnect(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return false }
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            for (i, b) in bytes.enumerated() { p[i] = b }
        }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }
}

struct PrivateRedisError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
