import XCTest
import RelayConfiguration

/// The operator's system prompts (`RELAY_SYSTEM_PROMPTS`, docs/PROTOCOL.md §3.1): a model's
/// prompt wins over a tier's, a tier's over the default; the specification's shape is checked.
final class SystemPromptPolicyTests: XCTestCase {
    func testAModelsPromptWinsOverATiersAndATiersOverTheDefault() throws {
        let p = try SystemPromptPolicy.parse(#"{"default":"D","models":{"gpt-4o":"M"},"tiers":{"pro":"T"}}"#)
        XCTAssertEqual(p.prompt(model: "gpt-4o", tier: "pro"), "M")
        XCTAssertEqual(p.prompt(model: "other", tier: "pro"), "T")
        XCTAssertEqual(p.prompt(model: nil, tier: "free"), "D")
        XCTAssertNil(try SystemPromptPolicy.parse(#"{"tiers":{"pro":"T"}}"#).prompt(model: "m", tier: "free"), "no default: none")
        XCTAssertTrue(try SystemPromptPolicy.parse("{}").isEmpty)
    }

    func testASpecificationOfTheWrongShapeIsRefusedNamingWhy() {
        func message(_ text: String) -> String? {
            do { _ = try SystemPromptPolicy.parse(text); return nil } catch { return "\(error)" }
        }
        XCTAssertEqual(message("Be brief."), #"RELAY_SYSTEM_PROMPTS: not a JSON object {"default", "models", "tiers"}"#)
        XCTAssertEqual(message(#"{"model":{}}"#), #"RELAY_SYSTEM_PROMPTS: unknown key "model" (known: default, models, tiers)"#)
        XCTAssertEqual(message(#"{"default":""}"#), "RELAY_SYSTEM_PROMPTS: default must be a string of 1 to 65536 bytes")
        XCTAssertEqual(message(#"{"tiers":{"pro":3}}"#), "RELAY_SYSTEM_PROMPTS: tiers.pro must be a string of 1 to 65536 bytes")
        XCTAssertEqual(message(#"{"models":["a"]}"#), #"RELAY_SYSTEM_PROMPTS: "models" must be an object of prompts by name"#)
    }
}
