/// The kind of a Redis failure: read once from an error reply's first word (RESP: "the
/// first word after the `-`, up to the first space or newline, is the kind of error
/// returned"), or set by the relay itself for a local failure (`RedisReply.disconnected`,
/// a missing stream found by a nil `XADD … NOMKSTREAM` reply).
public enum RedisErrorCode: Sendable, Equatable {
    /// The command never reached Redis or its reply was lost (connection layer).
    case disconnected
    /// `NOSCRIPT`: the script cache does not hold the SHA (restart, `SCRIPT FLUSH`).
    case noScript
    /// `NOSTREAM` (relay scripts, and the appender for an `XADD … NOMKSTREAM` nil
    /// reply): the stream does not exist (expired or gone).
    case noStream
    /// `FINISHED <state>` (relay scripts): the stream was already ended.
    case finished
    /// `OUTOFORDER <top seq>` (`Scripts.appendFinal`, `Lua/appendFinal.lua`): the seq is not the top entry's + 1.
    case outOfOrder(lastSeq: UInt64?)
    /// `XADD` refused an explicit entry ID (Redis `XADD` doc): "equal or smaller than the
    /// target stream top item" (already stored, or another writer took the seq) or "the
    /// stream has exhausted the last possible ID" (fenced after a terminal event).
    case entryIDRefused
    /// A relay script's reply has none of the shapes its header names (`ScriptReply`):
    /// set by the relay itself, never read from an error reply's text.
    case unexpectedReply
    /// Any other error kind (`ERR`, `WRONGTYPE`, `LOADING`, `BUSY`, …).
    case other(String)

    /// Classifies the text of an error reply from Redis.
    public init(message: String) {
        let words = message.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        let kind = words.first.map(String.init) ?? ""
        switch kind {
        case "NOSCRIPT": self = .noScript
        case "NOSTREAM": self = .noStream
        case "FINISHED": self = .finished
        case "OUTOFORDER": self = .outOfOrder(lastSeq: message.split(separator: " ").last.flatMap { UInt64($0) })
        case "ERR" where message.contains("equal or smaller than the target stream top item")
                || message.contains("exhausted the last possible ID"):
            self = .entryIDRefused
        default: self = .other(kind)
        }
    }
}

/// A Redis failure reported to the relay: an error reply or a lost connection.
public struct RedisFailure: Error, Sendable, CustomStringConvertible {
    /// The error text (`DISCONNECTED …`, `NOSTREAM …`, `ERR …`).
    public let message: String
    /// The failure's kind.
    public let code: RedisErrorCode
    /// The failure of an error reply from Redis, classified by its first word.
    public init(_ m: String) {
        message = m
        code = RedisErrorCode(message: m)
    }
    /// A failure the relay itself reports, typed: `message` is for logs and display.
    public init(code: RedisErrorCode, message: String) {
        self.message = message
        self.code = code
    }
    /// A local failure: the command never reached Redis, or its reply was lost.
    public static func disconnected(_ why: String) -> RedisFailure { RedisFailure(code: .disconnected, message: "DISCONNECTED " + why) }
    /// The stream does not exist (expired or gone), found by the relay itself.
    public static func noStream(_ why: String) -> RedisFailure { RedisFailure(code: .noStream, message: "NOSTREAM " + why) }
    /// `true` when the command never reached Redis or its reply was lost.
    public var isDisconnect: Bool { code == .disconnected }
    public var description: String { message }
}
