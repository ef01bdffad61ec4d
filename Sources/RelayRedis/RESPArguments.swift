/// A run of command arguments written in the Redis protocol once (RESP bulk strings,
/// `$<len>\r\n<bytes>\r\n` each, "Redis serialization protocol specification"), added
/// to a `RESPCommand` with one copy (`RESPCommand.add(_:)`).
///
/// The per-event commands start with the same arguments every time for one
/// stream — `XADD <events key> NOMKSTREAM`, `PUBLISH <channel>` — and writing them
/// argument by argument (a length header, a copy, a CRLF each) costs about a tenth of the
/// append path's instructions (docs/BENCHMARKS.md). Immutable; made once per stream
/// (`EventLog.commands(for:)`).
public struct RESPArguments: Sendable {
    /// The arguments' RESP bytes, back to back.
    public let bytes: [UInt8]
    /// How many arguments `bytes` holds.
    public let count: Int

    /// Writes `arguments` (binary-safe UTF-8) with `RESPCommand`, without its `*<n>` header.
    public init(_ arguments: [String]) {
        let c = RESPCommand(capacity: 64)
        c.start(argumentCount: arguments.count)
        let header = c.count   // `*<n>\r\n`: a run is added inside another command
        for a in arguments { c.add(a) }
        bytes = Array(c.bytes[header...])
        count = arguments.count
    }
}
