/// Whether an upstream's error answer to a continuation call means "this upstream does not
/// continue answers this way" (docs/UPSTREAMS.md, "Continuing an answer").
///
/// A continuation sends what a first call never does: a final assistant message, and for
/// vLLM two extra parameters. An upstream that refuses them answers `400` (Anthropic models
/// without prefill: "This model does not support assistant message prefill"; vLLM when a
/// template cannot continue the final message) or `422` (servers that validate the body
/// with a schema). Such a refusal ends the stream with `upstream_lost`, exactly as an
/// upstream configured not to continue: the reader retries the request. Every other
/// failure (`401`, `429`, `5xx`, timeouts, a broken stream) keeps its own error, as on a
/// first call.
public enum ContinuationRefusal {
    /// `true` for the HTTP statuses that refuse a continuation's request shape (400, 422).
    /// - Parameter status: the upstream's HTTP status.
    public static func isRefusal(status: Int) -> Bool {
        status == 400 || status == 422
    }
}
