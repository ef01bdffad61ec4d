import Foundation
import RelayTestKit

/// Real nginx (Debian's `nginx` binary) as the load balancer in front of test relays:
/// `deploy/nginx.conf` rendered by `scripts/render-nginx-conf.sh` with the given
/// upstreams and a listen address on 127.0.0.1, run with a temp prefix, pid file and
/// error log, `daemon off;`, as a child process. `stop()` ends it (SIGQUIT, then
/// SIGKILL) and removes the directory.
public final class NginxProcess: @unchecked Sendable {
    public let port: Int
    public let directory: URL
    public let process: Process

    /// The repository root (holds `deploy/` and `scripts/`).
    public static var repositoryRoot: URL {
        var dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        for _ in 0..<4 {
            if FileManager.default.fileExists(atPath: dir.appendingPathComponent("deploy/nginx.conf").path) { return dir }
            dir = dir.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    }

    /// `true` when an `nginx` binary is installed.
    public static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: TestPaths.which("nginx"))
    }

    /// Renders the config for `upstreams` (`127.0.0.1:<port>` each), starts nginx on a
    /// free port and waits until `/lb-healthz` answers (10 s at most).
    public convenience init(upstreams: [Int]) throws {
        try self.init { port in
            let render = Process()
            render.executableURL = URL(fileURLWithPath: "/bin/bash")
            render.arguments = [NginxProcess.repositoryRoot.appendingPathComponent("scripts/render-nginx-conf.sh").path,
                                "--listen", "127.0.0.1:\(port)"] + upstreams.map { "127.0.0.1:\($0)" }
            let out = Pipe()
            render.environment = ChildEnvironment.minimal()
            render.standardOutput = out
            let err = Pipe()
            render.standardError = err
            try render.run()
            let text = out.fileHandleForReading.readDataToEndOfFile()
            render.waitUntilExit()
            guard render.terminationStatus == 0 else {
                throw TestFailure("render-nginx-conf.sh failed: \(String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))")
            }
            return String(decoding: text, as: UTF8.self)
        }
    }

    /// A plain reverse proxy to `upstream` with nginx's defaults — what a load balancer
    /// in front of one relay instance does when it is down: `502 Bad Gateway` with nginx's
    /// own HTML page (unlike `deploy/nginx.conf`, which answers in the relay's JSON shape).
    /// `/lb-healthz` answers 200.
    public convenience init(plainProxyTo upstream: Int) throws {
        try self.init { port in
            """
            events { worker_connections 64; }
            http {
                access_log /dev/stdout;
                server {
                    listen 127.0.0.1:\(port);
                    location = /lb-healthz { return 200 "ok\\n"; }
                    location / { proxy_pass http://127.0.0.1:\(upstream); proxy_buffering off; proxy_http_version 1.1; }
                }
            }
            """
        }
    }

    /// Starts nginx on a free port with the config `config(port)` returns and waits until
    /// `/lb-healthz` answers (10 s at most).
    public init(config: (Int) throws -> String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-test-nginx-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try FreePort.find()
        let conf = directory.appendingPathComponent("nginx.conf")
        try Data(try config(port).utf8).write(to: conf)
        let d = directory.path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: TestPaths.which("nginx"))
        // Running as root (CI containers), nginx's workers would switch to `nobody`; keep
        // the current user so the temp prefix stays writable.
        let user = getuid() == 0 ? "user root;" : ""
        p.arguments = ["-p", d + "/", "-e", d + "/error.log", "-c", conf.path, "-g", "pid \(d)/nginx.pid; daemon off; \(user)"]
        _ = FileManager.default.createFile(atPath: d + "/access.log", contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: d + "/access.log"))
        p.environment = ChildEnvironment.minimal()
        p.standardOutput = log   // access_log /dev/stdout
        p.standardError = log    // error_log stderr
        try p.run()
        process = p
        let up = try pollUntil(timeout: 10, every: 0.05) {
            if !p.isRunning { throw TestFailure("nginx exited: \(errorLog)\n\(accessLog.suffix(2000))") }
            return (try? HTTPClient.request(port: port, method: "GET", path: "/lb-healthz", timeout: 2))?.status == 200
        }
        if !up { throw TestFailure("nginx did not start: \(errorLog)") }
    }

    /// nginx's error log (startup) so far.
    public var errorLog: String { (try? String(contentsOfFile: directory.path + "/error.log", encoding: .utf8)) ?? "" }
    /// Access log lines and runtime errors (both go to the child's stdout/stderr).
    public var accessLog: String { (try? String(contentsOfFile: directory.path + "/access.log", encoding: .utf8)) ?? "" }

    /// Graceful stop (SIGQUIT), SIGKILL after 5 s; removes the prefix directory.
    public func stop() {
        if process.isRunning {
            Foundation.kill(process.processIdentifier, SIGQUIT)
            let p = process
            pollUntil(timeout: 5) { !p.isRunning }
            if process.isRunning {
                Foundation.kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

/// A free TCP port on 127.0.0.1 (bind to 0, read it, close).
public enum FreePort {
    public static func find() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p -> Bool in
                bind(fd, p, len) == 0 && getsockname(fd, p, &len) == 0
            }
        }
        guard ok else { throw TestFailure("no free port: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}
