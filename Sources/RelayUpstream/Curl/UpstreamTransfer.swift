import CCurl
import RelayLoop

/// Receives an `UpstreamTransfer`'s response, on the loop thread.
public protocol UpstreamTransferDelegate: AnyObject {
    /// The next bytes of the response body, as they arrive (any split: mid-line, mid-UTF-8
    /// character). Called from inside libcurl: do not keep `bytes`. `transfer.responseStatus`
    /// and `transfer.contentType` are already known. Return `false` to abort the transfer at
    /// once (no `didComplete` follows).
    func transfer(_ transfer: UpstreamTransfer, didReceive bytes: UnsafeRawBufferPointer) -> Bool
    /// The transfer ended by itself (not by `abort()`/`drain()`): the response was read to
    /// its end, or it failed. Called once.
    func transfer(_ transfer: UpstreamTransfer, didCompleteWith completion: UpstreamTransfer.Completion)
}

/// One HTTP(S) request/response through libcurl (one easy handle, `CURL *`, owned and freed
/// here) on a `CurlMulti`, with the response body delivered incrementally to a delegate.
/// Confined to the multi's loop thread.
///
/// Settings, for an upstream LLM API:
/// * `POST` of the given body (copied, `CURLOPT_COPYPOSTFIELDS`), given headers, `Expect:`
///   suppressed (no 100-continue round trip); or `GET` (`Request.get`, for a JWKS);
/// * `CURLOPT_CONNECTTIMEOUT_MS` (name resolution + TCP + TLS handshake); no overall timeout
///   unless `Request.timeoutMs` is set, streams are long: the caller watches idleness;
/// * TLS peer and host verification on (`CURLOPT_SSL_VERIFYPEER` 1, `VERIFYHOST` 2) against the
///   system CA store; HTTP/2 over TLS where the server offers it (libcurl's default);
/// * proxies taken from the environment exactly as the curl tool does (`http_proxy`,
///   `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`), as no `CURLOPT_PROXY` is set;
/// * only `http` and `https` unless `Request.protocols` says otherwise; no redirects (a 3xx is a non-2xx answer); `CURLOPT_NOSIGNAL`.
///
/// The delegate is held weakly; the `CurlMulti` holds the transfer while it runs.
public final class UpstreamTransfer {
    /// How a transfer ended by itself.
    public enum Completion: Equatable, Sendable {
        /// The whole response was received; `status` is its HTTP status code.
        case finished(status: Int)
        /// libcurl failed (`code` is the `CURLcode`, e.g. 7 couldn't connect, 28 timeout,
        /// 18 partial file); `message` is libcurl's detailed error text.
        case failed(code: Int, message: String)
    }

    /// What to send.
    public struct Request: Sendable {
        /// Absolute `http://` or `https://` URL.
        public var url: String
        /// Request headers, `"Name: value"`.
        public var headers: [String]
        /// The POST body.
        public var body: [UInt8]
        /// Connect timeout, ms (DNS + TCP + TLS). Default 10,000.
        public var connectTimeoutMs: Int
        /// `CURLOPT_NOPROXY` override (`nil`: libcurl reads `NO_PROXY`/`no_proxy`).
        public var noProxy: String?
        /// `CURLOPT_CAINFO`: a PEM CA bundle to trust instead of the system store (`nil`: system).
        public var caInfo: String?
        /// `GET` instead of `POST` (the body is then ignored); for fetching documents such
        /// as a JWKS (docs/TOKENS.md).
        public var get: Bool
        /// Whole-transfer timeout, ms (`CURLOPT_TIMEOUT_MS`); 0: none (streams are long).
        public var timeoutMs: Int
        /// `CURLOPT_PROTOCOLS_STR`; default `http,https` (`file` for a local JWKS).
        public var protocols: String

        public init(url: String, headers: [String], body: [UInt8], connectTimeoutMs: Int = 10_000,
                    noProxy: String? = nil, caInfo: String? = nil, get: Bool = false, timeoutMs: Int = 0,
                    protocols: String = "http,https") {
            self.url = url
            self.headers = headers
            self.body = body
            self.connectTimeoutMs = connectTimeoutMs
            self.noProxy = noProxy
            self.caInfo = caInfo
            self.get = get
            self.timeoutMs = timeoutMs
            self.protocols = protocols
        }
    }

