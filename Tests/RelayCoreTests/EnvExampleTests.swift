import XCTest
import RelayConfiguration

/// `.env.example`, with its placeholders replaced as its first line asks, is a configuration the
/// relay accepts (docker-compose.yml passes each of its variables), and its placeholders are
/// exactly the ones `serve` refuses.
final class EnvExampleTests: XCTestCase {
    func testTheExampleLoadsOnceItsPlaceholdersAreReplacedAndNotBefore() throws {
        let root = URL(fileURLWithPath: "\(#filePath)").deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent(".env.example"), encoding: .utf8)
        var env: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let kv = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if kv.count == 2 { env[String(kv[0])] = String(kv[1]) }
        }
        XCTAssertEqual(env["UPSTREAM_MODEL"], "", "the model a real upstream needs is in the example")
        let asShipped = try RelayConfig.load(environment: env, arguments: [], defaultWorkers: 1)
        XCTAssertEqual(PlaceholderSecrets.found(in: asShipped), ["RELAY_JWT_SECRET", "RELAY_ADMIN_KEY"])
        for (k, v) in env where v.contains(PlaceholderSecrets.marker) { env[k] = "a-real-secret-of-at-least-thirty-two-bytes-\(k)" }
        let c = try RelayConfig.load(environment: env, arguments: [], defaultWorkers: 1)
        XCTAssertEqual(PlaceholderSecrets.found(in: c), [])
        XCTAssertEqual(c.maxContinuations, 2)
        XCTAssertEqual(c.answerRetentionMs, 86_400_000)
    }
}
