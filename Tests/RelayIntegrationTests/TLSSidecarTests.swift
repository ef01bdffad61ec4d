import Foundation
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// Managed Redis with TLS (docs/REDIS.md): hiredis 0.14 has no TLS, so `rediss://` is
/// refused at startup with a pointer to the recipe, and that recipe (a `stunnel4` client
/// sidecar in front of `redis-server --tls-port`) works end to end.
final class TLSSidecarTests: XCTestCase {
    private var processes: [Process] = []
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-tls-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        for p in processes where p.isRunning {
            p.terminate()
            p.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    func testRedissIsRefusedAtStartupWithThePointerToTheRecipe() throws {
        XCTAssertThrowsError(try RelayProcess(redisURL: "rediss://cache.example:6380", env: [:])) { e in
            let text = String(describing: e)
            XCTAssertTrue(text.contains("stunnel4") && text.contains("Managed Redis with TLS"), text)
        }
    }

    func testStunnelSidecarInFrontOfATLSRedis() throws {
        if !FileManager.default.isExecutableFile(atPath: TestPaths.which("stunnel4")) {
            return XCTFail("stunnel4 is not installed (scripts/install-deps.sh installs it)")
        }
        let cert = directory.appendingPathComponent("cert.pem").path, key = directory.appendingPathComponent("key.pem").path
        try run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        let tlsPort = try FreePort.find(), plainPort = try FreePort.find()
        try spawn("redis-server", ["--port", "0", "--tls-port", String(tlsPort), "--bind", "127.0.0.1",
                                   "--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", cert,
                                   "--tls-auth-clients", "no", "--save", "", "--appendonly", "no", "--dir", directory.path])
        // The README recipe, with this test's certificate authority and ports.
        let conf = directory.appendingPathComponent("redis-stunnel.conf")
        try """
        foreground = yes
        pid =
        [redis]
        client = yes
        accept = 127.0.0.1:\(plainPort)
        connect = 127.0.0.1:\(tlsPort)
        verifyChain = yes
        CAfile = \(cert)
        checkHost = localhost
        """.write(to: conf, atomically: true, encoding: .utf8)
        try spawn("stunnel4", [conf.path])
        var pong = ""
        try eventually(10, "redis-cli PING through the sidecar to answer PONG (last: \(pong))", every: 0.05) {
            pong = (try? run("redis-cli", ["-h", "127.0.0.1", "-p", String(plainPort), "PING"]))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            return pong == "PONG"
        }
        let relay = try RelayProcess(redisURL: "redis://127.0.0.1:\(plainPort)", env: ["RELAY_SIMULATED_TOKENS_PER_SECOND": "2000"])
        defer { relay.kill9() }
        let events = try Chat.start(port: relay.port, token: RelayProcess.token(), maxTokens: 20).readAll()
        guard case .done? = try? StreamEvent(json: events.last?.data ?? "") else { return XCTFail("a stream through the TLS sidecar ends with done") }
        XCTAssertEqual(events.count, Int(events.last?.lastEventId ?? "") ?? -1, "gapless")
    }

    @discardableResult
    private func run(_ tool: String, _ args: [String]) throws -> String {
        let r = try ToolProcess.run(TestPaths.which(tool), args)
        guard r.status == 0 else { throw TestFailure("\(tool) exited \(r.status): \(r.output)") }
        return r.stdout
    }

    private func spawn(_ tool: String, _ args: [String]) throws {
        processes.append(try ChildProcess.spawn(tool, args))
    }
}
