import XCTest
@testable import RelayUpstream

final class SimulatedTextTests: XCTestCase {
    func testSmoke() {
        let t = "Hello, world! The Party's  \"Confidential Information\" — 12345 ٢٠٢٥ تُعَدّ 👩‍👩‍👧 e\u{301}\r\n\r\n## Clause 3\n---\n"
        let toks = SimulatedTokenizer.tokens(t)
        print(toks)
        XCTAssertEqual(toks.joined(), t)
    }
}
