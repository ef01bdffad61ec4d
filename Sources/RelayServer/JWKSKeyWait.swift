import RelayAuth
import RelayCore
import RelayHTTP
import RelayLoop

/// One worker's requests parked until a JWKS refetch (docs/TOKENS.md "Unknown kids"): a
/// request whose bearer token names a `kid` the current set lacks (or any token while no set
/// is loaded) is not refused at once; it waits, on this worker's loop and without blocking
/// it, for a fetch that started after it arrived — at most `RELAY_JWT_JWKS_TIMEOUT` — and is
/// then routed as if it had just arrived (its token verified against the new set).
///
/// The decisions are ``UnknownKidRefetch``'s, process-wide in the ``JWKSKeyStore``; the
/// fetcher runs on worker 0, and each fetch's end reaches every worker through the store's
/// fetch-end handlers, posted onto each worker's loop. Loop thread only; `@unchecked
/// Sendable` solely so the fetch-end handler (called on worker 0) can post back to this loop.
final class JWKSKeyWait: @unchecked Sendable {
    private final class Waiter {
        let exchange: HTTPExchange
        let kid: String?
        let arrivalMs: Int64
        let resume: () -> Void
        var timer: LoopTimer?

        init(exchange: HTTPExchange, kid: String?, arrivalMs: Int64, resume: @escaping () -> Void) {
            self.exchange = exchange
            self.kid = kid
            self.arrivalMs = arrivalMs
            self.resume = resume
        }
    }

    private let loop: EventLoop
    private let store: JWKSKeyStore
    private let verifier: JWKSVerifier
    private let timeoutMs: Int
    private let metrics: Metrics
    private var waiters: [ObjectIdentifier: Waiter] = [:]
    private var handlerID: Int?

    /// - Parameter timeoutMs: longest wait of one request, ms (`RELAY_JWT_JWKS_TIMEOUT`).
    init(loop: EventLoop, store: JWKSKeyStore, verifier: JWKSVerifier, timeoutMs: Int, metrics: Metrics) {
        self.loop = loop
        self.store = store
        self.verifier = verifier
        self.timeoutMs = timeoutMs
        self.metrics = metrics
        handlerID = store.addFetchEndHandler { [weak self, loop] end in
            loop.post { [weak self] in self?.fetchEnded(end) }
        }
    }

    /// Stops (the worker stops): forgets the store's handler and answers every parked
    /// request `503 not_ready` without routing it. Loop thread.
    func stop() {
        if let id = handlerID { store.removeFetchEndHandler(id) }
        handlerID = nil
        for w in Array(waiters.values) {
            waiters[ObjectIdentifier(w)] = nil
            w.timer?.cancel()
            w.timer = nil
            if w.exchange.isOpen { w.exchange.respond(.notReady("the relay is stopping")) }
        }
    }

    /// Parks `ex` when its token names a key the set lacks and a refetch may bring it;
    /// `resume` routes it once a fetch has ended (or its wait timed out). Returns false when
    /// the request goes on now (no token, a known key, a kid refused at once, or a token
    /// that fails before any key is looked at).
    func park(_ ex: HTTPExchange, resume: @escaping () -> Void) -> Bool {
        let values = ex.headerValues("Authorization")
        guard values.count == 1, let token = try? BearerToken.extract(authorizationValues: values),
              case .unknown(let kid) = verifier.keyLookup(token) else { return false }
        let now = store.nowMs
        guard store.unknownKid(kid, nowMs: now) == .wait else { return false }
        let w = Waiter(exchange: ex, kid: kid, arrivalMs: now, resume: resume)
        let t = LoopTimer(loop: loop) { [unowned self, unowned w] in self.release(w) }
        w.timer = t
        t.schedule(afterMs: UInt64(timeoutMs))
        waiters[ObjectIdentifier(w)] = w
        metrics.add(.jwksParkedRequests)
        return true
    }

    /// A fetch ended: each parked request whose key is now known, or for which that fetch
    /// answered (it started after the request arrived), goes on; one that arrived during the
    /// fetch asks again (it waits for the next fetch, or is refused when another worker's
    /// request just confirmed its kid unknown).
    private func fetchEnded(_ end: JWKSKeyStore.FetchEnd) {
        for w in Array(waiters.values) {
            if !w.exchange.isOpen { release(w); continue }
            if UnknownKidRefetch.covers(arrivalMs: w.arrivalMs, fetchStartedMs: end.startedMs) {
                if end.installed, let kid = w.kid, !store.holds(kid: kid) {
                    store.confirmedUnknown(kid)
                }
                release(w)
            } else if store.unknownKid(w.kid, nowMs: store.nowMs) != .wait {
                release(w)
            }
        }
    }

    private func release(_ w: Waiter) {
        guard waiters.removeValue(forKey: ObjectIdentifier(w)) != nil else { return }
        w.timer?.cancel()
        w.timer = nil
        if w.exchange.isOpen { w.resume() }
    }
}
