// swift-tools-version:6.2
import PackageDescription

/// StreamRelay: a resumable SSE relay for LLM responses, its Swift client kit and tools.
/// C libraries come from Debian through system-library targets (see README "Requirements").
let package = Package(
    name: "StreamRelay",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .executable(name: "stream-relay", targets: ["stream-relay"]),
        .executable(name: "stream-relay-bench", targets: ["stream-relay-bench"]),
        .library(name: "RelayClient", targets: ["RelayClient"]),
        .library(name: "RelayCore", targets: ["RelayCore"]),
    ],
    targets: [
        // C modules: module maps and tiny shims only.
        .systemLibrary(name: "CLibevent", pkgConfig: "libevent", providers: [.apt(["libevent-dev"])]),
        // No pkgConfig: Debian's hiredis.pc puts -D_FILE_OFFSET_BITS=64 in Cflags, which SwiftPM
        // refuses with a warning on every build; the shim includes <hiredis/…> and the module
        // map links hiredis, and the define changes nothing on 64-bit Linux (off_t is 64-bit).
        .systemLibrary(name: "CHiredis", providers: [.apt(["libhiredis-dev"])]),
        .systemLibrary(name: "CJWT", pkgConfig: "libjwt", providers: [.apt(["libjwt-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // OpenSSL 3 libcrypto: JWK parameters → keys (JSON Web Key Sets, docs/TOKENS.md).
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),

        // Pure Swift: events, SSE framing and parsing, protocol types, error codes.
        .target(name: "RelayCore"),
        // The server's HTTP/1.1: evhttp exchanges and connection gates on the worker loop
        // (Server/), the strict request-head and body framing checks (RFC 9112) and the accept
        // backoff (pure, in Decisions/), and the SSE event framing shared by every subscriber
        // (WireFrame). Not in the client kit's graph.
        .target(name: "RelayHTTP", dependencies: ["CLibevent", "RelayLoop", "RelayCore"],
                swiftSettings: [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]),
        // Server configuration (pure Swift): every option's variable, flag, default, unit, doc.
        // Not in the client kit's graph.
        .target(name: "RelayConfiguration", dependencies: ["RelayCore"]),
        // One libevent event_base per worker thread, timers.
        .target(name: "RelayLoop", dependencies: ["CLibevent", "RelayCore"]),
        // Cross-module optimization on the modules below that hold generic state machines
        // (AppendQueue<Item>, ChannelTable<Handler>, RetryQueue<Item>, …) run once per event:
        // unspecialized across a module boundary they cost ≈ 6 % of the relay's instructions per
        // delivered event (callgrind, docs/BENCHMARKS.md).
        // The Redis client: hiredis connections on the worker loop (RESP written by the relay),
        // replies, failures, scripts, and the pub/sub channel states (Decisions/).
        .target(name: "RelayRedis", dependencies: ["CHiredis", "CLibevent", "RelayLoop", "RelayConfiguration", "RelayCore"],
                swiftSettings: [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]),
        // Redis Cluster: the cluster client and sharded pub/sub; slots, redirects, routing,
        // retries and topology refreshes are pure decisions (Decisions/).
        .target(name: "RelayCluster", dependencies: ["CLibevent", "RelayRedis", "RelayLoop", "RelayConfiguration", "RelayCore"],
                swiftSettings: [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]),
        // The event store (docs/DATA_MODEL.md): the per-stream event log, the ordered appender,
        // keys, Lua scripts, live channels, session slots and revocation markers; the append
        // queue, trim, TTL refresh, text checkpoints and lease rules are pure decisions (Decisions/).
        // Its Lua scripts are `Lua/<name>.lua`, embedded in the module at build time
        // (`PackageResources.<name>_lua`, [UInt8]); `Scripts` declares each with its reply type.
        .target(name: "RelayEventStore", dependencies: ["CLibevent", "COpenSSL", "RelayRedis", "RelayCluster", "RelayLoop", "RelayConfiguration", "RelayCore"],
                resources: ["admit", "appendFenced", "appendFinal", "appendStatus", "catchUp", "create", "expireLease",
                            "expireLeaseSharded", "heartbeat", "open", "outboxClaim", "outboxEnqueue", "outboxSettle",
                            "outboxSubject", "refreshLease", "releaseLease", "removeLapsedInstance", "requestCancel",
                            "takeover"].map { .embedInCode("Lua/\($0).lua") },
                swiftSettings: [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]),
        // Token budgets: the ledger in Redis (reserve, refresh, settle); limits by tier and the
        // reservation arithmetic are pure decisions (Decisions/).
        // Its Lua scripts are `Lua/<name>.lua`, embedded like RelayEventStore's (`BudgetScripts`).
        .target(name: "RelayBudgets", dependencies: ["RelayRedis", "RelayConfiguration", "RelayCore"],
                resources: ["extend", "read", "reserve", "settle"].map { .embedInCode("Lua/\($0).lua") },
                swiftSettings: [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]),
        // Upstream adapters (simulated, and later OpenAI / Anthropic).
        .target(name: "RelayUpstream", dependencies: ["CCurl", "CLibevent", "RelayLoop", "RelayConfiguration", "RelayCore"]),
        // JWT verification and minting (libjwt), JWK sets (OpenSSL), claims, budgets by tier.
        .target(name: "RelayAuth", dependencies: ["CJWT", "COpenSSL", "RelayConfiguration", "RelayCore"]),
        // Workers, HTTP routes, generations, subscriptions.
        .target(name: "RelayServer", dependencies: ["CLibevent", "RelayHTTP", "RelayLoop", "RelayRedis", "RelayCluster", "RelayEventStore", "RelayBudgets", "RelayUpstream", "RelayAuth", "RelayConfiguration", "RelayCore"]),
        // Client kit: Foundation only, no C anywhere in its graph (builds for iOS).
        // Complete strict concurrency (Swift 6 language mode) with every warning an error, so
        // the Linux build stands for the iOS one as closely as it can.
        .target(name: "RelayClient", dependencies: ["RelayCore"],
                swiftSettings: [.treatAllWarnings(as: .error)]),
        // A libcurl transport for the kit, for the Linux CLI only: not part of the
        // kit's graph, which stays Foundation-only.
        .target(name: "RelayClientCurl", dependencies: ["CCurl", "RelayClient"]),
        .executableTarget(name: "stream-relay", dependencies: ["RelayConfiguration", "RelayServer", "RelayRedis", "RelayCluster", "RelayEventStore", "RelayBudgets", "RelayLoop", "RelayAuth", "RelayUpstream", "RelayClient", "RelayClientCurl", "RelayCore"],
                          // Debian's mimalloc (libmimalloc-dev) as the process's malloc: linked
                          // before libc, it takes every malloc/free of the Swift runtime, hiredis,
                          // libevent and libcurl (with glibc's allocator, allocation is ≈ 15 % of the
                          // relay's instructions per event; mimalloc takes 14 % off the instructions
                          // per delivered event, docs/BENCHMARKS.md). Nothing calls it by name.
                          linkerSettings: [.linkedLibrary("mimalloc")],
                          plugins: ["BuildInfoPlugin"]),
        // Writes BuildInfo.swift (the git commit, for `stream-relay --version`) before each build.
        .plugin(name: "BuildInfoPlugin", capability: .buildTool()),
        // Load generator and side-by-side benchmark with nginx + nchan (docs/BENCHMARKS.md).
        .executableTarget(name: "stream-relay-bench", dependencies: ["RelayConfiguration", "RelayHTTP", "CLibevent", "RelayLoop", "RelayCore", "RelayAuth", "RelayRedis", "RelayCluster", "RelayEventStore", "RelayBudgets", "RelayUpstream", "RelayClient"]),

        // The test kit of every test target: the virtual clock, the polls with a deadline
        // (`eventually`, `consistently(for:)`), the seeded generator. Foundation and XCTest only.
        .target(name: "RelayTestKit", path: "Tests/RelayTestKit"),
        .target(name: "RelayTestSupport", dependencies: ["RelayCore", "RelayHTTP", "RelayAuth", "RelayTestKit"], path: "Tests/RelayTestSupport"),
        .testTarget(name: "RelayCoreTests", dependencies: ["RelayCore", "RelayHTTP", "RelayConfiguration", "RelayTestKit"]),
        .testTarget(name: "RelayHTTPTests", dependencies: ["RelayHTTP", "RelayCore", "RelayTestKit"]),
        .testTarget(name: "RelayRedisTests", dependencies: ["RelayRedis", "RelayCore", "RelayTestKit"]),
        .testTarget(name: "RelayClusterTests", dependencies: ["RelayCluster", "RelayRedis", "RelayEventStore", "RelayCore", "RelayTestKit"]),
        .testTarget(name: "RelayEventStoreTests", dependencies: ["RelayEventStore", "RelayRedis", "RelayCore", "RelayTestKit"]),
        .testTarget(name: "RelayBudgetsTests", dependencies: ["RelayBudgets", "RelayRedis", "RelayCore", "RelayTestKit"]),
        .testTarget(name: "RelayAuthTests", dependencies: ["RelayAuth", "RelayConfiguration", "RelayCore", "RelayTestKit"]),
        .testTarget(name: "RelayClientTests", dependencies: ["RelayClient", "RelayCore", "RelayHTTP", "RelayTestKit"]),
        .testTarget(name: "RelayUpstreamTests", dependencies: ["RelayUpstream", "RelayLoop", "RelayConfiguration", "RelayCore", "RelayTestSupport", "RelayTestKit"]),
        // The server's stream decisions and its consumer state machine in-process (no Redis, no sockets).
        .testTarget(name: "RelayServerTests", dependencies: ["RelayServer", "RelayHTTP", "RelayRedis", "RelayEventStore", "RelayBudgets", "RelayUpstream", "RelayLoop", "RelayConfiguration", "RelayCore", "RelayTestKit"]),
        // `stream-relay`'s own pure decisions (Sources/stream-relay/Decisions), e.g. the chat's status-line layout.
        .testTarget(name: "StreamRelayCommandTests", dependencies: ["stream-relay", "RelayUpstream", "RelayConfiguration"]),
        .testTarget(name: "RelayIntegrationTests", dependencies: ["RelayServer", "RelayHTTP", "RelayRedis", "RelayCluster", "RelayEventStore", "RelayBudgets", "RelayAuth", "RelayClient", "RelayClientCurl", "RelayTestSupport", "RelayTestKit", "RelayCore", "RelayUpstream", "RelayLoop", "RelayConfiguration", "stream-relay"],
                    // A fake Redis some integration tests start (python3) and the pinned Python packages of
                    // OffsetReadTests (python/requirements.txt): not resources.
                    exclude: ["fake_redis.py", "python"]),
    ]
)
