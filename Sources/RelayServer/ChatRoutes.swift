import Foundation
import RelayAuth
import RelayCore
import RelayRedis
import RelayUpstream

/// `POST /api/chat/stream`, `GET` and `DELETE /api/chat/stream/{requestId}`
/// (DESIGN §2). Every error known before the first byte is plain HTTP; after it, an
/// `error` event.
extension Worker {
    /// Starts a generation, or resumes it when a retried POST carries the
    /// `X-Request-Id` of an existing stream of the same owner.
    func startStream(_ ex: HTTPExchange) {
        guard !refusedAtConnectionLimit(ex) else { return }
        guard let who = authenticate(ex) else { return }
        guard !draining else { return fail(ex, .notReady("draining")) }
        let contentType = (ex.header("Content-Type") ?? "").lowercased()
        guard contentType.hasPrefix("application/json") else {
            return fail(ex, .invalidRequest("Content-Type must be application/json"))
        }
        guard let (id, lastEventID, upstream) = attempt(ex, { () throws -> (RequestID, UInt64?, Upstream) in
            let request = try ChatRequest.parse(Data(ex.body()))
            return (try requestID(ex), try lastEventIDOf(ex), try upstreams.makeUpstream(for: request, loop: loop))
        }) else { return }
        let explicitID = ex.header("X-Request-Id") != nil
        if explicitID && lastEventID != nil {
            // A resume by POST: never start a new stream under that id.
            _ = upstream.cancel()
            return checkSession(ex, who) { [weak self] in
                self?.resume(ex, id: id, who: who, lastEventID: lastEventID ?? 0)
            }
        }
        // One round trip: revocation marker and budget, pipelined.
        let period = BudgetPolicy.period(now: context.nowMs() / 1000)
        let limit = context.budgets.limit(forTier: who.tier)
        var revoked: Result<Bool, RedisFailure> = .success(false)
        sessions.isRevoked(sid: who.sid) { revoked = $0 }
        sessions.budgetUsed(user: who.user, period: period) { [weak self] used in
            guard let self, ex.isOpen else { _ = upstream.cancel(); return }
            switch (revoked, used) {
            case (.failure, _), (_, .failure):
                _ = upstream.cancel()
                return self.fail(ex, .notReady("Redis is not available"))
            case (.success(true), _):
                _ = upstream.cancel()
                return self.fail(ex, .unauthorized("session revoked"))
            case (.success(false), .success(let u)):
                if u >= limit {
                    _ = upstream.cancel()
                    return self.fail(ex, APIError(status: 429, code: "token_budget_exhausted",
                                                  message: "the \(self.context.budgets.effectiveTier(who.tier)) tier's \(limit) tokens for \(period) are used up"))
                }
                self.admitAndCreate(ex, id: id, who: who, upstream: upstream, explicitID: explicitID,
                                    lastEventID: lastEventID, budgetKey: StreamKeys.budget(user: who.user, period: period))
            }
        }
    }

