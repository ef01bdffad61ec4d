import Foundation
import RelayAuth
import RelayCore
import RelayHTTP
import RelayRedis
import RelayUpstream
import RelayEventStore
import RelayBudgets

/// `POST /api/chat/stream`, `GET` and `DELETE /api/chat/stream/{requestId}`
/// (docs/PROTOCOL.md §3, §6, §7). Every error known before the first byte is plain HTTP;
/// after it, an `error` event (docs/PROTOCOL.md §8). Loop thread only.
final class ChatStreamRoutes {
    private let gate: RequestGuard
    private let admission: StreamAdmission
    private let hub: StreamHub
    private let upstreams: UpstreamFactory
    /// Retained answers: the resume of a finished answer whose events expired, and the
    /// answers routes (`Router`).
    let answers: AnswerRoutes
    private var log: EventLog { hub.log }
    private var metrics: Metrics { hub.metrics }

    init(gate: RequestGuard, hub: StreamHub, upstreams: UpstreamFactory) {
        self.gate = gate
        self.hub = hub
        self.upstreams = upstreams
        self.admission = StreamAdmission(gate: gate, log: hub.log, ledger: hub.ledger)
        self.answers = AnswerRoutes(gate: gate, hub: hub)
    }

    /// Starts a generation, or resumes it when a retried POST carries the
    /// `X-Request-Id` of an existing stream of the same owner. The request is checked
    /// (model policy, system messages, `UpstreamFactory.prepare`) before admission; the
    /// upstream call is made only once admitted, with `max_tokens` clamped to the
    /// budget reservation, and started only after the session's revocation marker was
    /// checked again with the generation and its subscription registered.
    func start(_ ex: HTTPExchange) {
        guard !gate.refusedAtConnectionLimit(ex) else { return }
        guard let who = gate.authenticate(ex) else { return }
        guard !hub.draining else { return gate.fail(ex, .notReady("draining")) }
        guard JSONContentType.accepts(ex.header("Content-Type")) else {
            return gate.fail(ex, .invalidRequest("Content-Type must be application/json"))
        }
        guard let (clientID, lastEventID, request, dialect) = gate.attempt(ex, { () throws -> (RequestID, UInt64?, ChatRequest, StreamDialect) in
            let dialect = try ChatStreamRoutes.dialect(ex)
            var request = try ChatRequest.parse(Data(ex.body()))
            try applyPolicy(&request, who: who)
            _ = try upstreams.prepare(request)
            return (try RequestGuard.requestID(ex), try RequestGuard.lastEventID(ex), request, dialect)
        }) else { return }
        let explicitID = ex.header("X-Request-Id") != nil
        let ownerHash = OwnerHash.of(who.user)
        let id = clientID.scoped(by: ownerHash)
        if explicitID && lastEventID != nil {
            // A resume by POST: never start a new stream under that id.
            return gate.checkSession(ex, who) { [weak self] in
                self?.resume(ex, id: id, who: who, ownerHash: ownerHash, credential: .bearer, lastEventID: lastEventID ?? 0,
                             dialect: dialect)
            }
        }
        let config = gate.config
        let req = StreamAdmission.Request(
            id: id, explicitID: explicitID, ownerHash: ownerHash,
            promptEstimate: request.estimatedPromptTokens,
            wantedCompletion: BudgetArithmetic.wantedCompletion(maxTokens: request.maxTokens, summary: request.mode == .summary,
                                                                defaultCap: config.maxTokens, cap: config.maxTokens,
                                                                summaryCap: config.summaryMaxTokens),
            chat: request)
        admission.admit(ex, req, who: who) { [weak self] outcome in
            guard let self else { return }
            switch outcome {
            case .existing:
                self.resume(ex, id: id, who: who, ownerHash: ownerHash, credential: .bearer, lastEventID: lastEventID ?? 0,
                            dialect: dialect)
            case .admitted(let budget):
                self.generate(ex, request, id: id, ownerHash: ownerHash, who: who, budget: budget, dialect: dialect)
            }
        }
    }

