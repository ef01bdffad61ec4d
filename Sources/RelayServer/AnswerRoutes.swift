import RelayAuth
import RelayCore
import RelayHTTP
import RelayEventStore

/// Retained answers over HTTP (docs/PROTOCOL.md §6.5, §9.6): the resume of a finished
/// answer whose events expired, `GET /api/chat/answers/{requestId}`, and the admin erase
/// of a user's retained answers. The record is `RetainedAnswer` (docs/DATA_MODEL.md §14).
/// Loop thread only.
final class AnswerRoutes {
    private let gate: RequestGuard
    private let hub: StreamHub
    private var answers: AnswerStore { hub.log.answers }
    private var metrics: Metrics { hub.metrics }

    init(gate: RequestGuard, hub: StreamHub) {
        self.gate = gate
        self.hub = hub
    }

    /// `RELAY_ANSWER_RETENTION` is on.
    var enabled: Bool { hub.log.retentionMs > 0 }

    /// The message of a `404 stream_not_found` on the answers route.
    static let notFound = APIError(.streamNotFound, "no such answer (unknown, not finished, expired, erased, or not yours)")

    /// A resume (`GET`/`HEAD` with `Last-Event-ID`, or a `POST` resume) of stream `id` that
    /// no longer exists (`ResumeDecision.notFound` with no stream found): answers from the
    /// retained answer (`RetainedResumeDecision`), else `404 stream_not_found` as before.
    /// The caller's session was checked already. `headers`: `X-Request-Id` (and
    /// `X-Read-Ticket`) for the response; `dialect`: its stream format (docs/PROTOCOL.md §4.6).
    func resume(_ ex: HTTPExchange, id: RequestID, ownerHash: String, lastEventID: UInt64,
                headers: [(String, String)], dialect: StreamDialect = .relay, setStreamHeaders: @escaping () -> Void) {
        answers.read(id) { [weak self] r in
            guard let self, ex.isOpen else { return }
            let a: RetainedAnswer
            switch r {
            case .failure(.redis(let f)):
                return self.gate.fail(ex, .notReady("Redis is not available (\(f.isDisconnect ? "disconnected" : "error"))"))
            case .success(nil):
                if ex.method != .head { self.metrics.add(.resumesNotFound) }
                return self.gate.fail(ex, .streamNotFound)
            case .failure(.unreadable(let why)):
                Log.error("stored value does not open", ["reason": why])
                return self.gate.fail(ex, .storedDataUnreadable("the retained answer does not open with this relay's keys"))
            case .success(let found?):
                a = found
            }
            switch RetainedResumeDecision.decide(ownedByCaller: OwnerHash.of(a.owner) == ownerHash, finalSeq: a.finalSeq,
                                                 lastEventID: lastEventID) {
            case .notFound:
                if ex.method != .head { self.metrics.add(.resumesNotFound) }
                self.gate.fail(ex, .streamNotFound)
            case .beyondEnd(let last):
                self.gate.fail(ex, .invalidLastEventID("Last-Event-ID \(lastEventID) is beyond the stream's last event \(last)"))
            case .noContent:
                if ex.method != .head { self.metrics.add(.resumesRetained) }
                ex.respondNoContent(contentType: SSEFrame.contentType, headers: headers)
            case .stream:
                setStreamHeaders()
                if ex.method == .head {
                    ex.startStream()
                    return ex.endStream()
                }
                self.metrics.add(.resumesRetained)
                ex.startStream(retry: SSEFrame.retry(milliseconds: ReconnectionTime.milliseconds(random: UInt64.random(in: 0...UInt64.max))))
                // The events as they were first sent: each delta with its own id, then the done.
                let events = a.events(after: lastEventID)
                if dialect == .uiMessageStream {
                    var ui = UIMessageStream(after: lastEventID)
                    ex.write(ui.start(messageId: id.clientValue))
                    if let f = ui.frame(events) { ex.write(f) }
                } else {
                    ex.write(EventFramer.sse(events))
                }
                let n = events.count
                self.hub.delivered(events: n)
                ex.endStream()
            }
        }
    }

