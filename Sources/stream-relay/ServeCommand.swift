import Foundation
import RelayAuth
import RelayCore
import RelayServer
import RelayUpstream
import RelayConfiguration
import RelayBudgets
import RelayEventStore

/// `stream-relay serve`: runs a relay instance until SIGTERM/SIGINT (graceful drain).
enum ServeCommand {
    static let usage = """
    usage: stream-relay serve [options]

    Runs a relay instance. Every option is also an environment variable; flags win.

    """

    static func run(arguments: [String]) -> Int32 {
        if arguments.contains("--test-options") {
            print("Test fault injection only; never set in production:\n" + RelayConfig.testOptionsHelpText)
            return 0
        }
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage + RelayConfig.helpText + "\n\n(--test-options lists the test-only fault injections.)")
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
        let placeholders = PlaceholderSecrets.found(in: config)
        guard placeholders.isEmpty else {
            printError("stream-relay: \(PlaceholderSecrets.message(placeholders))\n")
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
                Log.info("no REDIS_URL set: started a private redis-server (stopped on exit)", ["redis": "unix://\(p.socketPath)"])
            } catch {
                printError("stream-relay: \(error)\n")
                return 2
            }
        }
        defer { privateRedis?.stop() }

        let authenticator: Authenticator
        let jwks: JWKSKeyStore?
        var devSecretFile: URL?
        defer { if let f = devSecretFile { try? FileManager.default.removeItem(at: f) } }
        do {
            (authenticator, jwks) = try makeAuthenticator(&config, scratch: privateRedis?.directory, secretFile: &devSecretFile)
        } catch {
            printError("stream-relay: \(error)\n")
            return 2
        }
        if config.instanceName.isEmpty {
            config.instanceName = "\(ProcessInfo.processInfo.hostName)-\(getpid())"
        }
        let budgets: BudgetPolicy
        let models: ModelPolicy
        let adminKey: AdminKey?
        let atRestKeys: AtRestKeyRing?
        let systemPrompts: SystemPromptPolicy
        do {
            atRestKeys = try config.encryptionKeys.map { try loadAtRestKeys($0) }
            systemPrompts = try config.systemPrompts.map { try loadSystemPrompts($0) } ?? SystemPromptPolicy()
        } catch {
            printError("stream-relay: \(error)\n")
            return 2
        }
        do {
            budgets = try BudgetPolicy.parse(config.budgets, defaultTier: config.defaultTier)
            models = try ModelPolicy(specification: config.models, fallbackModel: config.upstreamModel)
            adminKey = try AdminKey.fromEnvironment(config.adminKey)
            try checkCompletionWebhook(config)
        } catch {
            printError("stream-relay: \(error)\n")
            return 2
        }
        let makeUpstreams: @Sendable () -> UpstreamFactory
        let upstreamText = UpstreamTextCounters()
        do {
            makeUpstreams = try upstreamFactoryMaker(config, counters: upstreamText)
        } catch {
            printError("stream-relay: \(error)\n")
            return 2
        }
        let cfg = config
        var context = ServerContext(
            config: cfg, instance: cfg.instanceName, authenticator: authenticator, metrics: Metrics(upstreamText: upstreamText),
            budgets: budgets, models: models, adminKey: adminKey,
            makeUpstreams: makeUpstreams,
            nowMs: { Int64(Date().timeIntervalSince1970 * 1000) })
        context.jwks = jwks
        context.atRestKeys = atRestKeys
        context.systemPrompts = systemPrompts
        if let atRestKeys {
            Log.info("at-rest encryption on", ["currentKid": atRestKeys.currentKid, "kids": atRestKeys.kids.joined(separator: ",")])
        }
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

    /// The completion webhook's settings hold together (docs/PROTOCOL.md §13): a URL needs a
    /// Standard Webhooks secret.
    /// - Throws: `ConfigError` when `RELAY_COMPLETION_WEBHOOK_URL` is set without
    ///   `RELAY_COMPLETION_WEBHOOK_SECRET`; `StandardWebhookSecretError` for a secret that is
    ///   not `whsec_<base64 of 24–64 bytes>`.
    static func checkCompletionWebhook(_ config: RelayConfig) throws {
        guard config.completionWebhookURL != nil else { return }
        guard let secret = config.completionWebhookSecret else {
            throw ConfigError("RELAY_COMPLETION_WEBHOOK_URL needs RELAY_COMPLETION_WEBHOOK_SECRET (whsec_<base64>, Standard Webhooks)")
        }
        _ = try StandardWebhookSigner(secret: secret)
    }

    /// How each worker makes its upstream factory (`RELAY_UPSTREAM`). The HTTP
    /// adapters create their libcurl multi handle on the worker's own loop thread.
    /// - Throws: `ConfigError` when `openai`/`openai-responses`/`anthropic` lack `UPSTREAM_URL` or it is invalid,
    ///   or `RELAY_UPSTREAM_CONTINUATION` names a mode of the other API.
    static func upstreamFactoryMaker(_ config: RelayConfig,
                                     counters: UpstreamTextCounters = UpstreamTextCounters()) throws -> @Sendable () -> UpstreamFactory {
        switch config.upstream {
        case "openai", "openai-responses", "anthropic":
            guard let url = config.upstreamURL else {
                throw ConfigError("RELAY_UPSTREAM=\(config.upstream) needs UPSTREAM_URL")
            }
            var http = HTTPUpstreamConfig(baseURL: url, apiKey: config.upstreamAPIKey ?? "", defaultModel: config.upstreamModel)
            http.idleTimeoutMs = config.upstreamIdleTimeoutMs
            http.summaryMaxTokens = config.summaryMaxTokens
            let api = HTTPUpstreamFactory.API(rawValue: config.upstream)!  // the option accepts these names only
            http.continuation = try HTTPContinuation.resolve(config.upstreamContinuation, api: api)
            try http.validate()
            let h = http
            return { HTTPUpstreamFactory(api, config: h, counters: counters) }
        case "ai-sdk":
            guard let url = config.upstreamURL else {
                throw ConfigError("RELAY_UPSTREAM=ai-sdk needs UPSTREAM_URL: your backend's chat endpoint (docs/AGENTS.md)")
            }
            guard let secret = config.upstreamIdentitySecret else {
                throw ConfigError("RELAY_UPSTREAM=ai-sdk needs RELAY_UPSTREAM_IDENTITY_SECRET: the backend verifies who asked with it "
                                  + "(docs/AGENTS.md; make one with `openssl rand -base64 48`)")
            }
            var http = HTTPUpstreamConfig(baseURL: url, apiKey: config.upstreamAPIKey ?? "", defaultModel: config.upstreamModel)
            http.idleTimeoutMs = config.upstreamIdleTimeoutMs
            http.summaryMaxTokens = config.summaryMaxTokens
            try http.validate()
            let h = http
            let key = Array(secret.utf8)
            let sign: HTTPUpstreamFactory.IdentitySigner = { caller, body in
                try? UpstreamIdentityToken.sign(caller, body: body, secret: key, now: Int64(Date().timeIntervalSince1970))
            }
            return { HTTPUpstreamFactory(.uiMessageStream, config: h, counters: counters, identity: sign) }
        default:
            let rate = config.simulatedTokensPerSecond
            let summary = config.summaryMaxTokens
            return { SimulatedUpstreamFactory(tokensPerSecond: rate, summaryMaxTokens: summary) }
        }
    }

    /// Keys from `RELAY_JWT_JWKS_URL` (docs/TOKENS.md; then the secret and PEM settings
    /// are ignored), HS256 with `RELAY_JWT_SECRET`, RS256/ES256 with `RELAY_JWT_PUBLIC_KEY`;
    /// with none, a generated development secret written next to the private Redis so
    /// `stream-relay mint-token --secret-file` can sign tokens for it.
    /// - Returns: the authenticator, and the JWKS store its fetcher fills when a JWKS is used.
    static func makeAuthenticator(_ config: inout RelayConfig, scratch: URL?,
                                  secretFile: inout URL?) throws -> (Authenticator, JWKSKeyStore?) {
        if config.jwtJWKSURL != nil {
            for (set, name) in [(config.jwtSecret != nil, "RELAY_JWT_SECRET"), (config.jwtPublicKeyPath != nil, "RELAY_JWT_PUBLIC_KEY")] where set {
                Log.warn("RELAY_JWT_JWKS_URL is set: \(name) is ignored", [:])
            }
            let store = JWKSKeyStore(minimumRefetchIntervalMs: config.jwtJWKSUnknownKidIntervalMs)
            let verifier = try JWKSVerifier(store: store, algorithms: try JWKAlgorithm.parseList(config.jwtJWKSAlgorithms),
                                            issuer: config.jwtIssuer, audience: config.jwtAudience,
                                            leewaySeconds: config.jwtLeewaySeconds)
            return (JWTAuthenticator(verifier: verifier), store)
        }
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
            secretFile = file
            algorithm = .hs256(secret: Array(s.utf8))
            Log.warn("no RELAY_JWT_SECRET or RELAY_JWT_PUBLIC_KEY: using a generated development secret (new on every start, removed on exit)",
                     ["mintTokens": "stream-relay mint-token --secret-file \(file.path) --sub alice --sid s1"])
        }
        let verifier = try JWTVerifier(algorithm: algorithm, issuer: config.jwtIssuer, audience: config.jwtAudience,
                                       leewaySeconds: config.jwtLeewaySeconds)
        return (JWTAuthenticator(verifier: verifier), nil)
    }

    /// The system prompts of `RELAY_SYSTEM_PROMPTS` (`SystemPromptPolicy`): inline JSON, or
    /// `file:///path` to a file holding it.
    /// - Throws: `ConfigError` naming the problem (unreadable file, not the JSON shape).
    static func loadSystemPrompts(_ value: String) throws -> SystemPromptPolicy {
        let text = try FileURLSetting.text(value, variable: "RELAY_SYSTEM_PROMPTS", example: "file:///etc/relay/prompts.json")
        do {
            return try SystemPromptPolicy.parse(text)
        } catch let e as SystemPromptPolicy.ParseError {
            throw ConfigError(e.message)
        }
    }

    /// The at-rest keys of `RELAY_ENCRYPTION_KEYS` (docs/DATA_MODEL.md §15): inline
    /// `kid:base64` pairs, or `file:///path` to a file holding them.
    /// - Throws: `ConfigError` naming the problem (unreadable file, bad base64, wrong
    ///   length, duplicate kid, empty); never key material.
    static func loadAtRestKeys(_ value: String) throws -> AtRestKeyRing {
        let text = try FileURLSetting.text(value, variable: "RELAY_ENCRYPTION_KEYS", example: "file:///etc/relay/at-rest-keys")
        do {
            return try AtRestKeyRing.parse(text)
        } catch let e as AtRestKeyRing.ParseError {
            throw ConfigError(e.message)
        }
    }
}
