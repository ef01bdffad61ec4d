/// When the relay fetches its JSON Web Key Set again (docs/TOKENS.md). Pure: no clock, no I/O;
/// the fetcher passes times and the response's `Cache-Control`.
///
/// * After a good fetch: the provider's `Cache-Control: max-age` (RFC 9111 §5.2.2.1) when
///   it sends one, kept within `minimumIntervalMs...maxIntervalMs`; otherwise (no header,
///   `no-cache`, `no-store`) every `refreshMs` (`RELAY_JWT_JWKS_REFRESH`).
/// * After a failed fetch with a set in hand: again after `min(refreshMs, minimumIntervalMs)`
///   (the last good set stays in use meanwhile).
/// * Before the first set: backing off from 250 ms, doubling, up to `startupRetryCapMs` (2 s):
///   the relay is not ready until it has a set, so it is ready within about 2 s of the
///   provider coming back; a token arriving meanwhile asks for a fetch at once
///   (``UnknownKidRefetch``).
///
/// Fetches for tokens naming unknown kids follow ``UnknownKidRefetch``, not this policy.
public struct JWKSRefreshPolicy: Sendable, Equatable {
    /// Refresh interval without cache headers, ms (`RELAY_JWT_JWKS_REFRESH`, default 10 min).
    public let refreshMs: Int
    /// Shortest time between fetches caused by cache headers, and the retry after a failed
    /// refresh with a set in hand, ms (`RELAY_JWT_JWKS_MIN_INTERVAL`, default 60 s).
    public let minimumIntervalMs: Int
    /// Longest `max-age` honoured, ms (24 h).
    public static let maxIntervalMs = 86_400_000
    /// Longest wait between tries before the first set, ms.
    public static let startupRetryCapMs = 2_000

    /// - Parameters: see the properties; both are clamped to at least 1 ms.
    public init(refreshMs: Int, minimumIntervalMs: Int) {
        self.refreshMs = max(1, refreshMs)
        self.minimumIntervalMs = max(1, minimumIntervalMs)
    }

    /// The `max-age` of a `Cache-Control` value in seconds, or nil when absent, malformed,
    /// or overridden by `no-cache`/`no-store`. Directive names are case-insensitive
    /// (RFC 9111 §5.2); `max-age="60"` (quoted) is accepted.
    public static func maxAgeSeconds(cacheControl: String?) -> Int? {
        guard let cacheControl else { return nil }
        var maxAge: Int?
        for raw in cacheControl.split(separator: ",") {
            let d = raw.trimmingWhitespace().lowercased()
            if d == "no-cache" || d == "no-store" { return nil }
            if d.hasPrefix("max-age=") {
                var v = d.dropFirst("max-age=".count)
                if v.hasPrefix("\""), v.hasSuffix("\""), v.count >= 2 { v = v.dropFirst().dropLast() }
                guard let n = Int(v), n >= 0 else { return nil }
                maxAge = n
            }
        }
        return maxAge
    }

    /// Delay until the next refresh after a good fetch whose response had `cacheControl`, ms.
    public func nextRefreshMs(cacheControl: String?) -> Int {
        guard let s = Self.maxAgeSeconds(cacheControl: cacheControl) else { return refreshMs }
        let ms = s > Self.maxIntervalMs / 1000 ? Self.maxIntervalMs : s * 1000
        return min(max(ms, minimumIntervalMs), Self.maxIntervalMs)
    }

    /// Delay until the next try after `consecutiveFailures` (≥ 1) failed fetches, ms.
    public func retryMs(consecutiveFailures: Int, haveSet: Bool) -> Int {
        if haveSet { return min(refreshMs, minimumIntervalMs) }
        let shift = min(max(consecutiveFailures - 1, 0), 20)
        return min(250 << shift, Self.startupRetryCapMs)
    }
}

extension Substring {
    func trimmingWhitespace() -> Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return s
    }
}
