import RelayBudgets
import XCTest

/// `ModelPolicy` (`RELAY_MODELS`, docs/CONFIGURATION.md): the models each tier may ask for.
final class ModelPolicyTests: XCTestCase {
    func testTiersGetTheirListAndTheirDefault() throws {
        let p = try ModelPolicy(specification: "free=model-a, pro=model-a|model-b", fallbackModel: "model-a")
        XCTAssertEqual(try p.resolve(requested: nil, tier: "free", defaultTier: "free"), "model-a")
        XCTAssertEqual(try p.resolve(requested: "model-b", tier: "pro", defaultTier: "free"), "model-b")
        XCTAssertThrowsError(try p.resolve(requested: "model-b", tier: "free", defaultTier: "free")) { e in
            XCTAssertEqual((e as? ModelNotAllowed)?.allowed, ["model-a"])
        }
        XCTAssertThrowsError(try p.resolve(requested: "o1-pro-most-expensive", tier: "pro", defaultTier: "free"))
        XCTAssertEqual(try p.resolve(requested: nil, tier: "team", defaultTier: "free"), "model-a", "unlisted tier: the default tier's list")
    }

    func testUnsetAllowsOnlyTheUpstreamModel() throws {
        let p = try ModelPolicy(specification: "", fallbackModel: "gpt-cheap")
        XCTAssertEqual(try p.resolve(requested: nil, tier: "free", defaultTier: "free"), "gpt-cheap")
        XCTAssertEqual(try p.resolve(requested: "gpt-cheap", tier: "pro", defaultTier: "free"), "gpt-cheap")
        XCTAssertThrowsError(try p.resolve(requested: "o1-pro-most-expensive", tier: "free", defaultTier: "free"))
        // No list and no UPSTREAM_MODEL (the simulated upstream): the upstream decides.
        let open = try ModelPolicy(specification: "", fallbackModel: nil)
        XCTAssertEqual(try open.resolve(requested: "simulated-ar", tier: "free", defaultTier: "free"), "simulated-ar")
        XCTAssertNil(try open.resolve(requested: nil, tier: "free", defaultTier: "free"))
    }

    /// The simulated upstream's agent answer comes with its default model, after the listed
    /// ones (never the default), and nowhere else.
    func testSimulatedToolsIsAllowedWhereverSimulatedIs() throws {
        let p = try ModelPolicy(specification: "free=simulated,pro=simulated|simulated-ar,team=gpt-4o", fallbackModel: nil)
        XCTAssertEqual(try p.resolve(requested: "simulated-tools", tier: "free", defaultTier: "free"), "simulated-tools")
        XCTAssertEqual(try p.resolve(requested: nil, tier: "free", defaultTier: "free"), "simulated")
        XCTAssertEqual(p.allowed(tier: "pro", defaultTier: "free"), ["simulated", "simulated-ar", "simulated-tools"])
        XCTAssertThrowsError(try p.resolve(requested: "simulated-tools", tier: "team", defaultTier: "free"))
        let fallback = try ModelPolicy(specification: "", fallbackModel: "simulated")
        XCTAssertEqual(try fallback.resolve(requested: "simulated-tools", tier: "free", defaultTier: "free"), "simulated-tools")
    }

    /// The bench answers (`simulated-bench`, `simulated-bench-parts`) are reserved for
    /// `stream-relay-bench`: a list that holds `simulated` does not bring them along.
    func testBenchModelsAreNotAllowedWhereSimulatedIs() throws {
        let p = try ModelPolicy(specification: "free=simulated,pro=simulated|simulated-ar", fallbackModel: nil)
        let fallback = try ModelPolicy(specification: "", fallbackModel: "simulated")
        for model in ["simulated-bench", "simulated-bench-parts"] {
            XCTAssertThrowsError(try p.resolve(requested: model, tier: "free", defaultTier: "free"), model)
            XCTAssertThrowsError(try p.resolve(requested: model, tier: "pro", defaultTier: "free"), model)
            XCTAssertThrowsError(try fallback.resolve(requested: model, tier: "free", defaultTier: "free"), model)
        }
    }

    func testBadSpecificationsNameTheVariable() {
        for bad in ["free", "=a", "free=a||b", "free=a,free=b", "free="] {
            XCTAssertThrowsError(try ModelPolicy(specification: bad, fallbackModel: nil), bad) { e in
                XCTAssertTrue("\(e)".hasPrefix("RELAY_MODELS: "), "\(e)")
            }
        }
    }
}
