import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 server on 127.0.0.1 (ephemeral port) standing in for an LLM API in tests.
///
/// Each request path selects a `FakeUpstreamServer.Script` (unknown paths get 404). The
/// server runs one accept thread and one thread per connection, plays the script step by step
/// (status line and headers, body pieces each written at once, pauses, stalls, hang-ups), and
/// records what it saw: each request, and when a client closed a connection the script was
/// holding open. Keep-alive: after a chunked response that ends normally the connection
/// waits for a next request.
public final class FakeUpstreamServer: @unchecked Sendable {
    /// A header field of a scripted head.
    public struct Header: Sendable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) { self.name = name; self.value = value }
    }

    /// One step of a response script.
    public enum Step: Sendable {
        /// Status line and headers. `chunked`: `Transfer-Encoding: chunked` (each `send` is one
        /// chunk); otherwise `Connection: close` and the body ends when the server closes.
        /// `cacheControl`: the `Cache-Control` value sent.
        /// `headers`: more header fields, in order.
        case head(status: Int, contentType: String, chunked: Bool = true, cacheControl: String = "no-cache",
                  headers: [Header] = [])
        /// Body bytes, written in one `send` (one HTTP chunk when chunked).
        case send([UInt8])
        /// Body bytes written in pieces of `pieceSize`, `pauseMs` apart.
        case trickle([UInt8], pieceSize: Int, pauseMs: Int)
        /// Writes `line` over and over (no pause) until `totalBytes` are sent or the client
        /// closes the connection.
        case flood(line: [UInt8], totalBytes: Int)
        /// Sleeps.
        case pause(ms: Int)
        /// Closes the connection at once, without ending a chunked body.
        case hangUp
        /// Writes nothing more and waits until the client closes (recorded), at most 30 s.
        case holdOpen
    }

    /// A response: steps played in order; a script whose last step is not `hangUp`/`holdOpen`
    /// ends its body normally (terminal chunk when chunked, else close).
    public struct Script: Sendable {
        public var steps: [Step]
        public init(_ steps: [Step]) { self.steps = steps }
    }

    /// What the server received.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        /// Header names lowercased.
        public var headers: [String: String]
        public var body: [UInt8]
        /// Which accepted connection (0, 1, …) carried it.
        public var connection: Int

        /// The body as a JSON object.
        public var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
        }
    }

    /// A client closing a connection that a `holdOpen`/`flood` step was waiting on.
    public struct ClientClose: Sendable {
        public var path: String
        /// `DispatchTime.now().uptimeNanoseconds` when the server saw the close.
        public var atNanos: UInt64
    }

    private struct State {
        var requests: [Request] = []
        var closes: [ClientClose] = []
        public var connections = 0
        var stopping = false
        var routes: [String: Script] = [:]
        var responders: [String: @Sendable (Request) -> Script] = [:]
    }

    /// The TCP port (127.0.0.1).
    public let port: Int
    private let listenFD: Int32
    private let state = Mutex(State())
    private let closeSignal = DispatchSemaphore(value: 0)
    private let acceptDone = DispatchSemaphore(value: 0)

    /// `http://127.0.0.1:<port>`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts listening and accepting.
    public init(routes: [String: Script]) throws {
        state.withLock { $0.routes = routes }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else { close(fd); throw POSIXError(.EADDRINUSE) }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        port = Int(UInt16(bigEndian: addr.sin_port))
        listenFD = fd
        let t = Thread { [self] in acceptLoop() }
        t.name = "fake-upstream-accept"
        t.start()
    }

    /// Stops accepting and waits for the accept thread; connection threads end by themselves.
    public func stop() {
        let already = state.withLock { s -> Bool in
            defer { s.stopping = true }
            return s.stopping
        }
        if already { return }
        acceptDone.wait()
        close(listenFD)
    }

    deinit { stop() }

    /// Replaces (or with nil removes) the script of `path`, for requests from now on
    /// (e.g. a JWKS whose keys rotate during a test).
    public func setRoute(_ path: String, _ script: Script?) {
        state.withLock { $0.routes[path] = script }
    }

    /// Makes the script of `path` from each request (e.g. a stream sized by the body's
    /// `max_tokens`); takes precedence over a fixed route. `nil` removes it.
    public func setResponder(_ path: String, _ make: (@Sendable (Request) -> Script)?) {
        state.withLock { $0.responders[path] = make }
    }

    /// Requests received so far, in order.
    public var requests: [Request] { state.withLock { $0.requests } }
    /// Connections accepted so far.
    public var connectionCount: Int { state.withLock { $0.connections } }
    /// Client closes observed so far.
    public var closes: [ClientClose] { state.withLock { $0.closes } }

    /// Waits until the server has seen `count` client closes, or `timeout` seconds passed.
    /// - Returns: the closes seen.
    public func waitForCloses(_ count: Int = 1, timeout: Double = 5) -> [ClientClose] {
        let deadline = DispatchTime.now() + timeout
        while closes.count < count {
            if closeSignal.wait(timeout: deadline) == .timedOut { break }
        }
        return closes
    }

    // MARK: threads

    private var isStopping: Bool { state.withLock { $0.stopping } }

    private func acceptLoop() {
        defer { acceptDone.signal() }
        while !isStopping {
            var p = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 50) > 0 else { continue }
            let c = accept(listenFD, nil, nil)
            guard c >= 0 else { continue }
            var one: Int32 = 1
            setsockopt(c, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let n = state.withLock { s -> Int in
                defer { s.connections += 1 }
                return s.connections
            }
            let t = Thread { [self] in serve(c, connection: n) }
            t.name = "fake-upstream-conn-\(n)"
            t.start()
        }
    }

    private func serve(_ fd: Int32, connection: Int) {
        defer { close(fd) }
        var buffer: [UInt8] = []
        while let req = readRequest(fd, connection: connection, buffer: &buffer) {
            state.withLock { $0.requests.append(req) }
            // A responder or route for the exact request-target, else for its path without the query.
            let bare = String(req.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
            guard let script = state.withLock({
                $0.responders[req.path]?(req) ?? $0.routes[req.path] ?? $0.responders[bare]?(req) ?? $0.routes[bare]
            }) else {
                let body = Array("{\"error\":{\"type\":\"not_found\",\"message\":\"no fixture at \(req.path)\"}}".utf8)
                writeAll(fd, Array("HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
                continue
            }
            guard play(script, on: fd, path: req.path) else { return }
        }
    }

    /// Plays `script`; returns `true` when the connection may serve another request.
    private func play(_ script: Script, on fd: Int32, path: String) -> Bool {
        var chunked = false
        for step in script.steps {
            switch step {
            case .head(let status, let contentType, let ch, let cacheControl, let more):
                chunked = ch
                var h = "HTTP/1.1 \(status) \(Self.reason(status))\r\nContent-Type: \(contentType)\r\nCache-Control: \(cacheControl)\r\n"
                for f in more { h += "\(f.name): \(f.value)\r\n" }
                h += ch ? "Transfer-Encoding: chunked\r\n" : "Connection: close\r\n"
                guard writeAll(fd, Array((h + "\r\n").utf8)) else { return false }
            case .send(let bytes):
                guard sendBody(fd, bytes, chunked: chunked) else { return noteClose(path) }
            case .trickle(let bytes, let size, let pauseMs):
                var i = 0
                while i < bytes.count {
                    let j = min(bytes.count, i + size)
                    guard sendBody(fd, Array(bytes[i..<j]), chunked: chunked) else { return noteClose(path) }
                    i = j
                    if pauseMs > 0 { usleep(UInt32(pauseMs * 1000)) }   // pacing on purpose: the scripted upstream trickles
                }
            case .flood(let line, let total):
                var sent = 0
                var block: [UInt8] = []
                while block.count < 64 * 1024 { block += line }
                while sent < total {
                    guard sendBody(fd, block, chunked: chunked) else { return noteClose(path) }
                    sent += block.count
                }
            case .pause(let ms):
                usleep(UInt32(ms * 1000))   // pacing on purpose: the scripted upstream's pause
            case .hangUp:
                return false
            case .holdOpen:
                waitForPeerClose(fd)
                return noteClose(path)
            }
        }
        if chunked {
            return writeAll(fd, Array("0\r\n\r\n".utf8))
        }
        return false
    }

    private func noteClose(_ path: String) -> Bool {
        state.withLock { $0.closes.append(ClientClose(path: path, atNanos: DispatchTime.now().uptimeNanoseconds)) }
        closeSignal.signal()
        return false
    }

    /// Blocks until the peer closes (read returns 0 or fails), at most 30 s.
    private func waitForPeerClose(_ fd: Int32) {
        let deadline = DispatchTime.now() + 30
        var scratch = [UInt8](repeating: 0, count: 4096)
        while DispatchTime.now() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let r = poll(&p, 1, 1000)
            if r < 0 { return }
            if r == 0 { continue }
            let n = recv(fd, &scratch, scratch.count, 0)
            if n <= 0 { return }
        }
    }

    private func sendBody(_ fd: Int32, _ bytes: [UInt8], chunked: Bool) -> Bool {
        if bytes.isEmpty { return true }
        if !chunked { return writeAll(fd, bytes) }
        return writeAll(fd, Array((String(bytes.count, radix: 16) + "\r\n").utf8) + bytes + [13, 10])
    }

    @discardableResult
    private func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + off, bytes.count - off, Int32(MSG_NOSIGNAL)) }
            if n <= 0 {
                if n < 0 && errno == EINTR { continue }
                return false
            }
            off += n
        }
        return true
    }

    /// Reads one request (head + `Content-Length` body); `nil` at EOF or on garbage.
    private func readRequest(_ fd: Int32, connection: Int, buffer: inout [UInt8]) -> Request? {
        let crlf2: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            if headEnd == nil, buffer.count >= 4 {
                for i in 0...(buffer.count - 4) where buffer[i..<(i + 4)].elementsEqual(crlf2) {
                    headEnd = i
                    break
                }
            }
            if let h = headEnd {
                let head = String(decoding: buffer[..<h], as: UTF8.self)
                var lines = head.components(separatedBy: "\r\n")
                let requestLine = lines.removeFirst().split(separator: " ")
                guard requestLine.count >= 2 else { return nil }
                var headers: [String: String] = [:]
                for l in lines {
                    guard let c = l.firstIndex(of: ":") else { continue }
                    headers[l[..<c].lowercased()] = l[l.index(after: c)...].trimmingCharacters(in: .whitespaces)
                }
                let length = Int(headers["content-length"] ?? "0") ?? 0
                if buffer.count >= h + 4 + length {
                    let body = Array(buffer[(h + 4)..<(h + 4 + length)])
                    buffer.removeFirst(h + 4 + length)
                    return Request(method: String(requestLine[0]), path: String(requestLine[1]),
                                   headers: headers, body: body, connection: connection)
                }
            }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let r = poll(&p, 1, 100)
            if r == 0 {
                if isStopping { return nil }
                continue
            }
            let n = recv(fd, &scratch, scratch.count, 0)
            if n <= 0 { return nil }
            buffer += scratch[0..<n]
        }
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 401: return "Unauthorized"
        case 404: return "Not Found"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 502: return "Bad Gateway"
        case 529: return "Overloaded"
        default: return "Status"
        }
    }
}
