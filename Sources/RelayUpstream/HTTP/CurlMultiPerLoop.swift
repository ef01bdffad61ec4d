import RelayCore
import RelayLoop

/// The `CurlMulti` of each loop a factory serves, made on first use (normally one: one factory
/// per worker). Not thread-safe: used on its worker's thread only.
final class CurlMultiPerLoop {
    private var multis: [ObjectIdentifier: CurlMulti] = [:]

    init(_ given: CurlMulti?) {
        if let m = given { multis[ObjectIdentifier(m.loop)] = m }
    }

    /// - Throws: `APIError` 500 `internal_error` when libcurl cannot be set up.
    func multi(for loop: EventLoop) throws -> CurlMulti {
        if let m = multis[ObjectIdentifier(loop)] { return m }
        do {
            let m = try CurlMulti(loop: loop)
            multis[ObjectIdentifier(loop)] = m
            return m
        } catch {
            throw APIError.internalError("cannot set up libcurl: \(error)")
        }
    }
}

extension ChatRequest {
    /// The model to ask for: the request's, else `fallback`.
    /// - Throws: `APIError` 400 `invalid_request` when neither is set.
    func resolvedModel(_ fallback: String?) throws -> String {
        guard let m = model ?? fallback, !m.isEmpty else {
            throw APIError.invalidRequest("\"model\" is required (no default model is configured, UPSTREAM_MODEL)")
        }
        return m
    }

    /// `max_tokens` after summary mode's cap (`nil` stays `nil` in full mode).
    func effectiveMaxTokens(summaryCap: Int) -> Int? {
        guard mode == .summary else { return maxTokens }
        return min(maxTokens ?? summaryCap, summaryCap)
    }
}
