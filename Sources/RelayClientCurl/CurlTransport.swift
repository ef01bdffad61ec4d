import Foundation
import CCurl
import RelayClient

/// A `RelayTransport` on libcurl for the Linux CLI (`stream-relay chat`): each exchange
/// runs on its own thread, blocked in `curl_multi_poll(3)` until bytes arrive, so a
/// streamed answer costs one wake-up per network read — FoundationNetworking's
/// `URLSession` costs about ten thread wake-ups per event.
///
/// Not for iOS apps (libcurl is not an Apple SDK library): `URLSessionTransport` stays the
/// kit's default. HTTP/1.1, no redirects, `http`/`https` only; a stream fails when no
/// byte arrives for `TransportRequest.timeoutMs` (the relay's heartbeats keep it alive).
public struct CurlTransport: RelayTransport {
    /// Connection establishment limit, ms.
    public var connectTimeoutMs: Int

    public init(connectTimeoutMs: Int = 10_000) {
        self.connectTimeoutMs = connectTimeoutMs
    }

    public func stream(_ request: TransportRequest, onEvent: @escaping @Sendable (ConnectionEvent) -> Void) -> any TransportConnection {
        let x = CurlExchange(request: request, connectTimeoutMs: connectTimeoutMs, wholeTimeout: false, onEvent: onEvent)
        x.start()
        return x
    }

    /// - Throws: `TransportFailure`: refused, host not found, timed out (`timeoutMs`), unreachable, or other.
    public func fetch(_ request: TransportRequest) async throws -> (status: Int, body: Data) {
        let collected = CurlCollector()
        return try await withCheckedThrowingContinuation { (c: CheckedContinuation<(status: Int, body: Data), Error>) in
            let x = CurlExchange(request: request, connectTimeoutMs: connectTimeoutMs, wholeTimeout: true,
                                 onFailure: { collected.failure = $0 }) { event in
                switch event {
                case .response(let status, _, _): collected.status = status
                case .data(let d): collected.body.append(d)
                case .end(let error):
                    if let error { c.resume(throwing: collected.failure ?? TransportFailure(kind: .other, detail: error)) }
                    else { c.resume(returning: (collected.status, collected.body)) }
                }
            }
            x.start()
        }
    }
}

/// The response of a one-shot request as it arrives (touched only on its exchange's thread).
private final class CurlCollector: @unchecked Sendable {
    var status = 0
    var body = Data()
    var failure: TransportFailure?
}

/// One HTTP exchange: an easy handle in its own multi handle, both owned by this object
/// and used only on the thread `start()` creates (the C handles never leave it). `cancel()`
/// may be called from any thread: it sets a flag and wakes the thread
/// (`curl_multi_wakeup(3)`, thread-safe), which then aborts the transfer.
final class CurlExchange: TransportConnection, @unchecked Sendable {
    private static let globalInit: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

    private let request: TransportRequest
    private let connectTimeoutMs: Int
    private let wholeTimeout: Bool
    private let onEvent: @Sendable (ConnectionEvent) -> Void
    private let onFailure: (@Sendable (TransportFailure) -> Void)?
    private let lock = NSLock()
    private var cancelled = false
    private var multi: UnsafeMutableRawPointer?

    // Exchange-thread state.
    private var status = 0
    private var contentType: String?
    private var retryAfter: String?
    private var responseSent = false

    /// `onFailure` gets the classified failure of a failed exchange just before its `end`.
    init(request: TransportRequest, connectTimeoutMs: Int, wholeTimeout: Bool,
         onFailure: (@Sendable (TransportFailure) -> Void)? = nil, onEvent: @escaping @Sendable (ConnectionEvent) -> Void) {
        self.request = request
        self.connectTimeoutMs = connectTimeoutMs
        self.wholeTimeout = wholeTimeout
        self.onFailure = onFailure
        self.onEvent = onEvent
    }

    func start() {
        let t = Thread { [self] in run() }
        t.name = "relay-curl"
        t.stackSize = 256 * 1024
        t.start()
    }

    func cancel() {
        lock.withLock {
            cancelled = true
            if let m = multi { _ = curl_multi_wakeup(m) }
        }
    }

    private var isCancelled: Bool { lock.withLock { cancelled } }

