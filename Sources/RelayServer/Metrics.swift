import Synchronization
import RelayUpstream
import RelayEventStore

/// Process-wide counters, gauges and histograms, shared by all workers and rendered
/// by `GET /metrics` in the Prometheus text exposition format (version 0.0.4).
/// Updates take one uncontended lock (tens of ns).
public final class Metrics: Sendable {
    /// Monotonic counters (`relay_…_total`).
    public enum Counter: Int, CaseIterable, Sendable {
        case eventsAppended, eventsDelivered, streamsStarted, resumesOK, resumesGap, resumesNotFound, resumesCatchUp, resumesRetained
        case revocations, cancels, slowConsumerDisconnects, requestErrors, upstreamErrors, budgetRefusals
        case budgetReservations, budgetSettlements
        case jwksFetchesOK, jwksFetchesFailed, jwksUnknownKidRefetches
        case acceptErrors, connectionsShed, requestHeadRejections, requestDeadlineCuts, pendingRequestRefusals
        case deltasMerged, catchUpEvents, appendAuxiliaryErrors, replaysWaited, replaysSkipped
        case cancelsPending
        case jwksParkedRequests
        case answersRetained, answersRetainedBytes, answersNotRetainedOversize, answersNotRetainedIncomplete, answerReads, answersErased
        case takeovers, continuationsRefused, orphansSwept, sessionSlotsLost
        case completionWebhooksQueued, completionWebhooksDelivered, completionWebhooksDropped, completionWebhooksSkipped
        case completionWebhookAttemptsOK, completionWebhookAttemptsFailed, completionWebhookRetries
        case atRestSeals, atRestOpens, atRestOpenFailures

        var name: String {
            switch self {
            case .eventsAppended: return "relay_events_appended_total"
            case .eventsDelivered: return "relay_events_delivered_total"
            case .streamsStarted: return "relay_generations_started_total"
            case .resumesOK: return "relay_resumes_total{outcome=\"ok\"}"
            case .resumesGap: return "relay_resumes_total{outcome=\"gap\"}"
            case .resumesNotFound: return "relay_resumes_total{outcome=\"not_found\"}"
            case .resumesCatchUp: return "relay_resumes_total{outcome=\"catch_up\"}"
            case .revocations: return "relay_revocations_total"
            case .cancels: return "relay_cancels_total"
            case .slowConsumerDisconnects: return "relay_slow_consumer_disconnects_total"
            case .requestErrors: return "relay_request_errors_total"
            case .upstreamErrors: return "relay_upstream_errors_total"
            case .budgetReservations: return "relay_budget_reservations_total"
            case .budgetSettlements: return "relay_budget_settlements_total"
            case .budgetRefusals: return "relay_budget_refusals_total"
            case .jwksFetchesOK: return "relay_jwks_fetches_total{result=\"ok\"}"
            case .jwksFetchesFailed: return "relay_jwks_fetches_total{result=\"error\"}"
            case .jwksUnknownKidRefetches: return "relay_jwks_unknown_kid_refetches_total"
            case .acceptErrors: return "relay_accept_errors_total"
            case .connectionsShed: return "relay_connections_shed_total"
            case .requestHeadRejections: return "relay_request_head_rejections_total"
            case .requestDeadlineCuts: return "relay_request_timeouts_total"
            case .pendingRequestRefusals: return "relay_pending_request_refusals_total"
            case .deltasMerged: return "relay_deltas_merged_total"
            case .catchUpEvents: return "relay_catch_up_events_total"
            case .appendAuxiliaryErrors: return "relay_append_auxiliary_errors_total"
            case .replaysWaited: return "relay_replays_waited_total"
            case .replaysSkipped: return "relay_replays_skipped_total"
            case .cancelsPending: return "relay_cancels_pending_total"
            case .jwksParkedRequests: return "relay_jwks_waiting_requests_total"
            case .resumesRetained: return "relay_resumes_total{outcome=\"retained\"}"
            case .answersRetained: return "relay_answers_retained_total"
            case .answersRetainedBytes: return "relay_answers_retained_bytes_total"
            case .answersNotRetainedOversize: return "relay_answers_not_retained_total{reason=\"oversize\"}"
            case .answersNotRetainedIncomplete: return "relay_answers_not_retained_total{reason=\"incomplete\"}"
            case .answerReads: return "relay_answer_reads_total"
            case .answersErased: return "relay_answers_erased_total"
            case .takeovers: return "relay_takeovers_total"
            case .continuationsRefused: return "relay_continuations_refused_total"
            case .sessionSlotsLost: return "relay_session_slots_lost_total"
            case .orphansSwept: return "relay_orphans_swept_total"
            case .completionWebhooksQueued: return "relay_completion_webhooks_queued_total"
            case .completionWebhooksDelivered: return "relay_completion_webhooks_total{result=\"delivered\"}"
            case .completionWebhooksDropped: return "relay_completion_webhooks_total{result=\"dropped\"}"
            case .completionWebhooksSkipped: return "relay_completion_webhooks_total{result=\"skipped\"}"
            case .completionWebhookAttemptsOK: return "relay_completion_webhook_attempts_total{result=\"ok\"}"
            case .completionWebhookAttemptsFailed: return "relay_completion_webhook_attempts_total{result=\"failed\"}"
            case .completionWebhookRetries: return "relay_completion_webhook_retries_total"
            case .atRestSeals: return "relay_at_rest_seals_total"
            case .atRestOpens: return "relay_at_rest_opens_total"
            case .atRestOpenFailures: return "relay_at_rest_open_failures_total"
            }
        }

