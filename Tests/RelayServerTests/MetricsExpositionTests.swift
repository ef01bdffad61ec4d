import XCTest
@testable import RelayServer

/// The Prometheus text format (exposition format 0.0.4) groups a family's samples right
/// after its `# TYPE` line; a labelled counter whose samples are split by another family
/// is rejected by Prometheus's parser and by `promtool check metrics`.
final class MetricsExpositionTests: XCTestCase {
    func testEverySampleFollowsItsOwnFamilysTypeLine() {
        let text = Metrics().render()
        var current: String?
        var typed = Set<String>()
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let name = String(line.dropFirst("# TYPE ".count).prefix { $0 != " " })
                XCTAssertTrue(typed.insert(name).inserted, "one TYPE line per family: \(name)")
                current = name
                continue
            }
            if line.hasPrefix("#") { continue }
            let name = String(line.prefix { $0 != "{" && $0 != " " })
            let family = ["_bucket", "_sum", "_count"].first { name.hasSuffix($0) && current == String(name.dropLast($0.count)) }
                .map { String(name.dropLast($0.count)) } ?? name
            XCTAssertEqual(family, current, "sample outside its family's group: \(line)")
        }
        XCTAssertTrue(typed.contains("relay_resumes_total"))
    }
}