    /// Takes a session slot (`RELAY_MAX_STREAMS_PER_SESSION`), creates the stream and
    /// starts the generation; an existing id of the same owner is resumed instead.
    private func admitAndCreate(_ ex: HTTPExchange, id: RequestID, who: Identity, upstream: Upstream, explicitID: Bool,
                                lastEventID: UInt64?, budgetKey: String) {
        log.create(id, owner: who.user, sid: who.sid, instance: context.instance, nowMs: UInt64(context.nowMs())) { [weak self] r in
            guard let self, ex.isOpen else { _ = upstream.cancel(); return }
            switch r {
            case .failure(let f):
                _ = upstream.cancel()
                self.fail(ex, .notReady("Redis is not available (\(f.isDisconnect ? "disconnected" : "error"))"))
            case .success(false):
                _ = upstream.cancel()
                if explicitID {
                    self.resume(ex, id: id, who: who, lastEventID: lastEventID ?? 0)
                } else {
                    self.fail(ex, .internalError("request id collision; retry"))
                }
            case .success(true):
                self.sessions.admit(sid: who.sid, id: id, nowMs: self.context.nowMs(), leaseMs: EventLog.leaseMs,
                                    max: self.config.maxStreamsPerSession) { [weak self] admitted in
                    guard let self else { return }
                    guard case .success(true) = admitted, ex.isOpen else {
                        _ = upstream.cancel()
                        // Give the id back: nothing was generated under it.
                        self.commands.send(["DEL", StreamKeys(id).meta, StreamKeys(id).lease], nil)
                        if !ex.isOpen { return }
                        if case .failure = admitted { return self.fail(ex, .notReady("Redis is not available")) }
                        return self.fail(ex, APIError(status: 429, code: "too_many_streams",
                                                      message: "at most \(self.config.maxStreamsPerSession) answers may be generated at once per session"))
                    }
                    let g = Generation(id: id, owner: who.user, sid: who.sid, budgetKey: budgetKey, upstream: upstream, worker: self)
                    self.register(g)
                    self.beginStream(ex, id: id, who: who, lastSent: 0)
                    g.start()
                }
            }
        }
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

    /// `GET /api/chat/stream/{requestId}` with `Last-Event-ID` (or `?lastEventId=`).
    func resumeStream(_ ex: HTTPExchange, rawID: Substring) {
        guard let id = attempt(ex, { try RequestID(validating: rawID) }) else { return }
        guard !refusedAtConnectionLimit(ex) else { return }
        guard let who = authenticate(ex) else { return }
        guard !draining else { return fail(ex, .notReady("draining")) }
        guard let lastEventID = attempt(ex, { try lastEventIDOf(ex) }) else { return }
        checkSession(ex, who) { [weak self] in
            self?.resume(ex, id: id, who: who, lastEventID: lastEventID ?? 0)
        }
    }

    /// Checks the stream and the client's position, then streams from there.
    func resume(_ ex: HTTPExchange, id: RequestID, who: Identity, lastEventID: UInt64) {
        log.open(id) { [weak self] r in
            guard let self, ex.isOpen else { return }
            switch r {
            case .failure(let f):
                self.fail(ex, .notReady("Redis is not available (\(f.isDisconnect ? "disconnected" : "error"))"))
            case .success(nil):
                self.metrics.add(.resumesNotFound)
                self.fail(ex, .streamNotFound)
            case .success(let info?):
                guard info.owner == who.user else {
                    self.metrics.add(.resumesNotFound)
                    return self.fail(ex, .streamNotFound)
                }
                guard lastEventID <= info.lastSeq else {
                    return self.fail(ex, .invalidLastEventID("Last-Event-ID \(lastEventID) is beyond the stream's last event \(info.lastSeq)"))
                }
                let firstNeeded = lastEventID + 1
                let oldestKept = info.firstRetainedSeq ?? (info.lastSeq + 1)
                if firstNeeded < oldestKept {
                    guard self.log.lossless, info.textLength > 0 || info.lastSeq == 0 else {
                        self.metrics.add(.resumesGap)
                        return self.fail(ex, .resumeGap("events after \(lastEventID) are no longer retained (oldest kept: \(oldestKept))"))
                    }
                    self.metrics.add(.resumesCatchUp)
                } else {
                    self.metrics.add(.resumesOK)
                }
                let finished = info.state != "running"
                self.beginStream(ex, id: id, who: who, lastSent: lastEventID, alreadyComplete: finished && lastEventID == info.lastSeq)
            }
        }
    }

    /// `RELAY_MAX_CONNECTIONS` (issue 6): a new or resumed stream is refused with 503
    /// `not_ready` (and `Retry-After: 1`) while the instance's live stream connections
    /// (every worker's, the `relay_live_connections` gauge) are at the limit. Checked
    /// before any Redis work, so a refused POST never starts a generation; requests
    /// still waiting for Redis are not counted, so a burst may pass the limit by the
    /// number of requests in flight at once.
    func refusedAtConnectionLimit(_ ex: HTTPExchange) -> Bool {
        let live = metrics.value(.liveConnections)
        guard live >= config.maxConnections else { return false }
        metrics.add(.requestErrors)
        ex.respond(.notReady("this instance serves its maximum of \(config.maxConnections) connections"),
                   headers: [("Retry-After", "1")])
        return true
    }

    /// Sends the stream headers and `retry:`, then subscribes.
    func beginStream(_ ex: HTTPExchange, id: RequestID, who: Identity, lastSent: UInt64, alreadyComplete: Bool = false) {
        ex.setHeader("Content-Type", SSEFrame.contentType)
        ex.setHeader("Cache-Control", "no-store")
        ex.setHeader("X-Accel-Buffering", "no")
        ex.setHeader("X-Request-Id", id.value)
        ex.startStream()
        ex.write(SSEFrame.retry(milliseconds: 1000))
        if alreadyComplete {
            ex.endStream()
            return
        }
        let s = Subscription(id: id, owner: who.user, sid: who.sid, exchange: ex, worker: self,
                             lastSent: lastSent, tokenExpiry: who.expiresAt)
        register(s)
        s.start()
    }

    /// `DELETE /api/chat/stream/{requestId}`: the owning instance, wherever it is,
    /// stops the generation (`relay:cancel`). 202 also when already finished.
    func cancelStream(_ ex: HTTPExchange, rawID: Substring) {
        guard let id = attempt(ex, { try RequestID(validating: rawID) }),
              let who = authenticate(ex) else { return }
        var revoked = false
        sessions.isRevoked(sid: who.sid) { if case .success(true) = $0 { revoked = true } }
        log.open(id) { [weak self] r in
            guard let self, ex.isOpen else { return }
            if revoked { return self.fail(ex, .unauthorized("session revoked")) }
            switch r {
            case .failure:
                self.fail(ex, .notReady("Redis is not available"))
            case .success(let info):
                guard let info, info.owner == who.user else { return self.fail(ex, .streamNotFound) }
                let accepted = "{\"requestId\":\(JSONText.quoted(id.value)),\"state\":\(JSONText.quoted(info.state))}"
                guard info.state == "running" else {
                    return ex.respond(status: 202, contentType: "application/json", body: accepted)
                }
                self.commands.send(["PUBLISH", StreamKeys.cancelChannel, id.value]) { r in
                    if r.errorMessage != nil { return self.fail(ex, .notReady("Redis is not available")) }
                    ex.respond(status: 202, contentType: "application/json", body: accepted)
                }
            }
        }
    }

    /// The `X-Request-Id` header (validated), or a fresh random id.
    func requestID(_ ex: HTTPExchange) throws -> RequestID {
        let values = ex.headerValues("X-Request-Id")
        guard values.count <= 1 else { throw APIError.invalidRequest("more than one X-Request-Id header") }
        guard let v = values.first else { return RequestID.random() }
        return try RequestID(validating: v)
    }

    /// `Last-Event-ID` header (WHATWG HTML §9.2.4), else `?lastEventId=`; nil when neither.
    func lastEventIDOf(_ ex: HTTPExchange) throws -> UInt64? {
        let values = ex.headerValues("Last-Event-ID")
        guard values.count <= 1 else { throw APIError.invalidLastEventID("more than one Last-Event-ID header") }
        if let h = values.first { return try LastEventID.parse(h) }
        if let q = ex.queryParameter("lastEventId") { return try LastEventID.parse(q) }
        return nil
    }

    /// `GET /api/budget` (issue 3): `{"tier","limit","used","remaining","period"}`,
    /// tokens of the caller's tier in the current calendar month (UTC).
    func budget(_ ex: HTTPExchange) {
        guard let who = authenticate(ex) else { return }
        let period = BudgetPolicy.period(now: context.nowMs() / 1000)
        let tier = context.budgets.effectiveTier(who.tier)
        let limit = context.budgets.limit(forTier: who.tier)
        checkSession(ex, who) { [weak self] in
            self?.sessions.budgetUsed(user: who.user, period: period) { r in
                guard ex.isOpen else { return }
                guard case .success(let used) = r else { return ex.respond(.notReady("Redis is not available")) }
                let body = "{\"tier\":\(JSONText.quoted(tier)),\"limit\":\(limit),\"used\":\(used),\"remaining\":\(max(0, limit - used)),\"period\":\(JSONText.quoted(period))}"
                ex.respond(status: 200, contentType: "application/json", body: body)
            }
        }
    }

    /// `POST /admin/sessions/{sid}/revoke` (issue 3): admin key only (constant-time
    /// check; 401 alike when the key is wrong or admin routes are off). 202, idempotent.
    /// The caller has been checked against the admin key already (`route`).
    func revokeSession(_ ex: HTTPExchange, sid: String) {
        guard !sid.isEmpty, sid.utf8.count <= 256, !sid.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            return fail(ex, .invalidRequest("bad session id"))
        }
        sessions.revoke(sid: sid, ttlMs: config.revocationTTLms) { r in
            guard ex.isOpen else { return }
            switch r {
            case .failure: ex.respond(.notReady("Redis is not available"))
            case .success:
                Log.info("session revoked", ["sidHash": Worker.shortHash(sid)])
                ex.respond(status: 202, contentType: "application/json", body: "{\"revoked\":true}")
            }
        }
    }
}
