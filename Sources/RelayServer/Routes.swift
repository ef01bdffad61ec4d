import RelayCore

/// The routing table (DESIGN §2). Unknown paths are 404 `not_found`; a known path
/// with another method is 405 with `Allow`.
extension Worker {
    func route(_ ex: HTTPExchange) {
        let path = ex.path
        let streamPrefix = "/api/chat/stream/"
        switch path {
        case "/api/chat/stream":
            guard ex.method == .post else { return methodNotAllowed(ex, "POST") }
            startStream(ex)
        case "/healthz":
            guard ex.method == .get || ex.method == .head else { return methodNotAllowed(ex, "GET") }
            ex.respond(status: 200, contentType: "application/json", body: "{\"status\":\"ok\"}")
        case "/readyz":
            guard ex.method == .get || ex.method == .head else { return methodNotAllowed(ex, "GET") }
            if isReady {
                ex.respond(status: 200, contentType: "application/json", body: "{\"status\":\"ready\"}")
            } else {
                ex.respond(.notReady(draining ? "draining" : "Redis is not reachable"))
            }
        case "/metrics":
            guard ex.method == .get else { return methodNotAllowed(ex, "GET") }
            flushCounters()
            ex.respond(status: 200, contentType: "text/plain; version=0.0.4", body: metrics.render())
        case "/api/budget":
            guard ex.method == .get else { return methodNotAllowed(ex, "GET") }
            budget(ex)
        default:
            if path.hasPrefix(streamPrefix) {
                let rawID = path.dropFirst(streamPrefix.count)
                switch ex.method {
                case .get: resumeStream(ex, rawID: rawID)
                case .delete: cancelStream(ex, rawID: rawID)
                default: methodNotAllowed(ex, "GET, DELETE")
                }
            } else if path.hasPrefix("/admin/") {
                // Every /admin/ path answers 401 alike without the admin key, so nothing
                // tells which admin routes exist (issue 3).
                guard let key = context.adminKey,
                      (try? key.authorize(authorizationValues: ex.headerValues("Authorization"))) != nil else {
                    return fail(ex, .unauthorized("admin credentials required"))
                }
                guard path.hasPrefix("/admin/sessions/"), path.hasSuffix("/revoke"),
                      path.count > "/admin/sessions//revoke".count else { return ex.respond(.routeNotFound) }
                guard ex.method == .post else { return methodNotAllowed(ex, "POST") }
                let raw = String(path.dropFirst("/admin/sessions/".count).dropLast("/revoke".count))
                guard let sid = HTTPExchange.percentDecoded(raw) else {
                    return fail(ex, .invalidRequest("bad session id encoding"))
                }
                revokeSession(ex, sid: sid)
            } else {
                ex.respond(.routeNotFound)
            }
        }
    }

    func methodNotAllowed(_ ex: HTTPExchange, _ allow: String) {
        ex.respond(.methodNotAllowed(allow), headers: [("Allow", allow)])
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
        if e.code == "token_budget_exhausted" { metrics.add(.budgetRefusals) }
        var headers: [(String, String)] = []
        if e.status == 401 { headers.append(("WWW-Authenticate", "Bearer")) }
        ex.respond(e, headers: headers)
    }
}
