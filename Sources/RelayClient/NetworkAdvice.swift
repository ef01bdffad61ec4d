import RelayCore

/// What the device reports about its connection, as in the Network Information API
/// (`effectiveType`, `rtt`, `downlink`). Any field may be unknown.
public struct NetworkConditions: Sendable, Equatable {
    /// `slow-2g`, `2g`, `3g`, `4g`, `5g`, `wifi`, `ethernet`, …
    public var connectionType: String?
    /// Round-trip time, ms.
    public var rttMs: Double?
    /// Downlink bandwidth, Mbit/s.
    public var downlinkMbps: Double?

    public init(connectionType: String? = nil, rttMs: Double? = nil, downlinkMbps: Double? = nil) {
        self.connectionType = connectionType
        self.rttMs = rttMs
        self.downlinkMbps = downlinkMbps
    }
}

/// Adapts the client to the network (`conformance/CLIENT_RULES.md`):
/// * `2g` / `slow-2g` → the warning "Slow connection detected — response may take longer";
/// * RTT over 500 ms → reconnect backoff 3 s (else 1 s);
/// * downlink under 0.5 Mbit/s → suggest summary mode (the request then carries
///   `"mode":"summary"`, see `applySummaryMode(to:)`).
public struct NetworkAdvice: Sendable, Equatable {
    /// The slow-connection warning text.
    public static let slowConnectionWarning = "Slow connection detected — response may take longer"
    /// RTT above which the backoff is long, ms.
    public static let slowRttMs = 500.0
    /// Downlink below which summary mode is suggested, Mbit/s.
    public static let summaryDownlinkMbps = 0.5
    /// Normal reconnect backoff, ms.
    public static let normalBackoffMs: Int64 = 1_000
    /// Backoff on high-latency links, ms.
    public static let slowBackoffMs: Int64 = 3_000

    /// The warning to show, if any.
    public let warning: String?
    /// Wait before each reconnection, ms.
    public let reconnectBackoffMs: Int64
    /// `true` when the app should offer (or pick) summary mode.
    public let suggestsSummaryMode: Bool

    public init(_ c: NetworkConditions) {
        let type = c.connectionType?.lowercased()
        warning = (type == "2g" || type == "slow-2g") ? Self.slowConnectionWarning : nil
        reconnectBackoffMs = (c.rttMs ?? 0) > Self.slowRttMs ? Self.slowBackoffMs : Self.normalBackoffMs
        suggestsSummaryMode = c.downlinkMbps.map { $0 < Self.summaryDownlinkMbps } ?? false
    }

    /// `request` with `mode` set to `summary` when summary mode is suggested.
    public func applySummaryMode(to request: ChatRequest) -> ChatRequest {
        var r = request
        if suggestsSummaryMode { r.mode = .summary }
        return r
    }
}
