import XCTest
import RelayCore
import RelayConfiguration

/// The sampling fields of a chat request (docs/PROTOCOL.md §3.1): their ranges and errors, the
/// stored form a takeover's continuation forwards unchanged, and the operator's allowlist.
final class SamplingParametersTests: XCTestCase {
    private func parse(_ json: String) throws -> ChatRequest {
        try ChatRequest.parse(Data(json.utf8))
    }

    private func message(_ json: String) -> String? {
        do { _ = try parse(json); return nil } catch let e as APIError { return e.message } catch { return "\(error)" }
    }

    private let hello = #""messages":[{"role":"user","content":"hi"}]"#

    func testEveryFieldIsReadInRangeAndAStopStringIsOneSequence() throws {
        let r = try parse(#"{\#(hello),"temperature":0.7,"top_p":1,"stop":"\n\n","seed":42,"presence_penalty":-2,"frequency_penalty":1.5}"#)
        XCTAssertEqual(r.sampling, SamplingParameters(temperature: 0.7, topP: 1, stop: ["\n\n"], seed: 42,
                                                      presencePenalty: -2, frequencyPenalty: 1.5))
        XCTAssertEqual(r.sampling.setNames, SamplingParameters.names)
        XCTAssertEqual(try parse(#"{\#(hello),"temperature":null}"#).sampling, SamplingParameters(), "null is not set")
        XCTAssertEqual(try parse(#"{\#(hello),"stop":["a","b","c","d"]}"#).sampling.stop, ["a", "b", "c", "d"])
    }

    func testOutOfRangeOrMistypedFieldsAreRefusedNamingTheField() {
        XCTAssertEqual(message(#"{\#(hello),"temperature":2.5}"#), #""temperature" must be a number from 0 to 2"#)
        XCTAssertEqual(message(#"{\#(hello),"temperature":true}"#), #""temperature" must be a number from 0 to 2"#)
        XCTAssertEqual(message(#"{\#(hello),"temperature":"0.5"}"#), #""temperature" must be a number from 0 to 2"#)
        XCTAssertEqual(message(#"{\#(hello),"top_p":-0.1}"#), #""top_p" must be a number from 0 to 1"#)
        XCTAssertEqual(message(#"{\#(hello),"presence_penalty":2.01}"#), #""presence_penalty" must be a number from -2 to 2"#)
        XCTAssertEqual(message(#"{\#(hello),"seed":1.5}"#), #""seed" must be an integer of magnitude at most 2^53"#)
        XCTAssertEqual(message(#"{\#(hello),"seed":1e300}"#), #""seed" must be an integer of magnitude at most 2^53"#)
        XCTAssertEqual(message(#"{\#(hello),"seed":9007199254740993}"#), #""seed" must be an integer of magnitude at most 2^53"#,
                       "2^53 + 1 is refused, not rounded to 2^53")
        XCTAssertEqual(try parse(#"{\#(hello),"seed":9007199254740992}"#).sampling.seed, 9_007_199_254_740_992)
        let stop = #""stop" must be a string or an array of 1 to 4 strings, each 1 to 200 bytes"#
        XCTAssertEqual(message(#"{\#(hello),"stop":[]}"#), stop)
        XCTAssertEqual(message(#"{\#(hello),"stop":["a","b","c","d","e"]}"#), stop)
        XCTAssertEqual(message(#"{\#(hello),"stop":[""]}"#), stop)
        XCTAssertEqual(message(#"{\#(hello),"stop":[1]}"#), stop)
        XCTAssertEqual(message(#"{\#(hello),"stop":"\#(String(repeating: "x", count: 201))"}"#), stop)
        XCTAssertEqual(message(#"{\#(hello),"top_k":5}"#), #"unknown field "top_k""#)
    }

    /// A takeover continues the stored request (`StoredRequest`, through `jsonBody`): the
    /// continuation sends the upstream the same sampling as the first call.
    func testTheRequestsBodyCarriesItsSamplingUnchanged() throws {
        let r = try parse(#"{\#(hello),"temperature":0.25,"stop":["END"],"seed":-9007199254740992,"frequency_penalty":0}"#)
        XCTAssertEqual(try ChatRequest.parse(r.jsonBody), r)
    }

    func testTheOperatorsAllowlistIsReadAndUnknownNamesAreRefused() throws {
        func load(_ v: String?) throws -> [String] {
            try RelayConfig.load(environment: v.map { ["RELAY_CLIENT_PARAMETERS": $0] } ?? [:], arguments: [], defaultWorkers: 1).clientParameters
        }
        XCTAssertEqual(try load(nil), SamplingParameters.names + ["images", "tools"], "every field, images and tools, by default")
        XCTAssertEqual(try load("temperature, top_p"), ["temperature", "top_p"])
        XCTAssertEqual(try load("none"), [])
        XCTAssertEqual(try load(""), [], "empty allows nothing (it is not the default)")
        XCTAssertThrowsError(try load("temperature,top_k")) { e in
            XCTAssertTrue("\(e)".contains("unknown field \"top_k\""), "\(e)")
        }
    }
}
