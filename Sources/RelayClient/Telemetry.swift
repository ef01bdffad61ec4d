import Foundation

/// The only thing the client kit ever reports about a response
/// (`conformance/CLIENT_RULES.md`): exactly `{requestId, tokensReceived, latencyMs, reconnections}` —
/// never content, prompts, tokens or URLs.
public struct TelemetryRecord: Sendable, Equatable, Codable {
    /// The stream's request id.
    public var requestId: String
    /// Delta events received (one per token on the relay's wire).
    public var tokensReceived: Int
    /// Time from sending the request to the first delta, ms (0 when none arrived).
    public var latencyMs: Int
    /// Reconnections made (resumes with `Last-Event-ID` and re-sent requests).
    public var reconnections: Int

    public init(requestId: String, tokensReceived: Int, latencyMs: Int, reconnections: Int) {
        self.requestId = requestId
        self.tokensReceived = tokensReceived
        self.latencyMs = latencyMs
        self.reconnections = reconnections
    }

    /// One-line JSON with exactly the four keys, in a fixed order.
    public var json: String {
        let data = (try? JSONEncoder.sorted.encode(self)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

/// Receives one record per finished response. Called once, from any thread.
public typealias TelemetrySink = @Sendable (TelemetryRecord) -> Void

extension JSONEncoder {
    static var sorted: JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }
}
