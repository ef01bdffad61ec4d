import Foundation
import Dispatch
import RelayClient
import RelayClientCurl
import RelayCore

/// `stream-relay chat`: a terminal client built on `RelayClient`. It
/// prints each render flush as it comes, a progress line on long drafts, marks
/// right-to-left answers, stops with Ctrl-C (`DELETE`), can cut its own connection to
/// show a resume (`--drop-after N`), and ends with the telemetry record as one JSON line.
enum ChatCommand {
    static let usage = """
    usage: stream-relay chat [--prompt] TEXT [--url URL]... [--token JWT | --token-file PATH]
                             [--model M] [--max-tokens N] [--summary] [--drop-after N]
      --url URL        relay base URL (default http://127.0.0.1:8080); repeat it to let
                       reconnections rotate through several relay instances
      --token JWT      bearer token (default: RELAY_TOKEN); see `stream-relay mint-token`
      --token-file PATH  read the bearer token from PATH on every connection (a token
                       refresher may rewrite it, as with Kubernetes projected tokens);
                       after `token_expired` the answer resumes with the file's new token
      --model M        model name passed to the relay
      --prompt TEXT    the user message (or - to read it from standard input); it may
                       also be given as the one positional argument:
                       stream-relay chat "Draft a mutual NDA"
      --max-tokens N   maximum tokens to generate
      --summary        ask for a summary-mode answer ("mode":"summary")
      --drop-after N   cut the connection once after N events, to show a resume
      --output FILE    also write the answer text, exactly as received, to FILE
      --parts-output FILE  write each typed part (reasoning, tool calls, sources, data:
                       docs/PROTOCOL.md §5.5) as its JSON, one line each, to FILE
      --transport T    curl (default: libcurl, cheap on CPU) or urlsession (Foundation's
                       URLSession, the kit's default on Apple platforms)
    Standard output holds exactly the answer's text. Status lines (connection, progress,
    direction) go to standard error — on a terminal, each on a line of its own without
    splitting the answer's line — and its last line is the telemetry JSON
    {"latencyMs","reconnections","requestId","tokensReceived"}.
    Ctrl-C stops the answer (DELETE) and exits within about 3 s, saying whether the relay
    confirmed the stop; a second Ctrl-C quits at once.
    Exit status: 0 finished, 130 stopped, 1 failed / timed out / needs resume, 2 usage.
    """

    /// Parsed flags.
    struct Options {
        var urls: [URL] = []
        var token: String?
        var tokenFile: String?
        var model: String?
        var prompt: String?
        var maxTokens: Int?
        var summary = false
        var dropAfter: Int?
        var output: String?
        var partsOutput: String?
        var transport = "curl"
    }

    /// Parses `arguments`; returns the options or a usage error message.
    static func parse(_ arguments: [String]) -> Result<Options, UsageError> {
        var o = Options()
        var i = 0
        func value(_ flag: String) throws -> String {
            guard i + 1 < arguments.count else { throw UsageError(message: "\(flag) needs a value") }
            i += 1
            return arguments[i]
        }
        do {
            while i < arguments.count {
                let a = arguments[i]
                switch a {
                case "--help", "-h": throw UsageError(message: "")
                case "--url":
                    let v = try value(a)
                    guard let u = URL(string: v), let scheme = u.scheme, scheme == "http" || scheme == "https", u.host != nil else {
                        throw UsageError(message: "--url must be an http(s) URL, got \(v)")
                    }
                    o.urls.append(u)
                case "--token": o.token = try value(a)
                case "--token-file": o.tokenFile = try value(a)
                case "--model": o.model = try value(a)
                case "--prompt":
                    guard o.prompt == nil else { throw UsageError(message: "the prompt is given twice") }
                    o.prompt = try value(a)
                case "--summary": o.summary = true
                case "--output": o.output = try value(a)
                case "--parts-output": o.partsOutput = try value(a)
                case "--transport":
                    let v = try value(a)
                    guard v == "curl" || v == "urlsession" else { throw UsageError(message: "--transport must be curl or urlsession") }
                    o.transport = v
                case "--max-tokens":
                    let v = try value(a)
                    guard let n = Int(v), n > 0 else { throw UsageError(message: "--max-tokens must be a positive integer") }
                    o.maxTokens = n
                case "--drop-after":
                    let v = try value(a)
                    guard let n = Int(v), n > 0 else { throw UsageError(message: "--drop-after must be a positive integer") }
                    o.dropAfter = n
                default:
                    // The prompt as a positional argument, the way LLM command-line tools take it.
                    guard a == "-" || !a.hasPrefix("-") else { throw UsageError(message: "unexpected argument \(a)") }
                    guard o.prompt == nil else { throw UsageError(message: "the prompt is given twice (\(a))") }
                    o.prompt = a
                }
                i += 1
            }
        } catch let e as UsageError {
            return .failure(e)
        } catch {
            return .failure(UsageError(message: "\(error)"))
        }
        return .success(o)
    }

