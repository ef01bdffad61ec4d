@testable import stream_relay
import RelayConfiguration
import RelayUpstream
import XCTest

/// `serve` makes each worker's HTTP upstream factory with the continuation mode of
/// `RELAY_UPSTREAM_CONTINUATION` for its `RELAY_UPSTREAM`, and refuses a mode of the other API
/// at start.
final class UpstreamContinuationSettingTests: XCTestCase {
    func config(_ upstream: String, _ continuation: String) -> RelayConfig {
        var c = RelayConfig()
        c.upstream = upstream
        c.upstreamURL = "http://127.0.0.1:9"
        c.upstreamContinuation = continuation
        return c
    }

    func testEachUpstreamGetsItsMode() throws {
        let cases: [(String, String, HTTPContinuation)] = [
            ("anthropic", "auto", .anthropicPrefill), ("anthropic", "off", .off),
            ("openai", "auto", .off), ("openai", "vllm", .vllm), ("openai", "llama-cpp", .llamaCpp),
            ("openai-responses", "auto", .off), ("openai-responses", "off", .off),
        ]
        for (upstream, setting, mode) in cases {
            let factory = try ServeCommand.upstreamFactoryMaker(config(upstream, setting))()
            XCTAssertEqual((factory as? HTTPUpstreamFactory)?.continuation, mode, "\(upstream) \(setting)")
            XCTAssertEqual((factory as? HTTPUpstreamFactory)?.api.rawValue, upstream)
        }
    }

    func testAModeOfTheOtherAPIStopsTheStart() {
        XCTAssertThrowsError(try ServeCommand.upstreamFactoryMaker(config("anthropic", "vllm"))) {
            XCTAssertTrue("\($0)".contains("RELAY_UPSTREAM_CONTINUATION=vllm"), "\($0)")
        }
        XCTAssertThrowsError(try ServeCommand.upstreamFactoryMaker(config("openai", "anthropic-prefill")))
        for mode in ["anthropic-prefill", "vllm", "llama-cpp"] {
            XCTAssertThrowsError(try ServeCommand.upstreamFactoryMaker(config("openai-responses", mode)), "the Responses API continues nothing")
        }
    }
}