        /// The `# HELP` text of the counter's family.
        var help: String {
            switch self {
            case .eventsAppended: return "Stream events appended to Redis by this instance's generations."
            case .atRestSeals: return "Values sealed with AES-256-GCM before they were written to Redis (events, live messages, text records; RELAY_ENCRYPTION_KEYS, docs/DATA_MODEL.md §15)."
            case .atRestOpens: return "Sealed values read from Redis that opened (the tag verified)."
            case .atRestOpenFailures: return "Sealed values read from Redis that did not open (unknown kid, another key, altered or truncated bytes); the reader got stored_data_unreadable."
            case .eventsDelivered: return "Stream events written to client connections."
            case .streamsStarted: return "Generations started (POST /api/chat/stream admitted)."
            case .resumesOK, .resumesGap, .resumesNotFound, .resumesCatchUp, .resumesRetained:
                return "Resume requests (GET /api/chat/stream/{id}) by outcome: ok, gap (409 resume_gap), not_found (404), catch_up (lossless catch-up), retained (answered from a retained answer after its events expired)."
            case .answersRetained: return "Finished answers this instance wrote a retained record for (RELAY_ANSWER_RETENTION, docs/PROTOCOL.md §6.5); the records live in Redis until they expire."
            case .answersRetainedBytes: return "Bytes of the retained-answer records this instance wrote (the record values; Redis adds about 100 bytes of key overhead each, docs/DATA_MODEL.md §14)."
            case .answersNotRetainedOversize, .answersNotRetainedIncomplete:
                return "Finished answers not retained, by reason: oversize (the record would pass RELAY_ANSWER_RETENTION_MAX_BYTES), incomplete (the generation did not hold every delta of its stream)."
            case .answerReads: return "GET /api/chat/answers/{id} calls answered with a retained answer (200)."
            case .answersErased: return "Retained answers deleted by POST /admin/users/{sub}/answers/erase (data-erasure requests)."
            case .revocations: return "Live streams cut because their session was revoked."
            case .cancels: return "Generations stopped by DELETE /api/chat/stream/{id}."
            case .takeovers: return "Streams this instance took over after their owner's lease lapsed, to continue them (docs/PROTOCOL.md §4.5)."
            case .orphansSwept: return "Streams of dead instances this instance's orphan sweep handled without needing a reader (docs/PROTOCOL.md §4.5, docs/DATA_MODEL.md §6.2): taken over, ended with upstream_lost, found already taken or finished, or gone."
            case .sessionSlotsLost: return "Answers ended with upstream_lost because their session slot lapsed while their owner stalled past the lease and the session had meanwhile admitted RELAY_MAX_STREAMS_PER_SESSION other answers."
            case .continuationsRefused: return "Streams taken over here that the upstream could not continue (no continuation support, unreadable stored request): ended with upstream_lost."
            case .completionWebhooksQueued:
                return "Answers this instance ended that were queued for a completion webhook (docs/PROTOCOL.md §13); one per answer across all instances."
            case .completionWebhooksDelivered, .completionWebhooksDropped, .completionWebhooksSkipped:
                return "Completion webhooks settled by this instance, by result: delivered (a 2xx answer), dropped (410 Gone, RELAY_COMPLETION_WEBHOOK_MAX_ATTEMPTS failed attempts, or the stream expired first), skipped (a client read the answer's end)."
            case .completionWebhookAttemptsOK, .completionWebhookAttemptsFailed:
                return "Completion webhook POSTs made by this instance, by result: ok (2xx), failed (another status, no answer, or RELAY_COMPLETION_WEBHOOK_TIMEOUT)."
            case .completionWebhookRetries:
                return "Failed completion webhook attempts followed by a retry after a backoff."
            case .jwksParkedRequests: return "Requests whose token named a kid the JWKS lacked (or came before the first set) and waited for a refetch (at most RELAY_JWT_JWKS_TIMEOUT)."
            case .cancelsPending: return "DELETE /api/chat/stream/{id} calls that came before their stream existed and left a cancel marker (docs/PROTOCOL.md §7)."
            case .slowConsumerDisconnects: return "Client connections cut because their unsent backlog exceeded the backpressure limit."
            case .requestErrors: return "Requests answered with an HTTP error before any stream began."
            case .upstreamErrors: return "Generations that ended with an upstream error event."
            case .budgetRefusals: return "Stream starts refused with 429 token_budget_exhausted."
            case .budgetReservations: return "Token budget reservations taken at admission (one per request id)."
            case .budgetSettlements: return "Token budget reservations settled to what was generated (once per request, on every ending)."
            case .jwksFetchesOK, .jwksFetchesFailed:
                return "JWKS fetches by result: ok, error (the last good key set stays in use)."
            case .jwksUnknownKidRefetches:
                return "JWKS fetches wanted by tokens naming unknown kids (at most one per RELAY_JWT_JWKS_UNKNOWN_KID_INTERVAL, one for every waiting token of the process)."
            case .acceptErrors: return "Failed accept() calls (file descriptors exhausted); each sheds a connection that has not sent a request head, or, when there is none, the listener pauses with backoff."
            case .connectionsShed: return "Connections closed before completing their first request head to keep file descriptors free (within the reserve below RLIMIT_NOFILE, or accept() failing with EMFILE/ENFILE); the oldest first."
            case .requestHeadRejections: return "Connections refused by the strict HTTP/1.1 check (RFC 9112) with a JSON error before evhttp saw the request."
            case .requestDeadlineCuts: return "Connections cut with 408 request_timeout: the request was not whole within RELAY_REQUEST_TIMEOUT of its first byte."
            case .pendingRequestRefusals: return "Connections refused with 503 too_many_pending_requests (over RELAY_MAX_PENDING_REQUESTS still sending)."
            case .deltasMerged:
                return "Delta events not sent on their own: a backed-up client got them merged into one larger delta with the highest seq (k merged deltas count k - 1)."
            case .catchUpEvents:
                return "Events read back from the text key by a lossless catch-up (a read found them trimmed out of the retained window) and sent as their original deltas."
            case .replaysWaited:
                return "Replay reads that waited for one of their worker's RELAY_REPLAY_CONCURRENCY slots (a resume burst) before starting."
            case .replaysSkipped:
                return "Replay reads that waited for a RELAY_REPLAY_CONCURRENCY slot and were not made because their client had left meanwhile."
            case .appendAuxiliaryErrors:
                return "Error replies to an append's TTL or publish command (PEXPIRE, PUBLISH); the event itself stands or falls with its XADD, and a failed text write (SETRANGE of the text or the offsets) is resent, not counted here."
            }
        }
    }

