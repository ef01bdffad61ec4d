import XCTest
import RelayCore
import RelayConfiguration

/// Which empty variables count as unset (docs/CONFIGURATION.md): only the upstream's, which
/// `docker compose` passes empty; elsewhere an empty value is read as given, so an empty
/// `RELAY_ENCRYPTION_KEYS` is refused rather than storing plaintext.
final class EmptyVariableTests: XCTestCase {
    private func load(_ env: [String: String]) throws -> RelayConfig {
        try RelayConfig.load(environment: env, arguments: [], defaultWorkers: 1)
    }

    func testOnlyTheUpstreamsEmptyVariablesAreUnset() throws {
        let c = try load(["UPSTREAM_URL": "", "UPSTREAM_API_KEY": "", "UPSTREAM_MODEL": ""])
        XCTAssertEqual(RelayConfig.emptyMeansUnset, ["UPSTREAM_URL", "UPSTREAM_API_KEY", "UPSTREAM_MODEL"])
        XCTAssertNil(c.upstreamAPIKey)
        XCTAssertThrowsError(try load(["RELAY_ENCRYPTION_KEYS": ""]), "an empty key list is refused, never plaintext by accident")
        XCTAssertEqual(try load(["RELAY_CLIENT_PARAMETERS": ""]).clientParameters, [])
    }

    /// With the operator's prompt a stored request holds at most `ChatRequest.maxMessages`: one
    /// of that many messages plus the prompt would not decode for a takeover.
    func testTheStoredRequestLimitCountsTheOperatorsPrompt() throws {
        var body = #"{"messages":["#
        body += Array(repeating: #"{"role":"user","content":"x"}"#, count: ChatRequest.maxMessages - 1).joined(separator: ",") + "]}"
        var r = try ChatRequest.parse(Data(body.utf8))
        r.messages.insert(ChatMessage(role: "system", content: "OPERATOR"), at: 0)
        XCTAssertEqual(try ChatRequest.parse(r.jsonBody), r, "999 messages and the prompt round-trip")
    }
}