    /// The tier's model policy, the system-message setting and the optional fields clients may
    /// send (docs/PROTOCOL.md §3.1, §9): a model the tier may not use is `400 model_not_allowed`;
    /// client `system` messages are `400 invalid_request` unless `RELAY_ALLOW_SYSTEM_MESSAGES`
    /// (the operator's prompt rules), and so is a sampling field, an image part or `tools` /
    /// `tool_choice` that `RELAY_CLIENT_PARAMETERS` leaves out (`ChatRequest.clientParametersSent`).
    private func applyPolicy(_ request: inout ChatRequest, who: Identity) throws {
        let allowed = gate.config.clientParameters
        if let field = request.clientParametersSent.first(where: { !allowed.contains($0) }) {
            throw APIError.invalidRequest("\"\(field)\" is not accepted by this relay (RELAY_CLIENT_PARAMETERS: "
                                          + (allowed.isEmpty ? "none" : allowed.joined(separator: ",")) + ")")
        }
        if !gate.config.allowSystemMessages, request.messages.contains(where: { $0.role == "system" }) {
            throw APIError.invalidRequest("system messages are not accepted (RELAY_ALLOW_SYSTEM_MESSAGES is off)")
        }
        let budgets = gate.context.budgets
        let tier = budgets.effectiveTier(who.tier)
        do {
            request.model = try gate.context.models.resolve(requested: request.model, tier: tier,
                                                            defaultTier: budgets.defaultTier)
        } catch let e as ModelNotAllowed {
            throw APIError(.modelNotAllowed, e.description)
        }
        // The operator's prompt goes first, after the client's messages were checked: it is
        // charged in the prompt estimate and stored with the request a takeover continues.
        if let prompt = gate.context.systemPrompts.prompt(model: request.model, tier: tier) {
            // With it the request stays within the 1,000 messages a stored request may hold.
            guard request.messages.count < ChatRequest.maxMessages else {
                throw APIError.invalidRequest("at most \(ChatRequest.maxMessages - 1) messages: this relay adds its system prompt")
            }
            request.messages.insert(ChatMessage(role: "system", content: prompt), at: 0)
        }
    }

    /// Makes the upstream call with the clamped `max_tokens`, registers the generation
    /// and the client's subscription, then checks the revocation marker again (register
    /// first, then check) and only then starts the upstream.
    private func generate(_ ex: HTTPExchange, _ request: ChatRequest, id: RequestID, ownerHash: String, who: Identity,
                          budget: GenerationBudget, dialect: StreamDialect) {
        var clamped = request
        clamped.maxTokens = budget.grant.maxTokens
        // An agent backend upstream is told who asked (docs/AGENTS.md, "Your own backend").
        clamped.caller = CallerIdentity(sub: who.user, sid: who.sid, tier: gate.context.budgets.effectiveTier(who.tier),
                                        requestID: id.clientValue)
        let upstream: Upstream
        do {
            upstream = try upstreams.prepare(clamped).make(loop: hub.loop)
        } catch {
            // Nothing was generated: give back the id, the session slot and the reservation.
            log.discard(id)
            hub.sessions.release(owner: ownerHash, sid: who.sid, id: id)
            hub.settler.settle(budgetKey: budget.key, id: id, tokens: 0)
            if ex.isOpen { gate.fail(ex, error as? APIError ?? .internalError("the upstream call cannot be set up")) }
            return
        }
        let g = Generation(id: id, owner: who.user, ownerHash: ownerHash, sid: who.sid, budget: budget,
                           upstream: upstream, host: hub)
        hub.register(g)
        let s = ex.isOpen ? beginStream(ex, id: id, who: who, ticket: gate.readTicket(for: who, ownerHash: ownerHash, clientID: id.clientValue),
                                        lastSent: 0, dialect: dialect) : nil
        // Register first, then check both markers: a cancel (docs/PROTOCOL.md §7) or a
        // revocation (§9.5) published before the generation was registered wrote its
        // marker first. The two replies may come on different connections (Redis Cluster).
        var cancelRequested: Result<Bool, RedisFailure>?
        var sessionValid: Bool?
        let decide = { [weak self] in
            guard let cancel = cancelRequested, let valid = sessionValid else { return }
            guard valid, case .success(let cancelled) = cancel else {
                // Revoked (already cut by `revoked(sid:)`), or Redis could not say: fail closed.
                let down = APIError(.redisUnavailable, "the session could not be checked; retry")
                g.abort(down)
                s?.fail(down)
                return
            }
            if cancelled {
                // The DELETE came first: end with `done` "cancelled"; no upstream call.
                self?.metrics.add(.cancels)
                g.cancel()
            } else {
                g.start()
            }
        }
        log.isCancelRequested(id) { r in
            cancelRequested = r
            decide()
        }
        hub.recheckRevocation(sid: who.sid) { valid in
            sessionValid = valid
            decide()
        }
    }

