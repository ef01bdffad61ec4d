import Foundation
import RelayCore
import RelayHTTP

/// A complete HTTP response read by the test client.
public struct HTTPResponse {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    /// First value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// `error.code` of a JSON error body.
    public var errorCode: String? {
        guard let obj = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let e = obj["error"] as? [String: Any] else { return nil }
        return e["code"] as? String
    }
}

/// A blocking HTTP/1.1 client over a raw TCP socket to 127.0.0.1, for tests that
/// need exact control (dropping a connection mid-stream, malformed requests).
public enum HTTPClient {
    /// Sends one request and reads the whole response (`Connection: close`).
    public static func request(port: Int, method: String, path: String, headers: [(String, String)] = [],
                               body: [UInt8] = [], timeout: Double = 10) throws -> HTTPResponse {
        let c = try SSEConnection(port: port, method: method, path: path, headers: headers, body: body, timeout: timeout)
        defer { c.close() }
        var out: [UInt8] = []
        while let chunk = try c.readBody(timeout: timeout) { out += chunk }
        return HTTPResponse(status: c.status, headers: c.headers, body: out)
    }
}

/// One streaming HTTP exchange: status and headers read at once, then the body
/// (chunked or not) read incrementally and parsed as SSE.
public final class SSEConnection {
    public private(set) var status = 0
    public private(set) var headers: [(String, String)] = []
    /// Heartbeat comments seen.
    public private(set) var comments: [String] = []
    /// `true` once the body has ended (terminal chunk or close).
    public private(set) var ended = false
    /// `true` when a chunked body ended with its last chunk `0\r\n\r\n` (RFC 9112 §7.1), not
    /// by the connection closing or resetting in the middle of it.
    public private(set) var endedWithLastChunk = false
    public var parser = SSEParser()

    private var fd: Int32
    private var buffer: [UInt8] = []
    private var chunked: ChunkedBodyDecoder?
    private var contentLength: Int?
    private var pendingItems: [SSEParser.Item] = []

    /// Connects, sends the request and reads the status line and headers.
    public init(port: Int, method: String, path: String, headers: [(String, String)] = [], body: [UInt8] = [], timeout: Double = 10) throws {
        fd = try LoopbackSocket.connect(port: port)
        var req = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (k, v) in headers { req += "\(k): \(v)\r\n" }
        if !body.isEmpty || method == "POST" { req += "Content-Length: \(body.count)\r\n" }
        req += "\r\n"
        try send(Array(req.utf8) + body)
        try readHead(timeout: timeout)
    }

    deinit { close() }

    private func send(_ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 {
                // The server may answer (413) and close before reading everything:
                // stop sending and read what it said.
                if errno == EPIPE || errno == ECONNRESET { return }
                throw TestFailure("send failed: \(String(cString: strerror(errno)))")
            }
            off += n
        }
    }

    /// Reads more bytes; false at EOF.
    private func fill(timeout: Double) throws -> Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let r = poll(&pfd, 1, Int32(timeout * 1000))
        if r == 0 { throw TestFailure("timed out after \(timeout) s waiting for the relay") }
        var tmp = [UInt8](repeating: 0, count: 65536)
        let n = tmp.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { return false }
        buffer += tmp[0..<n]
        return true
    }

    private func readLine(timeout: Double) throws -> String? {
        while true {
            if let i = buffer.firstIndex(of: 0x0A) {
                var line = Array(buffer[..<i])
                buffer.removeFirst(i + 1)
                if line.last == 0x0D { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            if try !fill(timeout: timeout) { return nil }
        }
    }

    private func readHead(timeout: Double) throws {
        guard let statusLine = try readLine(timeout: timeout) else { throw TestFailure("connection closed before a response") }
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let s = Int(parts[1]) else { throw TestFailure("bad status line: \(statusLine)") }
        status = s
        while let line = try readLine(timeout: timeout), !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let k = String(line[..<colon])
            let v = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers.append((k, v))
        }
        chunked = header("Transfer-Encoding")?.lowercased() == "chunked" ? ChunkedBodyDecoder() : nil
        contentLength = header("Content-Length").flatMap(Int.init)
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// The next piece of the body, or nil at its end.
    public func readBody(timeout: Double) throws -> [UInt8]? {
        if ended { return nil }
        if var decoder = chunked {
            defer { chunked = decoder }
            while true {
                let step = buffer.withUnsafeBytes { decoder.next($0, available: buffer.count) }
                switch step {
                case .needMore:
                    if try !fill(timeout: timeout) { ended = true; return nil }
                case .skip(let n):
                    buffer.removeFirst(n)
                case .data(let n):
                    let out = Array(buffer[..<n])
                    buffer.removeFirst(n)
                    return out
                case .end(let n):
                    buffer.removeFirst(n)
                    ended = true
                    endedWithLastChunk = true
                    return nil
                case .malformed(let why):
                    throw TestFailure("bad chunked body: \(why)")
                }
            }
        }
        if let cl = contentLength, cl <= 0 { ended = true; return nil }
        if buffer.isEmpty, try !fill(timeout: timeout) { ended = true; return nil }
        var out = buffer
        buffer.removeAll()
        if let cl = contentLength {
            out = Array(out.prefix(cl))
            contentLength = cl - out.count
        }
        return out
    }

    /// The next SSE event, or nil when the body ended. Comments are recorded in
    /// `comments` and skipped.
    public func nextEvent(timeout: Double = 10) throws -> SSEMessage? {
        while true {
            while !pendingItems.isEmpty {
                let item = pendingItems.removeFirst()
                switch item {
                case .event(let m): return m
                case .comment(let c): comments.append(c)
                }
            }
            guard let bytes = try readBody(timeout: timeout) else { return nil }
            pendingItems += try parser.feed(bytes)
        }
    }

    /// Every remaining event until the body ends.
    public func readAll(timeout: Double = 30) throws -> [SSEMessage] {
        var out: [SSEMessage] = []
        while let e = try nextEvent(timeout: timeout) { out.append(e) }
        return out
    }

    /// Closes the socket (a client dropping the connection).
    public func close() {
        if fd >= 0 {
            Foundation.close(fd)
            fd = -1
        }
    }
}