    struct UsageError: Error { var message: String }

    /// Runs the command; returns the process exit status.
    static func run(arguments: [String]) async -> Int32 {
        var o: Options
        switch parse(arguments) {
        case .failure(let e):
            if e.message.isEmpty { print(usage); return 0 }
            printError("chat: \(e.message)\n\(usage)\n")
            return 2
        case .success(let parsed): o = parsed
        }
        if o.urls.isEmpty { o.urls = [URL(string: "http://127.0.0.1:8080")!] }
        if o.token != nil && o.tokenFile != nil {
            printError("chat: give --token or --token-file, not both\n")
            return 2
        }
        let tokenSource: TokenSource
        if let path = o.tokenFile {
            tokenSource = .file(path)
            do {
                _ = try tokenSource.read()
            } catch {
                printError("chat: \(error)\n")
                return 2
            }
        } else if let token = o.token ?? ProcessInfo.processInfo.environment["RELAY_TOKEN"], !token.isEmpty {
            tokenSource = .fixed(token)
        } else {
            printError("chat: no token (--token, --token-file or RELAY_TOKEN; `stream-relay mint-token` makes one)\n")
            return 2
        }
        if o.prompt == "-" { o.prompt = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) }
        guard let prompt = o.prompt, !prompt.isEmpty else {
            printError("chat: --prompt is required\n\(usage)\n")
            return 2
        }

        let transport = WatchedTransport(o.transport == "curl" ? CurlTransport() as any RelayTransport : URLSessionTransport(),
                                         baseURLs: o.urls)
        let client = RelayChatClient(baseURLs: o.urls, tokenProvider: { _ in try tokenSource.read() }, transport: transport)
        let out = Terminal()
        if let budget = try? await client.fetchBudget() {
            out.status(budget.pillText + (budget.isWarning ? " (low)" : ""))
            guard budget.canSend else {
                out.status("Send is disabled: the token budget is used up")
                return 1
            }
        }
        let request = ChatRequest(messages: [ChatMessage(role: "user", content: prompt)], model: o.model,
                                  maxTokens: o.maxTokens, mode: o.summary ? .summary : .full)
        let stream = client.startChat(request, options: .init(dropAfterEvents: o.dropAfter))
        let interrupts = LockedBox(0)  // Ctrl-C presses, counted on the signal queue
        signal(SIGINT, SIG_IGN)
        let sigint = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        sigint.setEventHandler {
            if interrupts.mutate({ $0 += 1; return $0 }) > 1 { exit(130) }
            stream.stop()
        }
        sigint.resume()
        defer { sigint.cancel(); signal(SIGINT, SIG_DFL) }