    /// `GET` (or `HEAD`) `/api/chat/stream/{requestId}` with `Last-Event-ID` (or
    /// `?lastEventId=`), authenticated by the bearer token or a read ticket for this stream
    /// (`RequestGuard.authenticateRead`, docs/PROTOCOL.md §2.5). An offset read instead
    /// (`OffsetRead`, docs/PROTOCOL.md §12) as `StreamReadRoute` decides: with an `offset`,
    /// or a request that is neither an SSE client's nor a resume (a Durable Streams client's
    /// default call).
    func resume(_ ex: HTTPExchange, rawID: Substring) {
        guard let dialect = gate.attempt(ex, { try ChatStreamRoutes.dialect(ex) }) else { return }
        switch StreamReadRoute.choose(offset: ex.queryParameter("offset"), live: ex.queryParameter("live"),
                                      hasLastEventID: !ex.headerValues("Last-Event-ID").isEmpty || ex.queryParameter("lastEventId") != nil,
                                      accept: ex.headerValues("Accept"), dialect: dialect) {
        case .offsetRead(let offset):
            return OffsetRead.serve(ex, rawID: rawID, rawOffset: offset, gate: gate, hub: hub)
        case .refuse(let e):
            return gate.fail(ex, e)
        case .sseResume:
            break
        }
        guard let id = gate.attempt(ex, { try RequestID(validating: rawID) }) else { return }
        guard !gate.refusedAtConnectionLimit(ex) else { return }
        gate.authenticateRead(ex, clientID: id) { [weak self] who, ownerHash, credential in
            guard let self else { return }
            guard !self.hub.draining else { return self.gate.fail(ex, .notReady("draining")) }
            guard let lastEventID = self.gate.attempt(ex, { try RequestGuard.lastEventID(ex) }) else { return }
            self.gate.checkSession(ex, who) { [weak self] in
                self?.resume(ex, id: id.scoped(by: ownerHash), who: who, ownerHash: ownerHash, credential: credential,
                             lastEventID: lastEventID ?? 0, dialect: dialect)
            }
        }
    }

