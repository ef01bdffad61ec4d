import Foundation
import RelayEventStore

/// Command-line options of `stream-relay-bench`. Scenario defaults are set by
/// `applyDefaults` (full run, or `--quick`), then flags override them.
struct Options {
    var scenario = ""
    var target = TargetKind.relay
    /// The bench answer of `stream`, `fanout`, `resume-storm` and `storm` (`--model`).
    var answer = BenchAnswer.text
    var host = "127.0.0.1"
    var port = 8080
    var jwtSecret: String?
    var redisURL: String?
    var serverPids: [Int32] = []
    var redisPid: Int32?
    var quick = false
    var rate = 50.0
    var duration = 15.0
    var steps: [Int] = []
    var streams = 100
    var fanouts: [Int] = []
    var connections = 10_000
    var hold = 20.0
    var warm = 3.0
    var offline = 2.0
    var connectRate = 2000
    var sourceAddresses = 0
    var pipeline = 64
    var connectionSteps: [Int] = []
    /// append-ceiling: keep the lossless-resume text and offsets (the relay's default).
    var lossless = true
    var continueAfterFail = false
    /// slow-link: the slow reader's link rate, bytes/s, and its `SO_RCVBUF`, bytes.
    var linkBytesPerSecond = 4_096
    var receiveBuffer = 2_048
    /// slow-link: the answer's first N tokens only (nil: the whole 3,019-token answer).
    var maxTokens: Int?
    /// storm: the instance to `SIGKILL`, the ports of the instances that generate the
    /// answers, the load balancer's pids (its CPU), and how long after the kill the
    /// answers stay live, s.
    var killPid: Int32?
    var createPorts: [Int] = []
    var lbPids: [Int32] = []
    var after = 10.0
    var jsonOut: String?
    var label: String?
    var results: [String] = []
    var meta: String?
    var out: String?

    static let usage = """
    usage: stream-relay-bench <scenario> [options]

    Scenarios (parameters are printed when each runs):
      stream          N generations × 1 subscriber, N stepped (--steps), --rate tokens/s,
                      --duration s measured per step; reports the largest N with p99 < 50 ms
                      and nothing lost (stops after the first step that misses it)
      fanout          --streams streams × each of --fanouts subscribers per stream
      idle            --connections idle subscribers (heartbeats only) held --hold s:
                      server RSS per connection, kernel memory
      resume-storm    --streams clients on --streams streams drop at once after --warm s,
                      stay away --offline s, reconnect at once with Last-Event-ID
      storm           --streams answers at --rate tokens/s generated on --create-ports, read
                      by --connections readers through the load balancer at --port; --warm s
                      after all are in, --kill-pid gets SIGKILL: time until every affected
                      reader is caught up, Redis CPU, the other readers' latency before and
                      during the storm, lost and duplicated events (readers reconnect by the
                      kits' ReconnectPolicy); answers stay live --after s after the kill
      append-ceiling  the relay's per-event append (EventLog.append) against --redis-url, no HTTP
      slow-link       the 3,019-token NDA answer at --rate tokens/s to a reader throttled to
                      --link-rate bytes/s with a --receive-buffer SO_RCVBUF, next to a fast
                      reader: bytes on the slow link per text byte, its events, and its last
                      token's delay after the generation's end
      send-floor      no server: N loopback connections (--steps) each sent one SSE event
                      framed as the relay frames it at --rate events/s for --duration s;
                      CPU per send, user and kernel (the floor under the relay's CPU per
                      delivered event)
      report          writes the generated section of --out (docs/BENCHMARKS.md) from
                      --results files (JSON lines of --json-out) and --meta (scripts/bench.sh)

    Target:
      --target relay|nchan    system under test (default relay)
      --host H --port P       its HTTP address (default 127.0.0.1:8080)
      --jwt-secret S          relay HS256 secret (default $RELAY_JWT_SECRET)
      --server-pids a,b,…     processes whose CPU/RSS are reported (relay, or nginx workers)
      --redis-pid P           redis-server, for its CPU
      --redis-url URL         append-ceiling: redis://host:port, unix:///path or redis+cluster://host:port,…
      --model M               the answer of stream, fanout, resume-storm and storm: simulated-bench
                              (stamped deltas, default) or simulated-bench-parts (as many events,
                              mostly stamped reasoning and tool-call argument parts; nchan gets
                              the same events from the load generator)

    Load:
      --quick                 seconds-long smoke run with small N (CI)
      --rate R  --duration S  --steps a,b,…  --streams N  --fanouts a,b  --connections N
      --hold S  --warm S  --offline S  --connect-rate N/s (default 2000)
      --sources K             spread connections over 127.0.0.1…127.0.0.K (default: 1 per 20k connections)
      --pipeline N  --connection-steps a,b   (append-ceiling)
      --kill-pid P  --create-ports a,b  --lb-pids a,b,…  --after S   (storm)
      --link-rate B/s  --receive-buffer BYTES  --max-tokens N   (slow-link; default 4096, 2048, all)
      --lossless on|off       append-ceiling: lossless-resume text and offsets (default on)
      --continue-after-fail   stream: keep stepping after a failed step
      --json-out FILE         append one JSON line per result
      --label TEXT            tag results

    Exit status: 0 when the run delivered everything (nothing lost or duplicated, no
    errors at any step run), 3 otherwise, 2 on bad usage.
    """

