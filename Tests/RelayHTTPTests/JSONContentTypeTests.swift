import RelayCore
@testable import RelayHTTP
import XCTest

/// `JSONContentType`: the exact media type, parameters, charset (RFC 8259 §11; a prefix
/// match would accept `application/jsonx`, and `charset=utf-16` must be refused).
final class JSONContentTypeTests: XCTestCase {
    func testAcceptsJSONWithOrWithoutUTF8Charset() {
        for v in ["application/json", "APPLICATION/JSON", "application/json; charset=utf-8", "application/json;charset=UTF-8",
                  "application/json ; charset=\"utf-8\"", "application/json;", " application/json "] {
            XCTAssertTrue(JSONContentType.accepts(v), v)
        }
    }

    func testRefusesOtherTypesAndCharsets() {
        for v in [nil, "", "text/plain", "application/jsonx", "application/json-seq", "application/json+foo",
                  "application/json; charset=utf-16", "application/json; charset=latin1", "application/json; garbage",
                  "application/*", "json"] as [String?] {
            XCTAssertFalse(JSONContentType.accepts(v), v ?? "nil")
        }
    }
}
