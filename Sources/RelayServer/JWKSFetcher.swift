import Foundation
import RelayAuth
import RelayConfiguration
import RelayLoop
import RelayUpstream

/// The one fetcher of the relay's JSON Web Key Set (docs/TOKENS.md), on worker 0's loop.
///
/// * Fetches `RELAY_JWT_JWKS_URL` with a `GET` through a `CurlMulti` on the loop (libcurl's
///   multi interface driven by libevent, the same plumbing as the upstreams: nothing
///   blocks), with `RELAY_JWT_JWKS_TIMEOUT` as the whole-transfer timeout; `file://` URLs
///   go through libcurl's `file` protocol.
/// * A `200` whose body is a usable set (``JWKSnapshot``) is installed in the shared
///   ``JWKSKeyStore``; workers read it from there (immutable snapshots, swapped atomically).
/// * The next refresh follows ``JWKSRefreshPolicy``: `Cache-Control: max-age`, else
///   `RELAY_JWT_JWKS_REFRESH`; failures retry sooner, and before the first set with a
///   backoff capped at 2 s.
/// * Requests waiting for an unknown `kid` (``JWKSKeyWait`` on every worker) want a fetch
///   through the store's refetch handler; it starts when ``UnknownKidRefetch`` allows
///   (`RELAY_JWT_JWKS_UNKNOWN_KID_INTERVAL` after the previous start), never two at once.
///   Every fetch, whatever its cause, tells the store when it starts and ends, and the
///   store wakes the waiting requests of every worker.
/// * A failed fetch keeps the last good set, counts `relay_jwks_fetches_total{result="error"}`
///   and is logged once per run of failures (and once when fetching works again).
///
/// Confined to the loop's thread; `@unchecked Sendable` solely so the store's refetch
/// handler (called on any worker) can `post` back to this loop.
final class JWKSFetcher: UpstreamTransferDelegate, @unchecked Sendable {
    private let loop: EventLoop
    private let store: JWKSKeyStore
    private let metrics: Metrics
    private let url: String
    private let timeoutMs: Int
    private let policy: JWKSRefreshPolicy
    private let multi: CurlMulti
    private var timer: LoopTimer?
    /// Starts the fetch that waiting requests want, when the interval allows.
    private var wantedTimer: LoopTimer?
    private var transfer: UpstreamTransfer?
    private var body: [UInt8] = []
    private var failures = 0
    private var stopped = false

    /// - Throws: `CurlError` when libcurl cannot be set up.
    init(loop: EventLoop, store: JWKSKeyStore, metrics: Metrics, config: RelayConfig, url: String) throws {
        self.loop = loop
        self.store = store
        self.metrics = metrics
        self.url = url
        timeoutMs = config.jwtJWKSTimeoutMs
        policy = JWKSRefreshPolicy(refreshMs: config.jwtJWKSRefreshMs, minimumIntervalMs: config.jwtJWKSMinIntervalMs)
        multi = try CurlMulti(loop: loop)
        timer = LoopTimer(loop: loop) { [unowned self] in self.fetch() }
        wantedTimer = LoopTimer(loop: loop) { [unowned self] in self.fetchWanted() }
    }

    /// Starts fetching (at once) and accepts unknown-`kid` refetch requests. Loop thread.
    func start() {
        // Runs on the worker whose request made a fetch wanted (once per wanted fetch).
        store.setRefetchHandler { [loop, weak self] in
            loop.post { [weak self] in self?.fetchWanted() }
        }
        fetch()
    }

    /// Stops: aborts a fetch in flight, cancels the timer, drops the refetch handler.
    func stop() {
        stopped = true
        store.setRefetchHandler(nil)
        timer?.cancel()
        timer = nil
        wantedTimer?.cancel()
        wantedTimer = nil
        transfer?.abort()
        transfer = nil
    }

