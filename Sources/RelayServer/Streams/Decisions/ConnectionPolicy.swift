/// Per-connection timing decisions of a live stream.
public enum ConnectionPolicy {
    /// A `: ping` comment is due when the connection has been quiet for `intervalMs`
    /// (every 15 s by default: docs/PROTOCOL.md §4).
    public static func heartbeatDue(nowMs: UInt64, lastWriteMs: UInt64, intervalMs: UInt64) -> Bool {
        nowMs >= lastWriteMs + intervalMs
    }

    /// The connection's token expired (`exp` + leeway < now, RFC 7519 §4.1.4):
    /// the stream ends with `401 token_expired`.
    public static func tokenExpired(nowS: Int64, expiresAt: Int64?, leewayS: Int64) -> Bool {
        guard let exp = expiresAt else { return false }
        return nowS > exp + leewayS
    }
}
