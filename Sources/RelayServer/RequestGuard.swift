import RelayAuth
import RelayCore
import RelayRedis
import RelayConfiguration
import RelayEventStore
import RelayHTTP

/// The checks every route shares: authentication (docs/TOKENS.md), the session's
/// revocation marker, the instance's connection limit, header parsing, and
/// answering an error before the stream (counted in `relay_request_errors_total`).
/// Loop thread only.
final class RequestGuard {
    let context: ServerContext
    let sessions: SessionStore
    var metrics: Metrics { context.metrics }
    var config: RelayConfig { context.config }

    init(context: ServerContext, sessions: SessionStore) {
        self.context = context
        self.sessions = sessions
    }

    /// Authenticates the exchange; answers 401 itself and returns nil on failure.
    func authenticate(_ ex: HTTPExchange) -> Identity? {
        do {
            return try context.authenticator.authenticate(authorization: ex.headerValues("Authorization"),
                                                          now: context.nowMs() / 1000)
        } catch let e as APIError {
            fail(ex, e)
        } catch {
            fail(ex, .unauthorized("invalid credentials"))
        }
        return nil
    }

    /// Refuses a revoked session (401) before `then` runs. One round trip.
    func checkSession(_ ex: HTTPExchange, _ who: Identity, then: @escaping () -> Void) {
        sessions.isRevoked(sid: who.sid) { [weak self] r in
            guard let self, ex.isOpen else { return }
            switch r {
            case .failure: self.fail(ex, .notReady("Redis is not available"))
            case .success(true): self.fail(ex, .unauthorized("session revoked"))
            case .success(false): then()
            }
        }
    }

    /// `RELAY_MAX_CONNECTIONS` (docs/CONFIGURATION.md): a new or resumed stream is refused with 503
    /// `not_ready` (with a `Retry-After` of 1–3 s) while the instance's live stream connections
    /// (every worker's, the `relay_live_connections` gauge) are at the limit. Checked
    /// before any Redis work, so a refused POST never starts a generation; requests
    /// still waiting for Redis are not counted, so a burst may pass the limit by the
    /// number of requests in flight at once.
    func refusedAtConnectionLimit(_ ex: HTTPExchange) -> Bool {
        let live = metrics.value(.liveConnections)
        guard live >= config.maxConnections else { return false }
        metrics.add(.requestErrors)
        // `Retry-After` drawn per response (RetryAfter, docs/PROTOCOL.md §4.3).
        ex.respond(.notReady("this instance serves its maximum of \(config.maxConnections) connections"))
        return true
    }

    /// Runs `body`; on a thrown `APIError` (or any error, as 400 `invalid_request`)
    /// answers it and returns nil.
    func attempt<T>(_ ex: HTTPExchange, _ body: () throws -> T) -> T? {
        do {
            return try body()
        } catch let e as APIError {
            fail(ex, e)
        } catch {
            fail(ex, .invalidRequest("\(error)"))
        }
        return nil
    }

    /// Answers an error before the stream, and counts it.
    func fail(_ ex: HTTPExchange, _ e: APIError) {
        metrics.add(.requestErrors)
        if e.code == .tokenBudgetExhausted { metrics.add(.budgetRefusals) }
        var headers: [(String, String)] = []
        if e.status == 401 { headers.append(("WWW-Authenticate", "Bearer")) }
        ex.respond(e, headers: headers)
    }

    /// 405 with `Allow`.
    func methodNotAllowed(_ ex: HTTPExchange, _ allow: String) {
        ex.respond(.methodNotAllowed(allow), headers: [("Allow", allow)])
    }

    /// The `X-Request-Id` header (validated), or a fresh random id.
    static func requestID(_ ex: HTTPExchange) throws -> RequestID {
        let values = ex.headerValues("X-Request-Id")
        guard values.count <= 1 else { throw APIError.invalidRequest("more than one X-Request-Id header") }
        guard let v = values.first else { return RequestID.random() }
        return try RequestID(validating: v)
    }

    /// `Last-Event-ID` header (WHATWG HTML §9.2.4), else `?lastEventId=`; nil when neither.
    static func lastEventID(_ ex: HTTPExchange) throws -> UInt64? {
        let values = ex.headerValues("Last-Event-ID")
        guard values.count <= 1 else { throw APIError.invalidLastEventID("more than one Last-Event-ID header") }
        if let h = values.first { return try LastEventID.parse(h) }
        if let q = ex.queryParameter("lastEventId") { return try LastEventID.parse(q) }
        return nil
    }
}
