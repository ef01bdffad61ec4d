@testable import stream_relay
import RelayConfiguration
import Foundation
import XCTest

/// The completion webhook's settings (docs/PROTOCOL.md §13): each variable's checks, and
/// `serve` refusing a URL without a Standard Webhooks secret.
final class CompletionWebhookSettingTests: XCTestCase {
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    private func load(_ env: [String: String]) throws -> RelayConfig {
        try RelayConfig.load(environment: env, arguments: [], defaultWorkers: 1)
    }

    func testAURLWithASecretIsAccepted() throws {
        let c = try load(["RELAY_COMPLETION_WEBHOOK_URL": "https://backend.example/hooks", "RELAY_COMPLETION_WEBHOOK_SECRET": secret,
                          "RELAY_COMPLETION_WEBHOOK_TIMEOUT": "3s", "RELAY_COMPLETION_WEBHOOK_MAX_ATTEMPTS": "4",
                          "RELAY_COMPLETION_WEBHOOK_RETRY_BASE": "500ms", "RELAY_COMPLETION_WEBHOOK_GRACE": "0"])
        XCTAssertNoThrow(try ServeCommand.checkCompletionWebhook(c))
        XCTAssertEqual(c.completionWebhookTimeoutMs, 3_000)
        XCTAssertEqual(c.completionWebhookMaxAttempts, 4)
        XCTAssertEqual(c.completionWebhookRetryBaseMs, 500)
        XCTAssertEqual(c.completionWebhookGraceMs, 0)
    }

    func testAURLWithoutASecretStopsTheStart() throws {
        let c = try load(["RELAY_COMPLETION_WEBHOOK_URL": "http://127.0.0.1:9/hooks"])
        XCTAssertThrowsError(try ServeCommand.checkCompletionWebhook(c)) {
            XCTAssertTrue("\($0)".contains("RELAY_COMPLETION_WEBHOOK_SECRET"), "\($0)")
        }
        XCTAssertNoThrow(try ServeCommand.checkCompletionWebhook(try load([:])), "no URL: no webhook, nothing to check")
    }

    /// Each way a secret can be wrong is named, with how to make a good one.
    func testABadSecretIsRefusedNamingWhatIsWrongWithIt() {
        let cases: [(String, String)] = [
            ("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "no whsec_ prefix"),
            ("whsec_notbase64!!", "not base64"),
            ("whsec_\(Data(repeating: 7, count: 16).base64EncodedString())", "decodes to 16 bytes"),
        ]
        for (value, reason) in cases {
            XCTAssertThrowsError(try load(["RELAY_COMPLETION_WEBHOOK_SECRET": value]), value) {
                XCTAssertTrue("\($0)".contains(reason), "\($0)")
                XCTAssertTrue("\($0)".contains("openssl rand -base64 32"), "\($0)")
            }
        }
    }

    func testBadValuesAreRefusedNamingTheirVariable() {
        let bad: [(String, String)] = [
            ("RELAY_COMPLETION_WEBHOOK_URL", "ftp://backend.example/hooks"), ("RELAY_COMPLETION_WEBHOOK_URL", "backend.example"),
            ("RELAY_COMPLETION_WEBHOOK_SECRET", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), ("RELAY_COMPLETION_WEBHOOK_SECRET", "whsec_short"),
            ("RELAY_COMPLETION_WEBHOOK_TIMEOUT", "0"), ("RELAY_COMPLETION_WEBHOOK_MAX_ATTEMPTS", "0"),
            ("RELAY_COMPLETION_WEBHOOK_RETRY_BASE", "1ms"), ("RELAY_COMPLETION_WEBHOOK_GRACE", "-1"),
        ]
        for (name, value) in bad {
            XCTAssertThrowsError(try load([name: value]), "\(name)=\(value)") {
                XCTAssertTrue("\($0)".contains(name), "\($0)")
            }
        }
    }
}
