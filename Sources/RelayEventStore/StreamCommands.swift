import RelayRedis
/// One stream's per-event command heads, written once when its appender starts
/// (`EventLog.commands(for:)`): the keys, and the RESP of `XADD <events> NOMKSTREAM` and
/// of `PUBLISH <live>` (`SPUBLISH` with sharded pub/sub).
public struct StreamCommands: Sendable {
    /// The stream's keys.
    public let keys: StreamKeys
    /// `XADD <events key> NOMKSTREAM`.
    public let xaddHead: RESPArguments
    /// `PUBLISH <live channel>` (or `SPUBLISH`).
    public let publishHead: RESPArguments
}
