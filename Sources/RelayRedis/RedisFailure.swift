import RelayStreamLogic

/// The kind of a Redis failure, read once from the error reply's first word (RESP:
/// "the first word after the `-`, up to the first space or newline, is the kind of
/// error returned") or from the connection layer's `DISCONNECTED`.
public enum RedisErrorCode: Sendable, Equatable {
    /// The command never reached Redis or its reply was lost (connection layer).
    case disconnected
    /// `NOSCRIPT`: the script cache does not hold the SHA (restart, `SCRIPT FLUSH`).
    case noScript
    /// `NOSTREAM` (relay scripts): the stream does not exist (expired or gone).
    case noStream
    /// `FINISHED` (relay scripts): the stream was ended by someone else.
    case finished
    /// `OUTOFORDER <last_seq>` (relay scripts): the append's seq is not `last_seq + 1`.
    case outOfOrder(lastSeq: UInt64?)
    /// Any other error kind (`ERR`, `WRONGTYPE`, `LOADING`, `BUSY`, …).
    case other(String)

    /// Classifies an error text.
    public init(message: String) {
        let words = message.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        let kind = words.first.map(String.init) ?? ""
        switch kind {
        case "DISCONNECTED": self = .disconnected
        case "NOSCRIPT": self = .noScript
        case "NOSTREAM": self = .noStream
        case "FINISHED": self = .finished
        case "OUTOFORDER": self = .outOfOrder(lastSeq: message.split(separator: " ").last.flatMap { UInt64($0) })
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
    public init(_ m: String) {
        message = m
        code = RedisErrorCode(message: m)
    }
    /// `true` when the command never reached Redis or its reply was lost.
    public var isDisconnect: Bool { code == .disconnected }
    public var description: String { message }

    /// How the appender must treat this failure of an append.
    public var appendReply: AppendReply {
        switch code {
        case .outOfOrder(let last): return .outOfOrder(lastSeq: last)
        case .noStream, .finished: return .permanent
        default: return .retryable
        }
    }
}
