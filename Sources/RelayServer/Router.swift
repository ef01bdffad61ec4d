import RelayAuth
import RelayCore
import RelayRedis
import RelayUpstream
import RelayHTTP

/// The routing table (docs/PROTOCOL.md §1): maps method and path to a route handler
/// (`ChatStreamRoutes`, `AccountRoutes`) or answers the operational endpoints
/// (`/healthz`, `/readyz`, `/metrics`) itself. Unknown paths are 404 `not_found`; a
/// known path with another method is 405 with `Allow`. Loop thread only.
final class Router {
    private let context: ServerContext
    private let hub: StreamHub
    private let gate: RequestGuard
    private let chat: ChatStreamRoutes
    private let account: AccountRoutes
    private let isReady: () -> Bool
    /// Requests whose token names a key not in the JWKS yet wait here for a refetch (with
    /// `RELAY_JWT_JWKS_URL` only).
    let keyWait: JWKSKeyWait?
    private let notReadyReason: () -> String

    /// - Parameters:
    ///   - isReady: `/readyz`'s answer (Redis reachable and not draining).
    ///   - notReadyReason: the `not_ready` message when it is not (names unreachable Redis Cluster primaries).
    init(context: ServerContext, hub: StreamHub, upstreams: UpstreamFactory, ticketKeys: ReadTicketKeyLoader,
         isReady: @escaping () -> Bool, notReadyReason: @escaping () -> String = { "Redis is not reachable" }) {
        self.context = context
        self.hub = hub
        gate = RequestGuard(context: context, sessions: hub.sessions, ticketKeys: ticketKeys)
        chat = ChatStreamRoutes(gate: gate, hub: hub, upstreams: upstreams)
        account = AccountRoutes(gate: gate, ledger: hub.ledger)
        self.isReady = isReady
        self.notReadyReason = notReadyReason
        if let store = context.jwks, let verifier = (context.authenticator as? JWTAuthenticator)?.verifier as? JWKSVerifier {
            keyWait = JWKSKeyWait(loop: hub.loop, store: store, verifier: verifier, timeoutMs: context.config.jwtJWKSTimeoutMs,
                                  metrics: context.metrics)
        } else {
            keyWait = nil
        }
    }

    /// Routes `ex`; an `/api/` request whose token names a key the JWKS lacks first waits for
    /// a refetch (`JWKSKeyWait`, docs/TOKENS.md), then is routed as if it had just arrived.
    func route(_ ex: HTTPExchange) {
        if let wait = keyWait, ex.path.hasPrefix("/api/"), wait.park(ex, resume: { [unowned self] in self.dispatch(ex) }) { return }
        dispatch(ex)
    }

    private func dispatch(_ ex: HTTPExchange) {
        let path = ex.path
        let streamPrefix = "/api/chat/stream/"
        switch path {
        case "/api/chat/stream":
            guard ex.method == .post else { return gate.methodNotAllowed(ex, "POST") }
            chat.start(ex)
        case "/healthz":
            guard ex.method == .get || ex.method == .head else { return gate.methodNotAllowed(ex, "GET, HEAD") }
            ex.respond(status: 200, contentType: "application/json", body: "{\"status\":\"ok\"}")
        case "/readyz":
            guard ex.method == .get || ex.method == .head else { return gate.methodNotAllowed(ex, "GET, HEAD") }
            if isReady() {
                ex.respond(status: 200, contentType: "application/json", body: "{\"status\":\"ready\"}")
            } else {
                ex.respond(.notReady(notReadyReason()))
            }
        case "/metrics":
            guard ex.method == .get || ex.method == .head else { return gate.methodNotAllowed(ex, "GET, HEAD") }
            hub.flushCounters()
            ex.respond(status: 200, contentType: "text/plain; version=0.0.4", body: context.metrics.render())
        case "/api/budget":
            guard ex.method == .get || ex.method == .head else { return gate.methodNotAllowed(ex, "GET, HEAD") }
            account.budget(ex)
        default:
            if path.hasPrefix("/api/chat/answers/") {
                guard ex.method == .get || ex.method == .head else { return gate.methodNotAllowed(ex, "GET, HEAD") }
                chat.answers.get(ex, rawID: path.dropFirst("/api/chat/answers/".count))
            } else if path.hasPrefix(streamPrefix) {
                let rawID = path.dropFirst(streamPrefix.count)
                switch ex.method {
                case .get, .head: chat.resume(ex, rawID: rawID)
                case .delete: chat.cancel(ex, rawID: rawID)
                default: gate.methodNotAllowed(ex, "GET, HEAD, DELETE")
                }
            } else if path.hasPrefix("/admin/") {
                // Every /admin/ path answers 401 alike without the admin key, so nothing
                // tells which admin routes exist.
                guard let key = context.adminKey,
                      (try? key.authorize(authorizationValues: ex.headerValues("Authorization"))) != nil else {
                    return gate.fail(ex, .unauthorized("admin credentials required"))
                }
                if path.hasPrefix("/admin/users/"), path.hasSuffix("/answers/erase"),
                   path.count > "/admin/users//answers/erase".count {
                    guard ex.method == .post else { return gate.methodNotAllowed(ex, "POST") }
                    let raw = String(path.dropFirst("/admin/users/".count).dropLast("/answers/erase".count))
                    guard let sub = HTTPExchange.percentDecoded(raw) else {
                        return gate.fail(ex, .invalidRequest("bad sub encoding"))
                    }
                    return chat.answers.erase(ex, sub: sub)
                }
                guard path.hasPrefix("/admin/sessions/"), path.hasSuffix("/revoke"),
                      path.count > "/admin/sessions//revoke".count else { return ex.respond(.routeNotFound) }
                guard ex.method == .post else { return gate.methodNotAllowed(ex, "POST") }
                let raw = String(path.dropFirst("/admin/sessions/".count).dropLast("/revoke".count))
                guard let sid = HTTPExchange.percentDecoded(raw) else {
                    return gate.fail(ex, .invalidRequest("bad session id encoding"))
                }
                account.revokeSession(ex, sid: sid)
            } else {
                ex.respond(.routeNotFound)
            }
        }
    }
}
