/// Response bodies of an OpenAI-compatible `POST /v1/chat/completions` with `"stream": true`,
/// written from OpenAI's API reference ("The chat completion chunk object", "stream_options",
/// and the streaming guide): `data: <chunk JSON>` events, a usage-only last chunk with
/// `"choices": []` when `include_usage` is set, then `data: [DONE]`.
enum OpenAIFixtures {
    static func chunk(_ choice: String, usage: String = "null") -> String {
        "data: {\"id\":\"chatcmpl-7QyqpwdfhqwajicIEznoc6Q47XAyW\",\"object\":\"chat.completion.chunk\",\"created\":1694268190,\"model\":\"gpt-4o-mini\",\"system_fingerprint\":\"fp_44709d6fcb\",\"choices\":[\(choice)],\"usage\":\(usage)}\n\n"
    }

    static func content(_ text: String) -> String {
        chunk("{\"index\":0,\"delta\":{\"content\":\"\(text)\"},\"logprobs\":null,\"finish_reason\":null}")
    }

    static let roleChunk = chunk("{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}")

    static func finish(_ reason: String) -> String {
        chunk("{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"\(reason)\"}")
    }

    static func usage(prompt: Int, completion: Int) -> String {
        "data: {\"id\":\"chatcmpl-7QyqpwdfhqwajicIEznoc6Q47XAyW\",\"object\":\"chat.completion.chunk\",\"created\":1694268190,\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":\(prompt),\"completion_tokens\":\(completion),\"total_tokens\":\(prompt + completion)}}\n\n"
    }

    static let done = "data: [DONE]\n\n"

    /// Text whose pieces mix ASCII, accents, Arabic and an emoji (2-, 3- and 4-byte UTF-8).
    static let pieces = ["Clause", " 3", " — café", " مرحبا", " 👋🏽", " done."]

    /// A whole, normal stream: role chunk, the pieces, finish_reason "stop", usage, [DONE].
    static var normal: String {
        roleChunk + pieces.map(content).joined() + finish("stop") + usage(prompt: 35, completion: 6) + done
    }

    /// The same with keep-alive comments between events (as some gateways send).
    static var withComments: String {
        ": keep-alive\n\n" + roleChunk + pieces.map { ": PROCESSING\n\n" + content($0) }.joined()
            + ": ping\n\n" + finish("stop") + usage(prompt: 35, completion: 6) + done
    }

    /// Stopped by max_tokens.
    static var length: String {
        roleChunk + content("Only") + content(" this") + finish("length") + usage(prompt: 9, completion: 2) + done
    }

    /// An error object in the stream after some text (OpenAI's mid-stream failure shape).
    static var midStreamError: String {
        roleChunk + content("Partial") + "data: {\"error\":{\"message\":\"The server had an error while processing your request. Sorry about that!\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n"
    }

    /// 401 body, from the error codes guide.
    static let invalidKey = "{\n  \"error\": {\n    \"message\": \"Incorrect API key provided: sk-test. You can find your API key at the dashboard.\",\n    \"type\": \"invalid_request_error\",\n    \"param\": null,\n    \"code\": \"invalid_api_key\"\n  }\n}\n"

    /// 429 body.
    static let rateLimited = "{\"error\":{\"message\":\"Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, Requested 1.\",\"type\":\"requests\",\"param\":null,\"code\":\"rate_limit_exceeded\"}}"

    /// 500 body.
    static let serverError = "{\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"param\":null,\"code\":null}}"
}