    /// Checks the stream and the client's position, then streams from there; a `HEAD`
    /// gets the same status and headers and no subscription (RFC 9110 §9.3.2), and is not
    /// counted in `relay_resumes_total`. `ownerHash` is
    /// the caller's (`OwnerHash`): the stream's stored owner must hash to it.
    private func resume(_ ex: HTTPExchange, id: RequestID, who: Identity, ownerHash: String,
                        credential: RequestGuard.ReadCredential, lastEventID: UInt64, dialect: StreamDialect = .relay) {
        let ticket = credential == .bearer ? gate.readTicket(for: who, ownerHash: ownerHash, clientID: id.clientValue) : nil
        log.open(id) { [weak self] r in
            guard let self, ex.isOpen else { return }
            switch r {
            case .failure(let f) where EventLog.isUnreadable(f):
                self.hub.storedValueUnreadable(f.message)
                self.gate.fail(ex, .storedDataUnreadable("the stream's stored state is not what the relay writes"))
            case .failure(let f):
                self.gate.fail(ex, .notReady("Redis is not available (\(f.isDisconnect ? "disconnected" : "error"))"))
            case .success(let info):
                let found = info.map {
                    ResumeDecision.Found(ownedByCaller: OwnerHash.of($0.owner) == ownerHash, finished: $0.state != .running, lastSeq: $0.lastSeq,
                                         firstRetainedSeq: $0.firstRetainedSeq, textLength: $0.textLength)
                }
                switch ResumeDecision.decide(found, lastEventID: lastEventID, lossless: self.log.lossless) {
                case .notFound:
                    if info == nil, self.answers.enabled {
                        // The stream's keys expired: a finished answer may be retained (§6.5).
                        var headers = [("X-Request-Id", id.clientValue)]
                        if let ticket { headers.append(("X-Read-Ticket", ticket)) }
                        return self.answers.resume(ex, id: id, ownerHash: ownerHash, lastEventID: lastEventID, headers: headers,
                                                   dialect: dialect) {
                            self.setStreamHeaders(ex, id: id, ticket: ticket, dialect: dialect)
                        }
                    }
                    if ex.method != .head { self.metrics.add(.resumesNotFound) }
                    return self.gate.fail(ex, .streamNotFound)
                case .beyondEnd(let lastSeq):
                    return self.gate.fail(ex, .invalidLastEventID("Last-Event-ID \(lastEventID) is beyond the stream's last event \(lastSeq)"))
                case .gap(let oldestKept):
                    if ex.method != .head { self.metrics.add(.resumesGap) }
                    return self.gate.fail(ex, .resumeGap("events after \(lastEventID) are no longer retained (oldest kept: \(oldestKept))"))
                case .noContent:
                    if ex.method != .head { self.metrics.add(.resumesOK) }
                    var headers = [("X-Request-Id", id.clientValue)]
                    if let ticket { headers.append(("X-Read-Ticket", ticket)) }
                    return ex.respondNoContent(contentType: SSEFrame.contentType, headers: headers)
                case .stream(let catchUp):
                    if ex.method == .head {
                        self.setStreamHeaders(ex, id: id, ticket: ticket, dialect: dialect)
                        ex.startStream()
                        return ex.endStream()
                    }
                    self.metrics.add(catchUp ? .resumesCatchUp : .resumesOK)
                }
                guard let s = self.beginStream(ex, id: id, who: who, ticket: ticket, lastSent: lastEventID, dialect: dialect) else { return }
                // Register first, then check: a revocation published before the
                // subscription was registered wrote its marker first.
                self.hub.recheckRevocation(sid: who.sid) { valid in
                    if !valid { s.fail(APIError(.redisUnavailable, "the session could not be checked; retry")) }
                }
            }
        }
    }

    /// The stream format the request asks for (docs/PROTOCOL.md §4.6): `format=ai-sdk` or the
    /// `x-vercel-ai-ui-message-stream: v1` header selects the AI SDK's UI Message Stream.
    /// - Throws: `APIError` 400 `invalid_request` for another `format` or header value.
    static func dialect(_ ex: HTTPExchange) throws -> StreamDialect {
        try StreamDialect.requested(formats: ex.queryParameterValues("format"),
                                    uiStreamHeader: ex.headerValues(UIMessageStream.header.name))
    }

    /// The head of a stream response (docs/PROTOCOL.md §4.5). `id` is scoped; the client sees
    /// its own id in `X-Request-Id`. `ticket`: the `X-Read-Ticket` (§2.5), for a bearer caller.
    private func setStreamHeaders(_ ex: HTTPExchange, id: RequestID, ticket: String?, dialect: StreamDialect = .relay) {
        ex.setHeader("Content-Type", SSEFrame.contentType)
        if dialect == .uiMessageStream { ex.setHeader(UIMessageStream.header.name, UIMessageStream.header.value) }
        ex.setHeader("Cache-Control", "no-store")
        ex.setHeader("X-Accel-Buffering", "no")
        ex.setHeader("X-Request-Id", id.clientValue)
        if let ticket { ex.setHeader("X-Read-Ticket", ticket) }
    }

