import RelayCore

/// The wire format of a stream response (docs/PROTOCOL.md §4.6): the relay's own events,
/// or the AI SDK's UI Message Stream (`UIMessageStream`). Chosen per request, on the `POST`
/// that starts (or resumes) an answer and on every resume `GET`.
public enum StreamDialect: Sendable, Equatable {
    /// `data: <event JSON>` blocks (docs/PROTOCOL.md §5): the default.
    case relay
    /// The AI SDK UI Message Stream protocol, v1.
    case uiMessageStream

    /// The `format` query parameter's value that selects the UI Message Stream.
    public static let aiSDKFormat = "ai-sdk"

    /// The dialect a request asks for: `format=ai-sdk` (query), or the request header
    /// `x-vercel-ai-ui-message-stream: v1`; neither: the relay's own.
    /// - Parameters:
    ///   - formats: every `format` query parameter's value.
    ///   - uiStreamHeader: every `x-vercel-ai-ui-message-stream` request header's value.
    /// - Throws: `APIError` 400 `invalid_request` for a `format` other than `ai-sdk`, a
    ///   repeated `format`, or a header value other than `v1`.
    public static func requested(formats: [String], uiStreamHeader: [String]) throws -> StreamDialect {
        guard formats.count <= 1 else { throw APIError.invalidRequest("format is given more than once") }
        if let f = formats.first, f != aiSDKFormat {
            throw APIError.invalidRequest("unknown format \"\(f.prefix(40))\" (the relay's own stream, or format=\(aiSDKFormat))")
        }
        if let h = uiStreamHeader.first(where: { $0 != UIMessageStream.header.value }) {
            throw APIError.invalidRequest("\(UIMessageStream.header.name): \"\(h.prefix(40))\" is not a version this relay writes (v1)")
        }
        return formats.isEmpty && uiStreamHeader.isEmpty ? .relay : .uiMessageStream
    }
}
