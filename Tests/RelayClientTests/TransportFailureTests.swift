import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RelayClient
import XCTest

/// `TransportFailure`: a transport's error as the cause people are told.
final class TransportFailureTests: XCTestCase {
    func testURLErrorsAreClassifiedByTheirCode() {
        XCTAssertEqual(TransportFailure(URLError(.cannotConnectToHost)).kind, .refused)
        XCTAssertEqual(TransportFailure(URLError(.cannotFindHost)).kind, .hostNotFound)
        XCTAssertEqual(TransportFailure(URLError(.dnsLookupFailed)).kind, .hostNotFound)
        XCTAssertEqual(TransportFailure(URLError(.timedOut)).kind, .timedOut)
        XCTAssertEqual(TransportFailure(URLError(.notConnectedToInternet)).kind, .unreachable)
        XCTAssertEqual(TransportFailure(URLError(.networkConnectionLost)).kind, .other)
    }

    func testATransportFailurePassesThroughAndOtherErrorsAreOther() {
        let f = TransportFailure(kind: .refused, detail: "Failed to connect to 127.0.0.1 port 1")
        XCTAssertEqual(TransportFailure(f), f)
        struct Odd: Error {}
        XCTAssertEqual(TransportFailure(Odd()).kind, .other)
    }

    func testDescriptionGivesTheReasonThenTheTransportsDetail() {
        XCTAssertEqual(TransportFailure(kind: .refused, detail: "Failed to connect").description,
                       "connection refused (Failed to connect)")
        XCTAssertEqual(TransportFailure(kind: .hostNotFound, detail: "").description, "host not found (DNS)")
        XCTAssertEqual(TransportFailure(kind: .other, detail: "TLS handshake failed").description, "TLS handshake failed")
    }
}