    /// Sends the stream headers, then registers and starts the subscription; the
    /// connection's `retry:` (`ReconnectionTime`, spread per connection) goes in front of its
    /// first event.
    @discardableResult
    private func beginStream(_ ex: HTTPExchange, id: RequestID, who: Identity, ticket: String?, lastSent: UInt64,
                             dialect: StreamDialect) -> Subscription? {
        setStreamHeaders(ex, id: id, ticket: ticket, dialect: dialect)
        ex.startStream(retry: SSEFrame.retry(milliseconds: ReconnectionTime.milliseconds(random: UInt64.random(in: 0...UInt64.max))))
        let s = Subscription(id: id, owner: who.user, sid: who.sid, sink: ex, host: hub,
                             lastSent: lastSent, tokenExpiry: who.expiresAt, dialect: dialect)
        hub.register(s)
        s.start()
        return s
    }

    /// `DELETE /api/chat/stream/{requestId}` (docs/PROTOCOL.md §7): the owning instance,
    /// wherever it is, stops the generation (`relay:cancel`). 202 also when already
    /// finished, and `"state":"pending"` when no stream of the id exists yet: the cancel
    /// marker left by `EventLog.requestCancel` stops the stream if it is created within
    /// `EventLog.cancelMarkerMs` (a `DELETE` that overtook its `POST`).
    func cancel(_ ex: HTTPExchange, rawID: Substring) {
        guard let clientID = gate.attempt(ex, { try RequestID(validating: rawID) }),
              let who = gate.authenticate(ex) else { return }
        let id = clientID.scoped(by: OwnerHash.of(who.user))
        // The session's revocation marker first (§9.5): a refused DELETE writes nothing, so a
        // revoked session's token leaves no cancel marker that would stop the user's next
        // stream of that id. Redis unable to say: 503, nothing written.
        hub.sessions.isRevoked(sid: who.sid) { [weak self] r in
            guard let self, ex.isOpen else { return }
            switch r {
            case .failure: self.gate.fail(ex, .notReady("Redis is not available"))
            case .success(true): self.gate.fail(ex, .unauthorized("session revoked"))
            case .success(false): self.requestCancel(ex, clientID: clientID, id: id, who: who)
            }
        }
    }

    /// The `DELETE` of a session found valid: leaves the cancel marker and publishes the
    /// cancel of a running stream (`EventLog.requestCancel`).
    private func requestCancel(_ ex: HTTPExchange, clientID: RequestID, id: RequestID, who: Identity) {
        log.requestCancel(id, owner: who.user) { [weak self] r in
            guard let self, ex.isOpen else { return }
            let accepted = { (state: String) in
                "{\"requestId\":\(JSONText.quoted(clientID.value)),\"state\":\(JSONText.quoted(state))}"
            }
            switch r {
            case .failure:
                self.gate.fail(ex, .notReady("Redis is not available"))
            case .success(.otherOwner):
                self.gate.fail(ex, .streamNotFound)
            case .success(.pending):
                self.metrics.add(.cancelsPending)
                ex.respond(status: 202, contentType: "application/json", body: accepted("pending"))
            case .success(.stream(let state)):
                guard state == .running else {
                    return ex.respond(status: 202, contentType: "application/json", body: accepted(state?.rawValue ?? ""))
                }
                self.log.publishCancel(id) { r in
                    if case .failure = r { return self.gate.fail(ex, .notReady("Redis is not available")) }
                    ex.respond(status: 202, contentType: "application/json", body: accepted("running"))
                }
            }
        }
    }
}
