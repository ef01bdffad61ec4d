import Foundation
import RelayAuth
import RelayCore
import RelayServer
import RelayUpstream

/// `stream-relay serve`: runs a relay instance until SIGTERM/SIGINT (graceful drain).
enum ServeCommand {
    static let usage = """
    usage: stream-relay serve [options]

    Runs a relay instance. Every option is also an environment variable; flags win.

    """

    static func run(arguments: [String]) -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage + RelayConfig.helpText)
            return 0
        }
        var config: RelayConfig
        do {
            config = try RelayConfig.load(environment: ProcessInfo.processInfo.environment, arguments: arguments,
                                          defaultWorkers: ProcessInfo.processInfo.activeProcessorCount)
        } catch {
            printError("stream-relay: \(error)\n")
            return 2
        }
        signal(SIGPIPE, SIG_IGN)

        var privateRedis: PrivateRedis?
        let endpoint: RedisEndpoint
        if let r = config.redis {
            endpoint = r
        } else {
            do {
                let p = try PrivateRedis()
                privateRedis = p
                endpoint = .unix(path: p.socketPath, db: 0)
                printError("stream-relay: no REDIS_URL set: started a private redis-server on unix://\(p.socketPath) (stopped on exit)\n")
            } catch {
                printError("stream-relay: \(error)\n")
                return 2
            }
        }
        defer { privateRedis?.stop() }

        let authenticator: Authenticator
        do {
            authenticator = try makeAuthenticator(&config, scratch: privateRedis?.directory)
        } catch {
            printError("stream-relay: \(error)\n")
            return 2
        }
        if config.instanceName.isEmpty {
            config.instanceName = "\(ProcessInfo.processInfo.hostName)-\(getpid())"
        }
        let cfg = config
        let context = ServerContext(
            config: cfg, instance: cfg.instanceName, authenticator: authenticator, metrics: Metrics(),
            makeUpstreams: { SimulatedUpstreamFactory(tokensPerSecond: cfg.simulatedTokensPerSecond, summaryMaxTokens: cfg.summaryMaxTokens) },
            nowMs: { Int64(Date().timeIntervalSince1970 * 1000) })
        let server = RelayServer(context: context, redis: endpoint)
        let port: Int
        do {
            port = try server.start()
        } catch {
            printError("stream-relay: \(error)\n")
            return 2
        }
        Log.info("listening", ["address": "\(cfg.listenHost):\(port)", "port": port, "workers": cfg.workers,
                               "redis": endpoint.description, "upstream": cfg.upstream, "instance": cfg.instanceName])

        let done = DispatchSemaphore(value: 0)
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let src = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            src.setEventHandler {
                Log.info("draining", ["signal": sig == SIGTERM ? "SIGTERM" : "SIGINT", "timeoutMs": cfg.drainTimeoutMs])
                server.drain()
                done.signal()
            }
            src.resume()
            sources.append(src)
        }
        done.wait()
        Log.info("stopped", [:])
        _ = sources
        return 0
    }

    /// HS256 with `RELAY_JWT_SECRET`, RS256/ES256 with `RELAY_JWT_PUBLIC_KEY`; with
    /// neither, a generated development secret written next to the private Redis so
    /// `stream-relay mint-token --secret-file` can sign tokens for it.
    static func makeAuthenticator(_ config: inout RelayConfig, scratch: URL?) throws -> Authenticator {
        let algorithm: JWTAlgorithm
        if let path = config.jwtPublicKeyPath {
            guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigError("RELAY_JWT_PUBLIC_KEY: cannot read \(path)")
            }
            algorithm = config.jwtAlgorithm == "ES256" ? .es256(publicKeyPEM: pem) : .rs256(publicKeyPEM: pem)
        } else if let secret = config.jwtSecret {
            algorithm = .hs256(secret: Array(secret.utf8))
        } else {
            let secret = (0..<48).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! }
            let s = String(secret)
            let dir = scratch ?? FileManager.default.temporaryDirectory
            let file = dir.appendingPathComponent("jwt-secret-\(getpid())")
            try s.write(to: file, atomically: true, encoding: .utf8)
            try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
            config.jwtSecret = s
            algorithm = .hs256(secret: Array(s.utf8))
            printError("stream-relay: no RELAY_JWT_SECRET or RELAY_JWT_PUBLIC_KEY: using a generated development secret; mint tokens with: stream-relay mint-token --secret-file \(file.path) --sub alice --sid s1\n")
        }
        let verifier = try JWTVerifier(algorithm: algorithm, issuer: config.jwtIssuer, audience: config.jwtAudience,
                                       leewaySeconds: config.jwtLeewaySeconds)
        return JWTAuthenticator(verifier: verifier)
    }
}
