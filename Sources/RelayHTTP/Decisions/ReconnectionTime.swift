/// The `retry:` value a stream response tells its client (WHATWG HTML §9.2.6, the
/// reconnection time, ms), spread per connection: a crowd of clients cut at one instant (a
/// drain, an instance lost) comes back spread over a window instead of at one instant. Pure.
public enum ReconnectionTime {
    /// The centre of the window, ms.
    public static let baseMs = 1000
    /// How far from the centre a connection's value may lie, percent of `baseMs`.
    public static let spreadPercent = 50

    /// A connection's reconnection time, ms: uniform over
    /// `baseMs ± baseMs·spreadPercent/100` (inclusive) by `random`, the connection's own
    /// random value (any `UInt64`; the modulo bias is below 2⁻⁵⁰).
    /// - Precondition: `baseMs > 0`, `0 ≤ spreadPercent ≤ 100`.
    public static func milliseconds(random: UInt64, baseMs: Int = baseMs, spreadPercent: Int = spreadPercent) -> Int {
        precondition(baseMs > 0 && (0...100).contains(spreadPercent))
        let span = baseMs * spreadPercent / 100
        return baseMs - span + Int(random % UInt64(2 * span + 1))
    }
}