        var answer = Data()
        var parts = Data()
        /// Characters of the reasoning already shown (one status line when it ends).
        var reasoningShown = 0
        func showReasoning(_ r: String) {
            reasoningShown = r.count
            out.status(PartLine.reasoning(r))
        }
        var lastProgress: String?
        var layoutShown = false
        var completion: Completion?
        var eventsSeen = false          // any text or event arrived: a reconnection resumes
        var unreached: WatchedTransport.Unreached?   // why the last connection failed, if the relay was not reached
        var connectionAttempts = 0
        var telemetry: TelemetryRecord?
        for await update in stream {
            switch update {
            case .advice(let a):
                if let w = a.warning { out.status(w) }
                if a.suggestsSummaryMode { out.status("Low bandwidth: --summary gives a shorter answer") }
            case .connection(let c):
                switch c {
                case .connecting(let url):
                    connectionAttempts += 1
                    out.status("→ \(url.absoluteString)  request \(stream.requestId)")
                case .streaming:
                    unreached = nil
                case .waitingToReconnect(let attempt, let ms):
                    let wait = String(format: "%.1f s (attempt %d of %d)", Double(ms) / 1000, attempt, ReconnectPolicy.maxAttempts)
                    if let u = transport.takeUnreached() {
                        unreached = u
                        out.status("⟳ cannot reach the relay at \(u.url.absoluteString): \(u.reason) — retrying in \(wait)")
                    } else {
                        unreached = nil
                        out.status("⟳ connection lost — reconnecting in \(wait)")
                    }
                case .reconnecting(_, let url, let last):
                    connectionAttempts += 1
                    out.status(last == 0 && !eventsSeen ? "⟳ sending the request again to \(url.absoluteString)"
                                                        : "⟳ resuming after event \(last) on \(url.absoluteString)")
                case .longPoll(let reason, let last):
                    out.status("⇄ reading over long-poll after event \(last)\(reason.map { " (\($0.rawValue): a proxy buffers the stream)" } ?? "")")
                }
            case .render(let r):
                if !r.appended.isEmpty, reasoningShown < stream.parts.reasoning.count { showReasoning(stream.parts.reasoning) }
                if !layoutShown, let l = r.layout, !r.text.isEmpty {
                    layoutShown = true
                    if l.direction == .rightToLeft {
                        out.status(String(format: "⟦RTL⟧ right-to-left answer%@, line height ×%.1f", l.isArabic ? " (Arabic)" : "", l.lineHeightMultiplier))
                    }
                }
                out.text(r.appended)
                answer.append(contentsOf: r.appended.utf8)
                if !r.appended.isEmpty { eventsSeen = true }
                if let p = r.progress?.text, p != lastProgress {
                    lastProgress = p
                    out.status("… \(p)  (\(r.progress?.title ?? ""))")
                }
                if let c = r.completion {
                    completion = c
                    out.endOfAnswer()
                    // The last attempt's failure, recorded before the kit gave up: not reached at all?
                    if case .needsResume = c { unreached = transport.takeUnreached() } else { unreached = nil }
                }
                if r.budgetLimited { out.status("✂ " + BudgetState.budgetLimitedNote(period: client.budget?.period ?? "month")) }
            case .parts(let u):
                eventsSeen = true
                parts.append(contentsOf: (u.part.json + "\n").utf8)
                if case .reasoning = u.part { break }
                if reasoningShown < u.reasoning.count { showReasoning(u.reasoning) }
                if let line = PartLine.of(u.part) { out.status(line) }
            case .budget(let b):
                out.status(b.pillText)
            case .telemetry(let t):
                if let u = unreached {
                    out.status("✗ cannot reach the relay at \(u.url.absoluteString): \(u.reason) (\(connectionAttempts) connection attempts)")
                } else {
                    out.status(describe(completion))
                }
                telemetry = t
            }
        }
        if case .stopped? = completion {
            // The DELETE went out in the background (StopDelivery); wait for it a little,
            // not for all its retries against a relay that does not answer.
            let deadline = Date().addingTimeInterval(Double(stopConfirmationWaitMs) / 1000)
            while client.stopDeliveries.inFlight > 0 && Date() < deadline {
                try? await Task.sleep(nanoseconds: 20_000_000)
            }
            let tokenWords = o.tokenFile.map { "$(cat '\($0)')" } ?? (o.token != nil ? "<token>" : "$RELAY_TOKEN")
            out.status(describeStop(client.stopDeliveries, requestId: stream.requestId.value, url: o.urls[0],
                                    tokenWords: tokenWords))
        }
        if let t = telemetry { out.status(t.json) }
        if let path = o.partsOutput {
            do {
                try parts.write(to: URL(fileURLWithPath: path))
            } catch {
                printError("chat: cannot write \(path): \(error)\n")
                return 1
            }
        }
        if let path = o.output {
            do {
                try answer.write(to: URL(fileURLWithPath: path))
            } catch {
                printError("chat: cannot write \(path): \(error)\n")
                return 1
            }
        }
        switch completion {
        case .finished?: return 0
        case .stopped?: return 130
        default: return 1
        }
    }

    /// How long `chat` waits for the relay to confirm a stop (`DELETE`) before exiting, ms.
    static let stopConfirmationWaitMs = 2_500

    /// The last status line after a stop: whether a relay confirmed the `DELETE` (`202`, with
    /// `"state":"pending"` when it arrived before its stream, docs/PROTOCOL.md §7; the kit
    /// retries a `404` within the wait), else what happens to the
    /// answer: the relay generates it to its own end (docs/PROTOCOL.md §3.3: "The generation
    /// runs to its end even if the client disconnects") — its `done`, or the `max_tokens` the
    /// budget reservation granted (§9.2 "Clamp") — and settles the budget to every token
    /// generated (§9.2 "Settle").
    /// - Parameter tokenWords: how the retry command names the token in a shell, as the token
    ///   was given: `$RELAY_TOKEN`, `$(cat PATH)` for `--token-file`, `<token>` for `--token`
    ///   (the token itself is never printed).
    static func describeStop(_ d: StopDelivery.Counts, requestId: String, url: URL,
                             tokenWords: String = "$RELAY_TOKEN") -> String {
        if d.delivered > 0 { return "■ stop confirmed by the relay (DELETE answered)" }
        let attempts = d.attempts == 1 ? "1 attempt" : "\(d.attempts) attempts"
        let why = d.failed > 0 ? "no relay answered the DELETE (\(attempts))"
                               : "the DELETE was not answered within \(Double(stopConfirmationWaitMs) / 1000) s (\(attempts))"
        let endpoint = url.appendingPathComponent("api/chat/stream/\(requestId)").absoluteString
        return "! stop not confirmed: \(why). If no DELETE reached it, the relay keeps generating this answer "
            + "until it ends by itself (its done, or the max_tokens its budget reservation granted) and charges "
            + "every token to the budget (docs/PROTOCOL.md §3.3, §9.2). To retry the stop: "
            + "curl -X DELETE -H \"Authorization: Bearer \(tokenWords)\" \(endpoint)"
    }

    static func describe(_ c: Completion?) -> String {
        switch c {
        case .finished(let reason)?: return "✓ done (\(reason))"
        case .stopped?: return "■ stopped"
        case .timedOut?: return "! no `done` within 60 s — the answer is complete as shown; retry is possible"
        case .needsResume?: return "! could not resume after 3 attempts — re-send the request to retry"
        case .failed(let status, let code, let message)?: return "✗ \(status) \(code): \(message)"
        case nil: return "✗ ended without completion"
        }
    }
}

/// Where `chat` gets its bearer token: a fixed string, or a file read again on every
/// connection (so a token refresher that rewrites it — the way Kubernetes projected
/// service-account tokens work — is picked up, and `token_expired` resumes).
enum TokenSource: Sendable {
    case fixed(String)
    case file(String)

    struct ReadError: Error, CustomStringConvertible { var description: String }

    /// The token, whitespace trimmed.
    /// - Throws: `ReadError` when the file cannot be read or is empty.
    func read() throws -> String {
        switch self {
        case .fixed(let t): return t
        case .file(let path):
            guard let d = FileManager.default.contents(atPath: path) else {
                throw ReadError(description: "cannot read the token file \(path)")
            }
            let t = String(decoding: d, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !t.isEmpty else { throw ReadError(description: "the token file \(path) is empty") }
            return t
        }
    }
}
