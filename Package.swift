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
        // Server configuration (pure Swift): every option's variable, flag, default, unit, doc.
        // Not in the client kit's graph.
        .target(name: "RelayConfiguration", dependencies: ["RelayCore"]),
        // Pure decisions of the server's stream machinery (no C): replay/live merge,
        // append ack/resend, pub/sub channel states, lease and Redis-outage policies.
        // Cross-module optimization: the generic state machines here (AppendQueue<Item>, …)
        // run once per event in RelayRedis/RelayServer, and unspecialized across the module
        // boundary they cost ≈ 6 % of the relay's instructions per delivered event
        // (callgrind, docs/BENCHMARKS.md). No product a client package uses contains it.
        .target(name: "RelayStreamLogic", dependencies: ["RelayCore"],
                swiftSettings: [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]),
        // One libevent event_base per worker thread, timers.
        .target(name: "RelayLoop", dependencies: ["CLibevent", "RelayCore"]),
        // hiredis async connections on the worker loop: commands, scripts, pub/sub, event log.
        .target(name: "RelayRedis", dependencies: ["CHiredis", "CLibevent", "RelayLoop", "RelayStreamLogic", "RelayConfiguration", "RelayCore"]),
        // Upstream adapters (simulated, and later OpenAI / Anthropic).
        .target(name: "RelayUpstream", dependencies: ["CCurl", "CLibevent", "RelayLoop", "RelayConfiguration", "RelayCore"]),
        // JWT verification and minting (libjwt), JWK sets (OpenSSL), claims, budgets by tier.
        .target(name: "RelayAuth", dependencies: ["CJWT", "COpenSSL", "RelayConfiguration", "RelayCore"]),
        // Workers, HTTP routes, generations, subscriptions.
        .target(name: "RelayServer", dependencies: ["CLibevent", "RelayLoop", "RelayRedis", "RelayUpstream", "RelayAuth", "RelayStreamLogic", "RelayConfiguration", "RelayCore"]),
        // Client kit: Foundation only, no C anywhere in its graph (builds for iOS).
        // Complete strict concurrency (Swift 6 language mode) with every warning an error, so
        // the Linux build stands for the iOS one as closely as it can.
        .target(name: "RelayClient", dependencies: ["RelayCore"],
                swiftSettings: [.treatAllWarnings(as: .error)]),
        // A libcurl transport for the kit, for the Linux CLI only: not part of the
        // kit's graph, which stays Foundation-only.
        .target(name: "RelayClientCurl", dependencies: ["CCurl", "RelayClient"]),
        .executableTarget(name: "stream-relay", dependencies: ["RelayConfiguration", "RelayServer", "RelayRedis", "RelayLoop", "RelayAuth", "RelayUpstream", "RelayClient", "RelayClientCurl", "RelayCore"],
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
        .executableTarget(name: "stream-relay-bench", dependencies: ["RelayConfiguration", "CLibevent", "RelayLoop", "RelayCore", "RelayAuth", "RelayRedis", "RelayStreamLogic", "RelayUpstream"]),

        // The test kit of every test target: the virtual clock, the polls with a deadline
        // (`eventually`, `consistently(for:)`), the seeded generator. Foundation and XCTest only.
        .target(name: "RelayTestKit", path: "Tests/RelayTestKit"),
        .target(name: "RelayTestSupport", dependencies: ["RelayCore", "RelayAuth", "RelayTestKit"], path: "Tests/RelayTestSupport"),
        .testTarget(name: "RelayCoreTests", dependencies: ["RelayCore", "RelayConfiguration", "RelayTestKit"]),
        .testTarget(name: "RelayStreamLogicTests", dependencies: ["RelayStreamLogic", "RelayCore", "RelayTestKit"]),
        .testTarget(name: "RelayAuthTests", dependencies: ["RelayAuth", "RelayConfiguration", "RelayCore", "RelayTestKit"]),
        .testTarget(name: "RelayClientTests", dependencies: ["RelayClient", "RelayCore", "RelayTestKit"]),
        .testTarget(name: "RelayUpstreamTests", dependencies: ["RelayUpstream", "RelayCore", "RelayTestSupport", "RelayTestKit"]),
        // The server's consumer and producer state machines in-process (no Redis, no sockets).
        .testTarget(name: "RelayServerTests", dependencies: ["RelayServer", "RelayRedis", "RelayLoop", "RelayStreamLogic", "RelayConfiguration", "RelayCore", "RelayTestKit"]),
        .testTarget(name: "RelayIntegrationTests", dependencies: ["RelayServer", "RelayRedis", "RelayAuth", "RelayStreamLogic", "RelayClient", "RelayClientCurl", "RelayTestSupport", "RelayTestKit", "RelayCore", "RelayUpstream", "RelayLoop", "RelayConfiguration", "stream-relay"],
                    // A fake Redis some integration tests start (python3), not a resource.
                    exclude: ["fake_redis.py"]),
    ]
)