    /// Up/down gauges.
    public enum Gauge: Int, CaseIterable, Sendable {
        case liveConnections, runningGenerations, jwksKeys, queuedReplays
        var name: String {
            switch self {
            case .queuedReplays: return "relay_replays_queued"
            case .liveConnections: return "relay_live_connections"
            case .runningGenerations: return "relay_running_generations"
            case .jwksKeys: return "relay_jwks_keys"
            }
        }

        /// The `# HELP` text.
        var help: String {
            switch self {
            case .liveConnections: return "Client stream connections open on this instance."
            case .runningGenerations: return "Generations this instance is running (upstream calls in progress)."
            case .jwksKeys: return "Usable keys in the current JWKS (0 before the first good fetch)."
            case .queuedReplays: return "Replay reads waiting for one of their worker's RELAY_REPLAY_CONCURRENCY slots (a resume burst)."
            }
        }
    }

    /// Histograms, in seconds.
    public enum Histogram: Int, CaseIterable, Sendable {
        case redisCommand, timeToFirstToken, streamDuration
        var name: String {
            switch self {
            case .redisCommand: return "relay_redis_command_duration_seconds"
            case .timeToFirstToken: return "relay_upstream_time_to_first_token_seconds"
            case .streamDuration: return "relay_stream_duration_seconds"
            }
        }
        var buckets: [Double] {
            switch self {
            case .redisCommand: return [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]
            case .timeToFirstToken: return [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30]
            case .streamDuration: return [1, 5, 10, 30, 60, 120, 300, 600]
            }
        }

