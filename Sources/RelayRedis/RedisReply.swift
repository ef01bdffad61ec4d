import CHiredis

/// A Redis reply (RESP2), copied out of hiredis' `redisReply` so it outlives the callback.
public enum RedisReply: Sendable, Equatable {
    /// Bulk string (binary-safe bytes, decoded as UTF-8 by `string`).
    case bulk([UInt8])
    /// Simple status such as `OK`.
    case status(String)
    case integer(Int64)
    case array([RedisReply])
    /// Null bulk or null array.
    case null
    /// An error reply from Redis (`ERR …`, `NOSCRIPT …`, a relay script's `NOSTREAM …`).
    case error(String)
    /// A local failure, not a reply: the command never reached Redis or its reply was
    /// lost (connection down or closed, no cluster node for the slot); the reason.
    case disconnected(String)

    init(_ r: UnsafeMutablePointer<redisReply>?) {
        guard let r else {
            self = .disconnected("connection to Redis lost")
            return
        }
        let p = r.pointee
        switch p.type {
        case REDIS_REPLY_STRING:
            self = .bulk(p.len > 0 ? Array(UnsafeRawBufferPointer(start: p.str, count: Int(p.len))) : [])
        case REDIS_REPLY_STATUS:
            self = .status(String(cString: p.str))
        case REDIS_REPLY_ERROR:
            self = .error(String(cString: p.str))
        case REDIS_REPLY_INTEGER:
            self = .integer(Int64(p.integer))
        case REDIS_REPLY_ARRAY:
            var items: [RedisReply] = []
            items.reserveCapacity(Int(p.elements))
            for i in 0..<Int(p.elements) { items.append(RedisReply(p.element[i])) }
            self = .array(items)
        default:
            self = .null
        }
    }

    /// The reply as text: bulk (UTF-8, invalid bytes replaced) or status; else `nil`.
    public var string: String? {
        switch self {
        case .bulk(let b): return String(decoding: b, as: UTF8.self)
        case .status(let s): return s
        default: return nil
        }
    }

    /// Integer replies, and bulk strings holding a decimal integer.
    public var int: Int64? {
        switch self {
        case .integer(let i): return i
        case .bulk: return string.flatMap { Int64($0) }
        default: return nil
        }
    }

    /// The elements of an array reply, else `nil`.
    public var array: [RedisReply]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The error text of an error reply or a local failure (`DISCONNECTED <reason>`, for
    /// logs and display), else `nil`. Decide on `failure`'s code, never on this text.
    public var errorMessage: String? {
        switch self {
        case .error(let e): return e
        case .disconnected(let why): return "DISCONNECTED " + why
        default: return nil
        }
    }

    /// The failure an error reply or a local failure stands for, typed; else `nil`.
    public var failure: RedisFailure? {
        switch self {
        case .error(let e): return RedisFailure(e)
        case .disconnected(let why): return .disconnected(why)
        default: return nil
        }
    }
}

/// A reply looked at where hiredis holds it, for handlers that only need to know
/// whether it is an error (and its text) or null: nothing is copied unless asked
/// (`reply`). Valid only during the handler call — hiredis frees the reply right after
/// (`redisProcessCallbacks`); never keep it or let it escape.
///
/// The append's replies (`XADD` → a bulk entry ID, `SETRANGE`/`PUBLISH` → integers) are
/// only checked for an error; copying each into a `RedisReply` (a `[UInt8]` or an array
/// per reply) would allocate on every event for nothing.
public struct RedisReplyView {
    private enum Source {
        case hiredis(UnsafeMutablePointer<redisReply>)
        case copied(RedisReply)
    }
    private let source: Source

    init(_ r: UnsafeMutablePointer<redisReply>?) {
        source = r.map { .hiredis($0) } ?? .copied(.disconnected("connection to Redis lost"))
    }

    /// A view of an already copied reply (channels without in-place replies, local errors).
    public init(_ reply: RedisReply) {
        source = .copied(reply)
    }

    /// `true` for an error reply (`ERR …`, `WRONGTYPE …`) or a local failure (`RedisReply.disconnected`).
    public var isError: Bool {
        switch source {
        case .hiredis(let r): return r.pointee.type == REDIS_REPLY_ERROR
        case .copied(let c): return c.errorMessage != nil
        }
    }

    /// `true` for a null bulk or null array reply (e.g. `XADD … NOMKSTREAM` on a missing key).
    public var isNull: Bool {
        switch source {
        case .hiredis(let r): return r.pointee.type == REDIS_REPLY_NIL
        case .copied(let c): return c == .null
        }
    }

    /// The error text of an error reply or a local failure (copied), else `nil`.
    public var errorMessage: String? {
        switch source {
        case .hiredis(let r): return r.pointee.type == REDIS_REPLY_ERROR ? String(cString: r.pointee.str) : nil
        case .copied(let c): return c.errorMessage
        }
    }

    /// The failure an error reply or a local failure stands for, typed; else `nil`.
    public var failure: RedisFailure? {
        switch source {
        case .hiredis(let r): return r.pointee.type == REDIS_REPLY_ERROR ? RedisFailure(String(cString: r.pointee.str)) : nil
        case .copied(let c): return c.failure
        }
    }

    /// The whole reply, copied out of hiredis.
    public var reply: RedisReply {
        switch source {
        case .hiredis(let r): return RedisReply(r)
        case .copied(let c): return c
        }
    }
}

extension RedisReplyView {
    /// A reply handler that reads nothing (a plain function: no closure context to
    /// allocate), for commands whose reply or error nobody acts on, sent as a
    /// `RESPCommand` (`send(_:view:)` takes a handler).
    public static func unread(_ reply: RedisReplyView) {}
}