    /// Waiting requests want a fetch: now, or once the interval since the last start passed.
    /// Nothing when one is in flight (its end wakes them; those it does not answer want the next).
    private func fetchWanted() {
        guard !stopped, transfer == nil, let inMs = store.wantedFetchInMs() else { return }
        if inMs == 0 { return fetch() }
        wantedTimer?.schedule(afterMs: UInt64(inMs))
    }

    private func fetch() {
        guard !stopped, transfer == nil else { return }
        timer?.cancel()
        wantedTimer?.cancel()
        if store.fetchStarted() { metrics.add(.jwksUnknownKidRefetches) }
        body.removeAll(keepingCapacity: true)
        let isFile = url.hasPrefix("file://")
        let request = UpstreamTransfer.Request(
            url: url, headers: ["Accept: application/jwk-set+json, application/json"], body: [],
            connectTimeoutMs: min(timeoutMs, 10_000), noProxy: isLoopbackHTTP ? "*" : nil,
            get: true, timeoutMs: timeoutMs, protocols: isFile ? "file" : (url.hasPrefix("https://") ? "https" : "http"))
        do {
            let t = try UpstreamTransfer(request: request, multi: multi)
            t.delegate = self
            transfer = t
            try t.start()
        } catch {
            transfer = nil
            failed("cannot start the fetch: \(error)")
        }
    }

    /// Plain http is only allowed to loopback (config check): never through a proxy.
    private var isLoopbackHTTP: Bool { url.hasPrefix("http://") }

    // MARK: UpstreamTransferDelegate

    func transfer(_ transfer: UpstreamTransfer, didReceive bytes: UnsafeRawBufferPointer) -> Bool {
        guard body.count + bytes.count <= JWKSet.maxDocumentBytes else {
            self.transfer = nil
            failed("JWKS document larger than \(JWKSet.maxDocumentBytes) bytes")
            return false
        }
        body.append(contentsOf: bytes)
        return true
    }

    func transfer(_ transfer: UpstreamTransfer, didCompleteWith completion: UpstreamTransfer.Completion) {
        self.transfer = nil
        switch completion {
        case .failed(let code, let message):
            failed("fetch failed (curl \(code)): \(message)")
        case .finished(let status):
            // libcurl's file protocol has no status (0).
            guard status == 200 || (status == 0 && url.hasPrefix("file://")) else {
                failed("HTTP status \(status)")
                return
            }
            do {
                let snapshot = try JWKSnapshot(document: body)
                succeeded(snapshot, cacheControl: transfer.responseHeader("Cache-Control"))
            } catch {
                failed("\(error)")
            }
        }
    }

    // MARK: outcomes

    private func succeeded(_ snapshot: JWKSnapshot, cacheControl: String?) {
        let first = !store.hasKeys
        store.install(snapshot)
        store.fetchEnded(installed: true)
        metrics.add(.jwksFetchesOK)
        metrics.set(.jwksKeys, snapshot.keySet.keys.count)
        let next = policy.nextRefreshMs(cacheControl: cacheControl)
        if first || failures > 0 {
            var fields: [String: Any] = ["keys": snapshot.kids.joined(separator: ","), "next_refresh_ms": next]
            if !snapshot.keySet.skipped.isEmpty { fields["skipped"] = snapshot.keySet.skipped.map(\.description).joined(separator: "; ") }
            Log.info(first ? "JWKS loaded" : "JWKS fetch works again", fields)
        }
        failures = 0
        timer?.schedule(afterMs: UInt64(next))
    }

    private func failed(_ reason: String) {
        store.fetchEnded(installed: false)
        failures += 1
        metrics.add(.jwksFetchesFailed)
        let haveSet = store.hasKeys
        let retry = policy.retryMs(consecutiveFailures: failures, haveSet: haveSet)
        if failures == 1 {
            Log.warn(haveSet ? "JWKS refresh failed; keeping the last good key set" : "JWKS fetch failed; not ready until a key set is loaded",
                     ["url": url, "reason": reason, "retry_ms": retry])
        }
        guard !stopped else { return }
        timer?.schedule(afterMs: UInt64(retry))
    }
}