        /// The `# HELP` text.
        var help: String {
            switch self {
            case .redisCommand: return "Redis command round-trip time, seconds."
            case .timeToFirstToken: return "Time from a generation's start to its first upstream token, seconds."
            case .streamDuration: return "Generation duration from start to its final event, seconds."
            }
        }
    }

    /// What one worker last reported about itself (each heartbeat tick).
    struct WorkerState {
        var redisConnected: Bool
        var ready: Bool
        var cluster: ClusterReport?
    }

    /// One worker's view of a Redis Cluster (`REDIS_URL=redis+cluster://`).
    public struct ClusterReport: Sendable {
        /// Per primary `host:port`: whether this worker's connection to it is up.
        public var nodes: [(node: String, connected: Bool)]
        /// `MOVED`, `ASK` redirects followed, commands retried, slot-map refreshes.
        public var moved: Int, ask: Int, retried: Int, refreshes: Int
        public init(nodes: [(node: String, connected: Bool)], moved: Int, ask: Int, retried: Int, refreshes: Int) {
            self.nodes = nodes
            self.moved = moved
            self.ask = ask
            self.retried = retried
            self.refreshes = refreshes
        }
    }

    struct HistogramState {
        var counts: [Int]
        var sum = 0.0
        var count = 0
    }

    struct State {
        var counters = [Int](repeating: 0, count: Counter.allCases.count)
        var gauges = [Int](repeating: 0, count: Gauge.allCases.count)
        var histograms = Histogram.allCases.map { HistogramState(counts: [Int](repeating: 0, count: $0.buckets.count)) }
        var workers: [Int: WorkerState] = [:]
    }

    private let state = Mutex(State())

    /// Upstream text repairs (docs/UPSTREAMS.md), shared with the HTTP upstream factories.
    public let upstreamText: UpstreamTextCounters

    /// - Parameter upstreamText: the counters passed to every `HTTPUpstreamFactory`.
    public init(upstreamText: UpstreamTextCounters = UpstreamTextCounters()) {
        self.upstreamText = upstreamText
    }

    /// Adds `n` to a counter.
    public func add(_ c: Counter, _ n: Int = 1) {
        state.withLock { $0.counters[c.rawValue] += n }
    }

    /// A finished answer's retention (`RetentionOutcome`).
    public func answerRetained(_ outcome: RetentionOutcome) {
        switch outcome {
        case .retained(let bytes):
            add(.answersRetained)
            add(.answersRetainedBytes, bytes)
        case .oversize: add(.answersNotRetainedOversize)
        case .incomplete: add(.answersNotRetainedIncomplete)
        }
    }

    /// Sets a gauge to `v`.
    public func set(_ g: Gauge, _ v: Int) {
        state.withLock { $0.gauges[g.rawValue] = v }
    }

    /// Adds `n` (may be negative) to a gauge.
    public func gauge(_ g: Gauge, _ n: Int) {
        state.withLock { $0.gauges[g.rawValue] += n }
    }

    /// Records one observation, seconds.
    public func observe(_ h: Histogram, seconds: Double) {
        let buckets = h.buckets
        state.withLock { s in
            for (i, b) in buckets.enumerated() where seconds <= b { s.histograms[h.rawValue].counts[i] += 1 }
            s.histograms[h.rawValue].sum += seconds
            s.histograms[h.rawValue].count += 1
        }
    }

    /// Records worker `index`'s state: both Redis connections up, and whether it answers
    /// `/readyz` with 200. Rendered as `relay_workers`, `relay_workers_redis_connected`
    /// and `relay_workers_ready` (counts of workers).
    /// With a Redis Cluster, `cluster` adds `relay_redis_cluster_node_connected{node}`
    /// (workers connected to each primary) and the redirect/retry/refresh counters.
    public func workerState(_ index: Int, redisConnected: Bool, ready: Bool, cluster: ClusterReport? = nil) {
        state.withLock { $0.workers[index] = WorkerState(redisConnected: redisConnected, ready: ready, cluster: cluster) }
    }

