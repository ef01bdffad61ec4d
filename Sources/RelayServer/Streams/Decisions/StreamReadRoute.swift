import Foundation
import RelayCore
import RelayHTTP

/// Which read a `GET`/`HEAD` of `/api/chat/stream/{requestId}` is (docs/PROTOCOL.md §6.1,
/// §12.1). One URL serves two protocols: the SSE resume (`EventSource`, the kits, every SSE
/// client) and the Durable Streams read (`offset`, `live`). The rule, in order:
///
/// 0. The UI Message Stream dialect asked for (`format=ai-sdk`) with `offset` or `live`:
///    refused, `400 invalid_request` (the dialect is an SSE resume, not an offset read).
/// 1. `offset` present: an offset read from it.
/// 2. `live` without `offset`: refused, `400 invalid_offset` (a live read needs a position;
///    Durable Streams PROTOCOL.md §5.7, §5.8).
/// 3. `Last-Event-ID` (header or `?lastEventId=`) present, an `Accept` that names
///    `text/event-stream` (what `EventSource` sends, WHATWG HTML §9.2.4, and every SSE client
///    here), or the UI Message Stream dialect asked for (`format=ai-sdk`, §4.6): the SSE
///    resume, from `Last-Event-ID` or 0.
/// 4. Anything else — a Durable Streams client's default call, which sends no `offset`
///    (Durable Streams PROTOCOL.md §5.6: `offset` defaults to `-1`): a catch-up offset read
///    from the start.
///
/// Pure.
enum StreamReadRoute: Equatable {
    /// An offset read from this raw `offset` value.
    case offsetRead(rawOffset: String)
    /// The SSE resume (docs/PROTOCOL.md §6).
    case sseResume
    /// Refused with this error.
    case refuse(APIError)

    /// - Parameters:
    ///   - offset, live: the query parameters' values (nil: absent).
    ///   - hasLastEventID: a `Last-Event-ID` header or `lastEventId` query parameter is present.
    ///   - accept: every `Accept` header value.
    ///   - dialect: the stream format the request asks for (`StreamDialect`).
    static func choose(offset: String?, live: String?, hasLastEventID: Bool, accept: [String],
                       dialect: StreamDialect = .relay) -> StreamReadRoute {
        // The UI Message Stream is a stream from `Last-Event-ID`: an offset read has no such
        // dialect, and answering one in JSON would ignore what the client asked for.
        if dialect == .uiMessageStream, offset != nil || live != nil {
            return .refuse(.invalidRequest("format=\(StreamDialect.aiSDKFormat) resumes from Last-Event-ID; offset and live are offset reads (no format)"))
        }
        if let offset { return .offsetRead(rawOffset: offset) }
        if live != nil {
            return .refuse(APIError(.invalidOffset, "live needs an offset: add offset=-1 (from the start) or offset=now (from the tail)"))
        }
        // A UI Message Stream client (`format=ai-sdk`) resumes with the stream itself.
        if hasLastEventID || acceptsEventStream(accept) || dialect == .uiMessageStream { return .sseResume }
        return .offsetRead(rawOffset: "-1")
    }

    /// Whether an `Accept` value names `text/event-stream` as acceptable (RFC 9110 §12.5.1: a
    /// list of media ranges, case-insensitive, with parameters; `q=0` means "not acceptable");
    /// `*/*` does not name it.
    static func acceptsEventStream(_ values: [String]) -> Bool {
        values.contains { value in
            value.split(separator: ",").contains { range in
                let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                guard parts.first == "text/event-stream" else { return false }
                let q = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
                return q > 0
            }
        }
    }
}