    /// `GET`/`HEAD /api/chat/answers/{requestId}` (bearer token): the caller's retained
    /// answer as JSON, `{"requestId","text","finish_reason","usage",["budget_limited":true,]
    /// "final_seq","created_ms","finished_ms"}` (times unix ms). `404 stream_not_found` when
    /// there is none (unknown, still running, expired, erased, another user's, or retention
    /// off), `401` for a revoked session, `503 not_ready` without Redis.
    func get(_ ex: HTTPExchange, rawID: Substring) {
        guard let clientID = gate.attempt(ex, { try RequestID(validating: rawID) }),
              let who = gate.authenticate(ex) else { return }
        let ownerHash = OwnerHash.of(who.user)
        gate.checkSession(ex, who) { [weak self] in
            guard let self else { return }
            guard self.enabled else { return self.gate.fail(ex, AnswerRoutes.notFound) }
            self.answers.read(clientID.scoped(by: ownerHash)) { r in
                guard ex.isOpen else { return }
                switch r {
                case .failure(.redis):
                    self.gate.fail(ex, .notReady("Redis is not available"))
                case .success(nil):
                    self.gate.fail(ex, AnswerRoutes.notFound)
                case .failure(.unreadable(let why)):
                    Log.error("stored value does not open", ["reason": why])
                    self.gate.fail(ex, .storedDataUnreadable("the retained answer does not open with this relay's keys"))
                case .success(let a?):
                    guard OwnerHash.of(a.owner) == ownerHash else { return self.gate.fail(ex, AnswerRoutes.notFound) }
                    if ex.method != .head { self.metrics.add(.answerReads) }
                    // `respond` sends `Cache-Control: no-store` on every reply.
                    ex.respond(status: 200, contentType: "application/json", body: AnswerRoutes.json(a, requestID: clientID))
                }
            }
        }
    }

    /// The JSON of `GET /api/chat/answers/{id}`.
    static func json(_ a: RetainedAnswer, requestID: RequestID) -> String {
        var s = "{\"requestId\":\(JSONText.quoted(requestID.value)),\"text\":\(JSONText.quoted(a.answerText))"
        // The parts as their events' JSON (docs/PROTOCOL.md §5.5), in seq order; none for text alone.
        let parts = a.partJSONs
        if !parts.isEmpty { s += ",\"parts\":[" + parts.joined(separator: ",") + "]" }
        if case .done(let reason, let u, let limited)? = try? StreamEvent(json: a.doneJSON) {
            s += ",\"finish_reason\":\(JSONText.quoted(reason.rawValue)),\"usage\":{\"prompt_tokens\":\(u.promptTokens),"
                + "\"completion_tokens\":\(u.completionTokens),\"total_tokens\":\(u.totalTokens)}"
            if limited { s += ",\"budget_limited\":true" }
        }
        s += ",\"final_seq\":\(a.finalSeq),\"created_ms\":\(a.createdMs),\"finished_ms\":\(a.finishedMs)}"
        return s
    }

    /// `POST /admin/users/{sub}/answers/erase` (admin key, checked by `Router`): deletes every
    /// retained answer of `sub` (`AnswerStore.erase`), `200 {"erased":n}`. `sub`
    /// percent-decoded, 1–256 bytes without control characters, else `400 invalid_request`.
    func erase(_ ex: HTTPExchange, sub: String) {
        guard !sub.isEmpty, sub.utf8.count <= 256, !sub.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            return gate.fail(ex, .invalidRequest("bad sub"))
        }
        answers.erase(ownerHash: OwnerHash.of(sub)) { [weak self] r in
            guard let self, ex.isOpen else { return }
            switch r {
            case .failure: ex.respond(.notReady("Redis is not available"))
            case .success(let n):
                self.metrics.add(.answersErased, n)
                Log.info("retained answers erased", ["subHash": Log.shortHash(sub), "erased": n])
                ex.respond(status: 200, contentType: "application/json", body: "{\"erased\":\(n)}")
            }
        }
    }
}