    static func parse(_ args: [String]) throws -> Options {
        var o = Options()
        guard let first = args.first, !first.hasPrefix("-") else { throw UsageError("missing scenario") }
        o.scenario = first
        o.quick = args.contains("--quick")
        o.applyDefaults()
        var i = 1
        func value() throws -> String {
            i += 1
            guard i < args.count else { throw UsageError("\(args[i - 1]) needs a value") }
            return args[i]
        }
        func ints(_ s: String) throws -> [Int] {
            let v = s.split(separator: ",").compactMap { Int($0) }
            guard !v.isEmpty else { throw UsageError("bad list \(s)") }
            return v
        }
        func num(_ s: String) throws -> Double {
            guard let d = Double(s), d >= 0 else { throw UsageError("bad number \(s)") }
            return d
        }
        while i < args.count {
            let a = args[i]
            switch a {
            case "--quick": break
            case "--target":
                guard let t = TargetKind(rawValue: try value()) else { throw UsageError("--target relay|nchan") }
                o.target = t
            case "--model":
                guard let m = BenchAnswer(rawValue: try value()) else { throw UsageError("--model simulated-bench|simulated-bench-parts") }
                o.answer = m
            case "--host": o.host = try value()
            case "--port": o.port = Int(try value()) ?? 0
            case "--jwt-secret": o.jwtSecret = try value()
            case "--redis-url": o.redisURL = try value()
            case "--server-pids": o.serverPids = try value().split(separator: ",").compactMap { Int32($0) }
            case "--redis-pid": o.redisPid = Int32(try value())
            case "--rate": o.rate = try num(try value())
            case "--duration": o.duration = try num(try value())
            case "--steps": o.steps = try ints(try value())
            case "--streams": o.streams = max(1, Int(try value()) ?? 1)
            case "--fanouts": o.fanouts = try ints(try value())
            case "--connections": o.connections = max(1, Int(try value()) ?? 1)
            case "--hold": o.hold = try num(try value())
            case "--warm": o.warm = try num(try value())
            case "--offline": o.offline = try num(try value())
            case "--connect-rate": o.connectRate = max(100, Int(try value()) ?? 2000)
            case "--sources": o.sourceAddresses = max(0, min(250, Int(try value()) ?? 0))
            case "--pipeline": o.pipeline = max(1, Int(try value()) ?? 1)
            case "--connection-steps": o.connectionSteps = try ints(try value())
            case "--lossless": o.lossless = try value() != "off"
            case "--continue-after-fail": o.continueAfterFail = true
            case "--link-rate": o.linkBytesPerSecond = max(1, Int(try value()) ?? 4_096)
            case "--receive-buffer": o.receiveBuffer = max(256, Int(try value()) ?? 2_048)
            case "--max-tokens": o.maxTokens = max(1, Int(try value()) ?? 1)
            case "--kill-pid": o.killPid = Int32(try value())
            case "--create-ports": o.createPorts = try ints(try value())
            case "--lb-pids": o.lbPids = try value().split(separator: ",").compactMap { Int32($0) }
            case "--after": o.after = try num(try value())
            case "--json-out": o.jsonOut = try value()
            case "--label": o.label = try value()
            case "--results": o.results.append(try value())
            case "--meta": o.meta = try value()
            case "--out": o.out = try value()
            default: throw UsageError("unknown option \(a)")
            }
            i += 1
        }
        return o
    }

    /// Full-run defaults (bounded for a 2-core machine: see docs/BENCHMARKS.md), or
    /// `--quick` ones.
    mutating func applyDefaults() {
        switch scenario {
        case "stream":
            rate = 50
            steps = quick ? [10, 20] : [50, 100, 200, 400, 800, 1000, 1600]
            duration = quick ? 2 : 15
        case "send-floor":
            rate = 50
            steps = quick ? [20] : [400, 1000]
            duration = quick ? 2 : 10
        case "fanout":
            rate = 20
            streams = quick ? 5 : 100
            fanouts = quick ? [2, 4] : [10, 100]
            duration = quick ? 2 : 15
        case "idle":
            streams = quick ? 10 : 100
            connections = quick ? 100 : 10_000
            hold = quick ? 2.5 : 20
        case "resume-storm":
            rate = 20
            streams = quick ? 20 : 1000
            warm = quick ? 1 : 3
            offline = quick ? 1 : 2
        case "storm":
            rate = quick ? 5 : 1
            streams = quick ? 300 : 10_000
            connections = quick ? 300 : 10_000
            warm = quick ? 2 : 5
            after = quick ? 6 : 10
        case "slow-link":
            rate = 150
            maxTokens = quick ? 150 : nil
        case "append-ceiling":
            streams = quick ? 10 : 100
            duration = quick ? 1 : 5
            pipeline = 64
            connectionSteps = quick ? [1] : [1, 2, 4]
        default:
            break
        }
    }
}

struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
