import Foundation
import RelayAuth
import RelayCore
import RelayRedis
import RelayUpstream

/// `POST /api/chat/stream`, `GET` and `DELETE /api/chat/stream/{requestId}`
/// (DESIGN §2). Every error known before the first byte is plain HTTP; after it, an
/// `error` event. Loop thread only.
final class ChatStreamRoutes {
    private let gate: RequestGuard
    private let admission: StreamAdmission
    private let hub: StreamHub
    private let upstreams: UpstreamFactory
    private var log: EventLog { hub.log }
    private var metrics: Metrics { hub.metrics }

    init(gate: RequestGuard, hub: StreamHub, upstreams: UpstreamFactory) {
        self.gate = gate
        self.hub = hub
        self.upstreams = upstreams
        self.admission = StreamAdmission(gate: gate, log: hub.log)
    }

    /// Starts a generation, or resumes it when a retried POST carries the
    /// `X-Request-Id` of an existing stream of the same owner. The request is checked
    /// (`UpstreamFactory.prepare`) before admission; the upstream call is made only
    /// once admitted.
    func start(_ ex: HTTPExchange) {
        guard !gate.refusedAtConnectionLimit(ex) else { return }
        guard let who = gate.authenticate(ex) else { return }
        guard !hub.draining else { return gate.fail(ex, .notReady("draining")) }
        let contentType = (ex.header("Content-Type") ?? "").lowercased()
        guard contentType.hasPrefix("application/json") else {
            return gate.fail(ex, .invalidRequest("Content-Type must be application/json"))
        }
        guard let (id, lastEventID, plan) = gate.attempt(ex, { () throws -> (RequestID, UInt64?, UpstreamPlan) in
            let request = try ChatRequest.parse(Data(ex.body()))
            return (try RequestGuard.requestID(ex), try RequestGuard.lastEventID(ex), try upstreams.prepare(request))
        }) else { return }
        let explicitID = ex.header("X-Request-Id") != nil
        if explicitID && lastEventID != nil {
            // A resume by POST: never start a new stream under that id.
            return gate.checkSession(ex, who) { [weak self] in
                self?.resume(ex, id: id, who: who, lastEventID: lastEventID ?? 0)
            }
        }
        admission.admit(ex, id: id, who: who, explicitID: explicitID) { [weak self] outcome in
            guard let self else { return }
            switch outcome {
            case .existing:
                self.resume(ex, id: id, who: who, lastEventID: lastEventID ?? 0)
            case .admitted(let budgetKey):
                let upstream: Upstream
                do {
                    upstream = try plan.make(loop: self.hub.loop)
                } catch {
                    // Nothing was generated: give back the id and the session slot.
                    self.log.discard(id)
                    self.hub.sessions.release(sid: who.sid, id: id)
                    return self.gate.fail(ex, error as? APIError ?? .internalError("the upstream call cannot be set up"))
                }
                let g = Generation(id: id, owner: who.user, sid: who.sid, budgetKey: budgetKey, upstream: upstream, host: self.hub)
                self.hub.register(g)
                self.beginStream(ex, id: id, who: who, lastSent: 0)
                g.start()
            }
        }
    }

    /// `GET /api/chat/stream/{requestId}` with `Last-Event-ID` (or `?lastEventId=`).
    func resume(_ ex: HTTPExchange, rawID: Substring) {
        guard let id = gate.attempt(ex, { try RequestID(validating: rawID) }) else { return }
        guard !gate.refusedAtConnectionLimit(ex) else { return }
        guard let who = gate.authenticate(ex) else { return }
        guard !hub.draining else { return gate.fail(ex, .notReady("draining")) }
        guard let lastEventID = gate.attempt(ex, { try RequestGuard.lastEventID(ex) }) else { return }
        gate.checkSession(ex, who) { [weak self] in
            self?.resume(ex, id: id, who: who, lastEventID: lastEventID ?? 0)
        }
    }

    /// Checks the stream and the client's position, then streams from there.
    private func resume(_ ex: HTTPExchange, id: RequestID, who: Identity, lastEventID: UInt64) {
        log.open(id) { [weak self] r in
            guard let self, ex.isOpen else { return }
            switch r {
            case .failure(let f):
                self.gate.fail(ex, .notReady("Redis is not available (\(f.isDisconnect ? "disconnected" : "error"))"))
            case .success(nil):
                self.metrics.add(.resumesNotFound)
                self.gate.fail(ex, .streamNotFound)
            case .success(let info?):
                guard info.owner == who.user else {
                    self.metrics.add(.resumesNotFound)
                    return self.gate.fail(ex, .streamNotFound)
                }
                guard lastEventID <= info.lastSeq else {
                    return self.gate.fail(ex, .invalidLastEventID("Last-Event-ID \(lastEventID) is beyond the stream's last event \(info.lastSeq)"))
                }
                let firstNeeded = lastEventID + 1
                let oldestKept = info.firstRetainedSeq ?? (info.lastSeq + 1)
                if firstNeeded < oldestKept {
                    guard self.log.lossless, info.textLength > 0 || info.lastSeq == 0 else {
                        self.metrics.add(.resumesGap)
                        return self.gate.fail(ex, .resumeGap("events after \(lastEventID) are no longer retained (oldest kept: \(oldestKept))"))
                    }
                    self.metrics.add(.resumesCatchUp)
                } else {
                    self.metrics.add(.resumesOK)
                }
                let finished = info.state != .running
                self.beginStream(ex, id: id, who: who, lastSent: lastEventID, alreadyComplete: finished && lastEventID == info.lastSeq)
            }
        }
    }

    /// Sends the stream headers and `retry:`, then subscribes.
    private func beginStream(_ ex: HTTPExchange, id: RequestID, who: Identity, lastSent: UInt64, alreadyComplete: Bool = false) {
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
        let s = Subscription(id: id, owner: who.user, sid: who.sid, exchange: ex, host: hub,
                             lastSent: lastSent, tokenExpiry: who.expiresAt)
        hub.register(s)
        s.start()
    }

    /// `DELETE /api/chat/stream/{requestId}`: the owning instance, wherever it is,
    /// stops the generation (`relay:cancel`). 202 also when already finished.
    func cancel(_ ex: HTTPExchange, rawID: Substring) {
        guard let id = gate.attempt(ex, { try RequestID(validating: rawID) }),
              let who = gate.authenticate(ex) else { return }
        var revoked = false
        hub.sessions.isRevoked(sid: who.sid) { if case .success(true) = $0 { revoked = true } }
        log.open(id) { [weak self] r in
            guard let self, ex.isOpen else { return }
            if revoked { return self.gate.fail(ex, .unauthorized("session revoked")) }
            switch r {
            case .failure:
                self.gate.fail(ex, .notReady("Redis is not available"))
            case .success(let info):
                guard let info, info.owner == who.user else { return self.gate.fail(ex, .streamNotFound) }
                let accepted = "{\"requestId\":\(JSONText.quoted(id.value)),\"state\":\(JSONText.quoted(info.state?.rawValue ?? ""))}"
                guard info.state == .running else {
                    return ex.respond(status: 202, contentType: "application/json", body: accepted)
                }
                self.log.publishCancel(id) { r in
                    if case .failure = r { return self.gate.fail(ex, .notReady("Redis is not available")) }
                    ex.respond(status: 202, contentType: "application/json", body: accepted)
                }
            }
        }
    }
}