    /// Current value of a counter (tests, logs).
    public func value(_ c: Counter) -> Int { state.withLock { $0.counters[c.rawValue] } }

    /// Current value of a gauge (`RELAY_MAX_CONNECTIONS` reads `liveConnections`).
    public func value(_ g: Gauge) -> Int { state.withLock { $0.gauges[g.rawValue] } }

    /// The Prometheus text exposition (format 0.0.4): every family with `# HELP` and
    /// `# TYPE` (`promtool check metrics` clean).
    public func render() -> String {
        let s = state.withLock { $0 }
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        var typed = Set<String>()
        for c in Counter.allCases {
            let base = String(c.name.prefix { $0 != "{" })
            if typed.insert(base).inserted { family(base, "counter", c.help) }
            out += "\(c.name) \(s.counters[c.rawValue])\n"
        }
        family("relay_upstream_chunks_skipped_total", "counter",
               "Upstream stream chunks that were valid JSON of a shape the dialect does not document, skipped without ending the answer.")
        out += "relay_upstream_chunks_skipped_total \(upstreamText.skippedChunks)\n"
        family("relay_upstream_unpaired_surrogates_total", "counter",
               "Escaped UTF-16 surrogate halves from the upstream that never found their other half, replaced by U+FFFD.")
        out += "relay_upstream_unpaired_surrogates_total \(upstreamText.replacedSurrogateHalves)\n"
        for g in Gauge.allCases {
            family(g.name, "gauge", g.help)
            out += "\(g.name) \(s.gauges[g.rawValue])\n"
        }
        let workers = s.workers.values
        family("relay_workers", "gauge", "Worker threads that have reported their state.")
        out += "relay_workers \(workers.count)\n"
        family("relay_workers_redis_connected", "gauge", "Workers whose Redis command and pub/sub connections are both up.")
        out += "relay_workers_redis_connected \(workers.filter(\.redisConnected).count)\n"
        family("relay_workers_ready", "gauge", "Workers that would answer GET /readyz with 200 (Redis reachable, not draining).")
        out += "relay_workers_ready \(workers.filter(\.ready).count)\n"
        let clusters = workers.compactMap(\.cluster)
        if !clusters.isEmpty {
            family("relay_redis_cluster_node_connected", "gauge",
                   "Workers whose command connection to this Redis Cluster primary is up (Redis Cluster mode).")
            var perNode: [String: Int] = [:]
            for c in clusters { for n in c.nodes { perNode[n.node, default: 0] += n.connected ? 1 : 0 } }
            for (node, n) in perNode.sorted(by: { $0.key < $1.key }) {
                out += "relay_redis_cluster_node_connected{node=\"\(node)\"} \(n)\n"
            }
            family("relay_redis_cluster_redirects_total", "counter",
                   "Redis Cluster MOVED and ASK redirects followed, and commands retried after TRYAGAIN, CLUSTERDOWN or an unreachable primary.")
            out += "relay_redis_cluster_redirects_total{kind=\"moved\"} \(clusters.reduce(0) { $0 + $1.moved })\n"
            out += "relay_redis_cluster_redirects_total{kind=\"ask\"} \(clusters.reduce(0) { $0 + $1.ask })\n"
            out += "relay_redis_cluster_redirects_total{kind=\"retry\"} \(clusters.reduce(0) { $0 + $1.retried })\n"
            family("relay_redis_cluster_slot_refreshes_total", "counter", "CLUSTER SLOTS reads of the slot map.")
            out += "relay_redis_cluster_slot_refreshes_total \(clusters.reduce(0) { $0 + $1.refreshes })\n"
        }
        for h in Histogram.allCases {
            let st = s.histograms[h.rawValue]
            family(h.name, "histogram", h.help)
            for (i, b) in h.buckets.enumerated() { out += "\(h.name)_bucket{le=\"\(b)\"} \(st.counts[i])\n" }
            out += "\(h.name)_bucket{le=\"+Inf\"} \(st.count)\n\(h.name)_sum \(st.sum)\n\(h.name)_count \(st.count)\n"
        }
        return out
    }
}
