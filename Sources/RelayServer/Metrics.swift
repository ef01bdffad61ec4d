import Synchronization

/// Process-wide counters, gauges and histograms, shared by all workers and rendered
/// by `GET /metrics` in the Prometheus text exposition format (version 0.0.4).
/// Updates take one uncontended lock (tens of ns).
public final class Metrics: Sendable {
    /// Monotonic counters (`relay_…_total`).
    public enum Counter: Int, CaseIterable, Sendable {
        case eventsAppended, eventsDelivered, streamsStarted, resumesOK, resumesGap, resumesNotFound, resumesCatchUp
        case revocations, cancels, slowConsumerDisconnects, requestErrors, upstreamErrors
        case jwksFetchesOK, jwksFetchesFailed, jwksUnknownKidRefetches

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
            case .jwksFetchesOK: return "relay_jwks_fetches_total{result=\"ok\"}"
            case .jwksFetchesFailed: return "relay_jwks_fetches_total{result=\"error\"}"
            case .jwksUnknownKidRefetches: return "relay_jwks_unknown_kid_refetches_total"
            }
        }

        /// `# HELP` text, where given.
        var help: String? {
            switch self {
            case .jwksFetchesOK, .jwksFetchesFailed:
                return "JWKS fetches by result; on error the last good key set stays in use"
            case .jwksUnknownKidRefetches:
                return "JWKS refetches started because a token named an unknown kid (at most one per RELAY_JWT_JWKS_MIN_INTERVAL)"
            default: return nil
            }
        }
    }

    /// Up/down gauges.
    public enum Gauge: Int, CaseIterable, Sendable {
        case liveConnections, runningGenerations, jwksKeys
        var name: String {
            switch self {
            case .liveConnections: return "relay_live_connections"
            case .runningGenerations: return "relay_running_generations"
            case .jwksKeys: return "relay_jwks_keys"
            }
        }

        /// `# HELP` text, where given.
        var help: String? {
            switch self {
            case .jwksKeys: return "usable keys in the current JWKS (0 before the first good fetch)"
            default: return nil
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
    }

    private let state = Mutex(State())

    public init() {}

    /// Adds `n` to a counter.
    public func add(_ c: Counter, _ n: Int = 1) {
        state.withLock { $0.counters[c.rawValue] += n }
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

    /// Current value of a counter (tests, logs).
    public func value(_ c: Counter) -> Int { state.withLock { $0.counters[c.rawValue] } }

    /// Current value of a gauge (`RELAY_MAX_CONNECTIONS` reads `liveConnections`).
    public func value(_ g: Gauge) -> Int { state.withLock { $0.gauges[g.rawValue] } }

    /// The Prometheus text exposition, with `extra` gauge lines appended.
    public func render(extra: [(String, Double)] = []) -> String {
        let s = state.withLock { $0 }
        var out = ""
        var typed = Set<String>()
        for c in Counter.allCases {
            let base = String(c.name.prefix { $0 != "{" })
            if typed.insert(base).inserted {
                if let help = c.help { out += "# HELP \(base) \(help)\n" }
                out += "# TYPE \(base) counter\n"
            }
            out += "\(c.name) \(s.counters[c.rawValue])\n"
        }
        for g in Gauge.allCases {
            if let help = g.help { out += "# HELP \(g.name) \(help)\n" }
            out += "# TYPE \(g.name) gauge\n\(g.name) \(s.gauges[g.rawValue])\n"
        }
        for (name, v) in extra {
            out += "# TYPE \(name) gauge\n\(name) \(v)\n"
        }
        for h in Histogram.allCases {
            let st = s.histograms[h.rawValue]
            out += "# TYPE \(h.name) histogram\n"
            for (i, b) in h.buckets.enumerated() { out += "\(h.name)_bucket{le=\"\(b)\"} \(st.counts[i])\n" }
            out += "\(h.name)_bucket{le=\"+Inf\"} \(st.count)\n\(h.name)_sum \(st.sum)\n\(h.name)_count \(st.count)\n"
        }
        return out
    }
}
