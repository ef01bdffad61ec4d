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
    let ticketKeys: ReadTicketKeyLoader
    var metrics: Metrics { context.metrics }
    var config: RelayConfig { context.config }

    init(context: ServerContext, sessions: SessionStore, ticketKeys: ReadTicketKeyLoader) {
        self.context = context
        self.sessions = sessions
        self.ticketKeys = ticketKeys
    }

    /// How a read of a stream was authenticated (docs/PROTOCOL.md §2.5).
    enum ReadCredential {
        /// `Authorization: Bearer`: the response carries a fresh `X-Read-Ticket`.
        case bearer
        /// `?ticket=`: no new ticket is issued from a ticket.
        case ticket
    }

    /// Authenticates a read of stream `clientID` (`GET`/`HEAD /api/chat/stream/{id}`): the
    /// bearer token when the request has an `Authorization` header, else a read ticket in
    /// `?ticket=` issued for that stream (docs/PROTOCOL.md §2.5). `then` gets the caller (for a
    /// ticket: the owner hash and session it names, no `sub`) and its owner hash; a failure is
    /// answered here (`401 unauthorized`). A ticket naming a key this process does not know
    /// has the key reloaded from Redis once first (another instance may have rotated it).
    func authenticateRead(_ ex: HTTPExchange, clientID: RequestID,
                          then: @escaping (Identity, String, ReadCredential) -> Void) {
        guard ex.headerValues("Authorization").isEmpty, let ticket = ex.queryParameter("ticket") else {
            guard let who = authenticate(ex) else { return }
            return then(who, OwnerHash.of(who.user), .bearer)
        }
        func verify(reloaded: Bool) {
            let now = context.nowMs() / 1000
            do throws(ReadTicket.Refusal) {
                let t = try ReadTicket.verify(ticket, keys: context.readTicketKeys.all, now: now)
                guard t.requestID == clientID.value else { return fail(ex, .unauthorized("invalid ticket")) }
                then(Identity(user: "", sid: t.sid, tier: nil, expiresAt: t.expiresAt), t.ownerHash, .ticket)
            } catch .unknownKey where !reloaded {
                ticketKeys.reloadForUnknownKey { [weak self] ok in
                    guard let self, ex.isOpen else { return }
                    guard ok else { return self.fail(ex, .notReady("Redis is not available")) }
                    verify(reloaded: true)
                }
            } catch .expired {
                fail(ex, .unauthorized("ticket expired"))
            } catch {
                fail(ex, .unauthorized("invalid ticket"))
            }
        }
        verify(reloaded: false)
    }

    /// A read ticket for stream `clientID` (the id as the client sends it) of the bearer-authenticated caller `who`
    /// (docs/PROTOCOL.md §2.5): valid for `RELAY_READ_TICKET_TTL`, never past the token's `exp`;
    /// nil while this process has no key yet (Redis not reached since start).
    func readTicket(for who: Identity, ownerHash: String, clientID: String) -> String? {
        guard let key = context.readTicketKeys.current else {
            ticketKeys.load()
            return nil
        }
        var exp = context.nowMs() / 1000 + Int64(config.readTicketTTLms / 1000)
        if let tokenExp = who.expiresAt { exp = min(exp, tokenExp) }
        return ReadTicket(ownerHash: ownerHash, requestID: clientID, sid: who.sid, expiresAt: exp).signed(with: key)
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
