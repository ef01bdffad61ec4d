import Foundation
import RelayAuth
import RelayCore
import RelayLoop
import RelayConfiguration

enum Bench {
    static func main(_ args: [String]) -> Int32 {
        if args.isEmpty || args.contains("--help") || args.contains("-h") {
            print(Options.usage)
            return args.isEmpty ? 2 : 0
        }
        let opts: Options
        do {
            opts = try Options.parse(args)
        } catch {
            FileHandle.standardError.write(Data("stream-relay-bench: \(error)\n\n\(Options.usage)\n".utf8))
            return 2
        }
        signal(SIGPIPE, SIG_IGN)
        if opts.scenario == "report" { return Report.write(opts) }

        let nofile = raiseOpenFileLimit()
        var target = Target(kind: opts.target, host: opts.host, port: opts.port)
        target.answer = opts.answer
        // Scenarios that drive a server (the others need no target, token or server pids).
        let usesServer = opts.scenario != "append-ceiling" && opts.scenario != "send-floor"
        if target.kind == .relay && usesServer {
            guard let secret = opts.jwtSecret ?? ProcessInfo.processInfo.environment["RELAY_JWT_SECRET"] else {
                FileHandle.standardError.write(Data("stream-relay-bench: the relay target needs --jwt-secret or RELAY_JWT_SECRET\n".utf8))
                return 2
            }
            do {
                target.token = try TokenMinter.hs256(secret: Array(secret.utf8), sub: "bench", sid: "bench-session", tier: "pro",
                                                     ttlSeconds: 6 * 3600, now: Int64(Date().timeIntervalSince1970))
            } catch {
                FileHandle.standardError.write(Data("stream-relay-bench: \(error)\n".utf8))
                return 2
            }
        }
        // CPU and memory figures are read off these pids: a wrong or dead one would read 0.
        let missing = Proc.missing(opts.serverPids + opts.lbPids + (opts.redisPid.map { [$0] } ?? []) + (opts.killPid.map { [$0] } ?? []))
        if !missing.isEmpty {
            FileHandle.standardError.write(Data("stream-relay-bench: no process with pid \(missing.map(String.init).joined(separator: ", ")) (--server-pids / --redis-pid)\n".utf8))
            return 2
        }
        // storm: the server pids are the relays behind the load balancer, not its listener.
        if usesServer, opts.scenario != "storm", !opts.serverPids.isEmpty, Proc.listening(pids: opts.serverPids, port: opts.port) == false {
            FileHandle.standardError.write(Data("stream-relay-bench: none of the server pids \(opts.serverPids) listens on port \(opts.port)\n".utf8))
            return 2
        }
        let runner: Runner
        do {
            runner = try Runner(opts: opts, target: target)
        } catch {
            FileHandle.standardError.write(Data("stream-relay-bench: \(error)\n".utf8))
            return 2
        }
        let server = usesServer ? "target \(target.kind.rawValue) at \(target.host):\(target.port), server pids \(opts.serverPids), " : ""
        runner.log("stream-relay-bench \(opts.scenario)\(opts.quick ? " --quick" : ""): \(server)open-file limit \(nofile), redis pid \(opts.redisPid.map(String.init) ?? "-")")
        let ok: Bool
        switch opts.scenario {
        case "stream": ok = runner.streamScenario()
        case "fanout": ok = runner.fanoutScenario()
        case "idle": ok = runner.idleScenario()
        case "resume-storm": ok = runner.resumeStormScenario()
        case "send-floor": ok = runner.sendFloorScenario()
        case "slow-link": ok = runner.slowLinkScenario()
        case "storm": ok = runner.stormScenario()
        case "append-ceiling":
            guard let url = opts.redisURL, let ep = try? RedisEndpoint.parse(url) else {
                FileHandle.standardError.write(Data("stream-relay-bench: append-ceiling needs --redis-url\n".utf8))
                return 2
            }
            ok = runner.appendCeilingScenario(redis: ep)
        default:
            FileHandle.standardError.write(Data("stream-relay-bench: unknown scenario \(opts.scenario)\n\n\(Options.usage)\n".utf8))
            return 2
        }
        return ok ? 0 : 3
    }
}
