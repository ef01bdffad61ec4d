@testable import stream_relay
import RelayConfiguration
import RelayCore
import XCTest

/// How the terminal client shows typed parts (docs/PROTOCOL.md §5.5): a status line each,
/// long JSON clipped, reasoning and argument pieces not line by line.
final class PartLineTests: XCTestCase {
    func testEachPartHasItsLineAndPiecesHaveNone() throws {
        XCTAssertNil(PartLine.of(.reasoning("x")))
        XCTAssertNil(PartLine.of(.toolCallDelta(id: "c", arguments: "{")))
        XCTAssertEqual(PartLine.of(.toolCallStart(id: "c", name: "lookup")), "⚙ calling lookup…")
        XCTAssertEqual(PartLine.of(.toolCallEnd(id: "c", name: "lookup", input: try LenientJSON.parse(#"{"q": 1}"#))), #"⚙ lookup({"q":1})"#)
        XCTAssertEqual(PartLine.of(.source(id: "s", url: "https://e.com", title: nil)), "🔗 https://e.com")
        let long = PartLine.of(.toolResult(id: "c", output: .string(JSONString(String(repeating: "a", count: 500)))))!
        XCTAssertEqual(long.count, 4 + PartLine.maxJSON, "clipped with an ellipsis")
        XCTAssertTrue(long.hasSuffix("…"))
        XCTAssertEqual(PartLine.reasoning("Plan:\nfirst\nthen"), "✎ Plan: first then")
    }

    /// `RELAY_UPSTREAM=ai-sdk` needs the backend's URL and the identity secret, and says so.
    func testAnAISDKUpstreamNeedsItsURLAndIdentitySecret() throws {
        let base = ["RELAY_JWT_SECRET": String(repeating: "k", count: 40), "RELAY_UPSTREAM": "ai-sdk"]
        let noURL = try RelayConfig.load(environment: base, arguments: [], defaultWorkers: 1)
        XCTAssertThrowsError(try ServeCommand.upstreamFactoryMaker(noURL)) { XCTAssertTrue("\($0)".contains("UPSTREAM_URL")) }
        let noSecret = try RelayConfig.load(environment: base.merging(["UPSTREAM_URL": "http://127.0.0.1:9/api/chat"]) { $1 },
                                            arguments: [], defaultWorkers: 1)
        XCTAssertThrowsError(try ServeCommand.upstreamFactoryMaker(noSecret)) {
            XCTAssertTrue("\($0)".contains("RELAY_UPSTREAM_IDENTITY_SECRET"))
        }
        XCTAssertThrowsError(try RelayConfig.load(environment: base.merging(["RELAY_UPSTREAM_IDENTITY_SECRET": "short"]) { $1 },
                                                  arguments: [], defaultWorkers: 1))
        let ok = try RelayConfig.load(environment: base.merging(["UPSTREAM_URL": "http://127.0.0.1:9/api/chat",
                                                                 "RELAY_UPSTREAM_IDENTITY_SECRET": String(repeating: "s", count: 32)]) { $1 },
                                      arguments: [], defaultWorkers: 1)
        XCTAssertNoThrow(try ServeCommand.upstreamFactoryMaker(ok))
    }
}