    private enum State { case idle, running, draining, ended }

    /// The multi handle this transfer runs on.
    public let multi: CurlMulti
    /// Receives the response (weak).
    public weak var delegate: UpstreamTransferDelegate?
    let easy: UnsafeMutableRawPointer
    private let headerList: CurlHeaderList
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var state = State.idle
    private var drainBudget = 0
    private var drainTimer: LoopTimer?
    /// Body bytes received so far.
    public private(set) var bytesReceived = 0

    /// Prepares the easy handle. Nothing is sent before `start()`.
    /// - Throws: `CurlError` when libcurl cannot allocate the handle or refuses an option.
    public init(request: Request, multi: CurlMulti) throws {
        try CurlGlobal.ensure()
        guard let e = curl_easy_init() else { throw CurlError.cannotCreate("curl easy handle") }
        easy = e
        self.multi = multi
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        do {
            headerList = try CurlHeaderList(request.headers + ["Expect:"])
        } catch {
            curl_easy_cleanup(e)
            errorBuffer.deallocate()
            throw error
        }
        try configure(request)
    }

    deinit {
        drainTimer?.cancel()
        curl_easy_cleanup(easy)
        errorBuffer.deallocate()
    }

    private func configure(_ r: Request) throws(CurlError) {
        try check(sr_easy_setopt_string(easy, CURLOPT_URL, r.url), "URL")
        try check(sr_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, r.protocols), "PROTOCOLS_STR")
        try check(sr_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1), "NOSIGNAL")
        try check(sr_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0), "FOLLOWLOCATION")
        try check(sr_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1), "SSL_VERIFYPEER")
        try check(sr_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2), "SSL_VERIFYHOST")
        try check(sr_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, max(1, r.connectTimeoutMs)), "CONNECTTIMEOUT_MS")
        try check(sr_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1), "TCP_KEEPALIVE")
        try check(sr_easy_setopt_long(easy, CURLOPT_TCP_NODELAY, 1), "TCP_NODELAY")
        if let np = r.noProxy { try check(sr_easy_setopt_string(easy, CURLOPT_NOPROXY, np), "NOPROXY") }
        if let ca = r.caInfo { try check(sr_easy_setopt_string(easy, CURLOPT_CAINFO, ca), "CAINFO") }
        try check(sr_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList.pointer), "HTTPHEADER")
        if r.timeoutMs > 0 { try check(sr_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, r.timeoutMs), "TIMEOUT_MS") }
        if r.get {
            try check(sr_easy_setopt_long(easy, CURLOPT_HTTPGET, 1), "HTTPGET")
        } else {
            try configurePOST(r)
        }
        try check(sr_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer), "ERRORBUFFER")
        try configureCallbacks()
    }

    private func configurePOST(_ r: Request) throws(CurlError) {
        try check(sr_easy_setopt_long(easy, CURLOPT_POST, 1), "POST")
        try check(sr_easy_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(r.body.count)), "POSTFIELDSIZE_LARGE")
        // COPYPOSTFIELDS copies POSTFIELDSIZE bytes (set above), so the body may contain NUL;
        // an empty body still needs a valid pointer.
        var body = r.body
        if body.isEmpty { body = [0] }
        let copied = body.withUnsafeMutableBytes { b in
            sr_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, b.baseAddress)
        }
        try check(copied, "COPYPOSTFIELDS")
    }

    private func check(_ rc: CURLcode, _ name: String) throws(CurlError) {
        if rc != CURLE_OK { throw .setopt(option: name, message: String(cString: curl_easy_strerror(rc))) }
    }

    private func configureCallbacks() throws(CurlError) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        try check(sr_easy_setopt_pointer(easy, CURLOPT_PRIVATE, me), "PRIVATE")
        try check(sr_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, me), "WRITEDATA")
        try check(sr_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, n, userp in
            let t = Unmanaged<UpstreamTransfer>.fromOpaque(userp!).takeUnretainedValue()
            let count = size * n
            return t.received(UnsafeRawBufferPointer(start: data, count: count)) ? count : 0
        }, "WRITEFUNCTION")
    }

    /// Sends the request (from the loop: nothing happens before control returns to it).
    /// Call once; later calls do nothing.
    /// - Throws: `CurlError.cannotCreate` when the multi handle refuses the transfer.
    public func start() throws(CurlError) {
        guard state == .idle else { return }
        state = .running
        do {
            try multi.add(self)
        } catch {
            state = .ended
            throw error
        }
    }

    /// Stops at once: the handle leaves the multi. Over HTTP/1.1 libcurl closes the connection
    /// (an unfinished response cannot be reused), so the upstream sees the client go; over
    /// HTTP/2 it resets the stream (`RST_STREAM`) and keeps the shared connection. No delegate
    /// call follows. Safe from delegate callbacks (then done as soon as libcurl returns,
    /// before the loop runs anything else).
    public func abort() {
        guard state == .running || state == .draining else { return }
        state = .ended
        drainTimer?.cancel()
        drainTimer = nil
        multi.remove(self)
    }

    /// Stops delivering: the rest of the response is read and discarded so the connection can
    /// be reused, but the transfer is aborted if more than `maxBytes` arrive or it has not
    /// ended after `timeoutMs`. No delegate call follows.
    public func drain(maxBytes: Int = 64 * 1024, timeoutMs: UInt64 = 2_000) {
        guard state == .running else { return }
        state = .draining
        delegate = nil
        drainBudget = maxBytes
        drainTimer = LoopTimer(loop: multi.loop) { [unowned self] in self.abort() }
        drainTimer?.schedule(afterMs: timeoutMs)
    }

    /// `true` from `start()` until the transfer ended, was aborted or drained.
    public var isRunning: Bool { state == .running }

    /// The HTTP status of the response (0 before its status line arrived).
    public var responseStatus: Int {
        var v = 0
        sr_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &v)
        return v
    }

    /// The value of response header `name` (case-insensitive; the last one when repeated,
    /// `curl_easy_header`), e.g. `Cache-Control`; nil when absent.
    public func responseHeader(_ name: String) -> String? {
        var h: UnsafeMutablePointer<curl_header>?
        guard curl_easy_header(easy, name, 0, UInt32(CURLH_HEADER), -1, &h) == CURLHE_OK, let h, let v = h.pointee.value else {
            return nil
        }
        return String(cString: v)
    }

    /// The response's `Content-Type` header value, if any.
    public var contentType: String? {
        var p: UnsafePointer<CChar>?
        guard sr_easy_getinfo_string(easy, CURLINFO_CONTENT_TYPE, &p) == CURLE_OK, let p else { return nil }
        return String(cString: p)
    }

    // MARK: from libcurl / CurlMulti

    private func received(_ bytes: UnsafeRawBufferPointer) -> Bool {
        switch state {
        case .running:
            bytesReceived += bytes.count
            guard let d = delegate else {
                state = .ended
                multi.remove(self)
                return false
            }
            if d.transfer(self, didReceive: bytes) { return state == .running || state == .draining }
            abort()
            return false
        case .draining:
            drainBudget -= bytes.count
            if drainBudget >= 0 { return true }
            abort()
            return false
        case .idle, .ended:
            return false
        }
    }

    func didComplete(_ c: Completion) {
        let wasRunning = state == .running
        state = .ended
        drainTimer?.cancel()
        drainTimer = nil
        if wasRunning { delegate?.transfer(self, didCompleteWith: c) }
    }
}

extension UpstreamTransfer.Completion {
    init(code: CURLcode, transfer t: UpstreamTransfer) {
        if code == CURLE_OK {
            self = .finished(status: t.responseStatus)
        } else {
            let detail = t.errorText
            self = .failed(code: Int(code.rawValue),
                           message: detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)
        }
    }
}

extension UpstreamTransfer {
    /// libcurl's detailed message for the last failure (`CURLOPT_ERRORBUFFER`), or "".
    var errorText: String { String(cString: errorBuffer) }
}