    private func run() {
        guard Self.globalInit == CURLE_OK, let easy = curl_easy_init(), let m = curl_multi_init() else {
            onEvent(.end(error: "libcurl could not be initialised"))
            return
        }
        lock.withLock { multi = m }
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        var headers: UnsafeMutablePointer<curl_slist>?
        defer {
            lock.withLock { multi = nil }
            curl_multi_remove_handle(m, easy)
            curl_easy_cleanup(easy)
            curl_multi_cleanup(m)
            curl_slist_free_all(headers)
            errorBuffer.deallocate()
        }
        for h in request.headers + [("Expect", "")] {
            // "Name:" removes a header libcurl would add (Expect: 100-continue).
            headers = curl_slist_append(headers, h.value.isEmpty ? "\(h.name):" : "\(h.name): \(h.value)")
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        var rc = CURLE_OK
        func set(_ r: CURLcode) { if rc == CURLE_OK { rc = r } }
        set(sr_easy_setopt_string(easy, CURLOPT_URL, request.url.absoluteString))
        set(sr_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"))
        set(sr_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1))
        set(sr_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0))
        set(sr_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1))
        set(sr_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, connectTimeoutMs))
        set(sr_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1))
        set(sr_easy_setopt_long(easy, CURLOPT_TCP_NODELAY, 1))
        if wholeTimeout {
            set(sr_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(request.timeoutMs)))
        } else {
            // A stream is dead when not one byte arrived for timeoutMs.
            set(sr_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, 1))
            set(sr_easy_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, max(1, Int(request.timeoutMs / 1000))))
        }
        set(sr_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headers))
        switch request.method {
        case "GET": break
        case "POST":
            let body = request.body ?? Data()
            set(sr_easy_setopt_long(easy, CURLOPT_POST, 1))
            set(sr_easy_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            var bytes = [UInt8](body)
            if bytes.isEmpty { bytes = [0] }
            set(bytes.withUnsafeMutableBytes { sr_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, $0.baseAddress) })
        default:
            set(sr_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, request.method))
        }
        set(sr_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer))
        set(sr_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, me))
        set(sr_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, n, userp in
            let x = Unmanaged<CurlExchange>.fromOpaque(userp!).takeUnretainedValue()
            return x.body(UnsafeRawBufferPointer(start: data, count: size * n)) ? size * n : 0
        })
        set(sr_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, me))
        set(sr_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, n, userp in
            let x = Unmanaged<CurlExchange>.fromOpaque(userp!).takeUnretainedValue()
            x.header(UnsafeRawBufferPointer(start: data, count: size * n))
            return size * n
        })
        guard rc == CURLE_OK else {
            onEvent(.end(error: "curl_easy_setopt: \(String(cString: curl_easy_strerror(rc)))"))
            return
        }
        curl_multi_add_handle(m, easy)
        var running: Int32 = 1
        while running > 0 && !isCancelled {
            guard curl_multi_perform(m, &running) == CURLM_OK else { break }
            if running > 0 { _ = curl_multi_poll(m, nil, 0, 1_000, nil) }
        }
        if isCancelled { return onEvent(.end(error: "cancelled")) }
        var result = CURLE_OK
        var left: Int32 = 0
        while let msg = curl_multi_info_read(m, &left) {
            if msg.pointee.msg == CURLMSG_DONE { result = sr_msg_result(msg) }
        }
        if result == CURLE_OK && !responseSent {
            result = CURLE_GOT_NOTHING   // a complete exchange has a response head
        }
        if result == CURLE_OK {
            onEvent(.end(error: nil))
        } else {
            let detail = String(cString: errorBuffer)
            var osErrno = 0
            _ = sr_easy_getinfo_long(easy, CURLINFO_OS_ERRNO, &osErrno)
            let failure = TransportFailure(kind: Self.kind(of: result, osErrno: Int32(truncatingIfNeeded: osErrno)),
                                           detail: detail.isEmpty ? String(cString: curl_easy_strerror(result)) : detail)
            onFailure?(failure)
            onEvent(.end(error: failure.description))
        }
    }

    /// What a libcurl result means for the user (libcurl-errors(3)); `osErrno` is
    /// `CURLINFO_OS_ERRNO`, which tells a refused connection from an unreachable host.
    static func kind(of result: CURLcode, osErrno: Int32) -> TransportFailure.Kind {
        switch result {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return .hostNotFound
        case CURLE_OPERATION_TIMEDOUT: return .timedOut
        case CURLE_COULDNT_CONNECT:
            switch osErrno {
            case ECONNREFUSED: return .refused
            case EHOSTUNREACH, ENETUNREACH, ENETDOWN, EHOSTDOWN: return .unreachable
            case ETIMEDOUT: return .timedOut
            default: return .other
            }
        default:
            return .other
        }
    }

    /// A header line (status lines included, CRLF at the end); the blank line ends a head.
    private func header(_ line: UnsafeRawBufferPointer) {
        let s = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if s.hasPrefix("HTTP/") {
            let parts = s.split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            contentType = nil
            retryAfter = nil
        } else if s.isEmpty {
            // 1xx heads (100 Continue) are followed by the real one.
            if status >= 200 && !responseSent {
                responseSent = true
                onEvent(.response(status: status, contentType: contentType, retryAfter: retryAfter))
            }
        } else if let colon = s.firstIndex(of: ":") {
            let name = s[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = s[s.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if name == "content-type" { contentType = value }
            if name == "retry-after" { retryAfter = value }
        }
    }

    /// Body bytes; `false` aborts the transfer (cancelled).
    private func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if isCancelled { return false }
        if !responseSent {
            responseSent = true
            onEvent(.response(status: status, contentType: contentType, retryAfter: retryAfter))
        }
        if bytes.count > 0 { onEvent(.data(Data(bytes))) }
        return true
    }
}
