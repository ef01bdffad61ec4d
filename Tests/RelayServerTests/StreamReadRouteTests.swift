import RelayCore
@testable import RelayServer
import XCTest

/// docs/PROTOCOL.md §12.1: which read a `GET`/`HEAD` of the stream URL is.
final class StreamReadRouteTests: XCTestCase {
    func testAnOffsetSelectsAnOffsetReadWhateverElseIsSent() {
        XCTAssertEqual(StreamReadRoute.choose(offset: "now", live: "sse", hasLastEventID: true, accept: ["text/event-stream"]),
                       .offsetRead(rawOffset: "now"))
    }

    func testTheAISDKDialectWithAnOffsetOrLiveIsRefusedNotAnsweredInJSON() {
        for (offset, live) in [("3", nil), ("-1", "long-poll"), (nil, "sse")] as [(String?, String?)] {
            guard case .refuse(let e) = StreamReadRoute.choose(offset: offset, live: live, hasLastEventID: false, accept: [],
                                                               dialect: .uiMessageStream) else {
                return XCTFail("format=ai-sdk with offset \(offset ?? "-") live \(live ?? "-") is refused")
            }
            XCTAssertEqual(e.code, .invalidRequest)
        }
        XCTAssertEqual(StreamReadRoute.choose(offset: nil, live: nil, hasLastEventID: false, accept: [], dialect: .uiMessageStream),
                       .sseResume)
    }

    func testLiveWithoutAnOffsetIsRefused() {
        guard case .refuse(let e) = StreamReadRoute.choose(offset: nil, live: "long-poll", hasLastEventID: false, accept: []) else {
            return XCTFail("refused")
        }
        XCTAssertEqual(e.code, .invalidOffset)
        XCTAssertEqual(e.status, 400)
    }

    func testSSEClientsAndResumesKeepTheSSEResume() {
        for accept in [["text/event-stream"], ["Text/Event-Stream; charset=utf-8"], ["application/json, text/event-stream;q=0.9"]] {
            XCTAssertEqual(StreamReadRoute.choose(offset: nil, live: nil, hasLastEventID: false, accept: accept), .sseResume, "\(accept)")
        }
        XCTAssertEqual(StreamReadRoute.choose(offset: nil, live: nil, hasLastEventID: true, accept: []), .sseResume)
    }

    func testADurableStreamsDefaultCallIsACatchUpFromTheStart() {
        for accept in [[], ["*/*"], ["application/json"], ["text/event-streams"]] {
            XCTAssertEqual(StreamReadRoute.choose(offset: nil, live: nil, hasLastEventID: false, accept: accept),
                           .offsetRead(rawOffset: "-1"), "\(accept)")
        }
    }

    func testTheETagNamesTheRangeAndWhetherTheAnswerClosed() {
        let open = OffsetReadBatch.etag(id: "r-1", after: 0, nextSeq: 3, closed: false)
        XCTAssertEqual(open, "\"r-1:00000000000000000000:00000000000000000003\"")
        XCTAssertEqual(OffsetReadBatch.etag(id: "r-1", after: 0, nextSeq: 3, closed: true), "\"r-1:00000000000000000000:00000000000000000003:c\"")
        XCTAssertNotEqual(open, OffsetReadBatch.etag(id: "r-1", after: 0, nextSeq: 4, closed: false))
        XCTAssertNotEqual(open, OffsetReadBatch.etag(id: "r-2", after: 0, nextSeq: 3, closed: false))
    }

    func testAnEventStreamRangeWithQZeroIsNotAcceptable() {
        XCTAssertFalse(StreamReadRoute.acceptsEventStream(["text/event-stream;q=0, application/json"]))
        XCTAssertFalse(StreamReadRoute.acceptsEventStream(["text/event-stream; q=0.0"]))
        XCTAssertTrue(StreamReadRoute.acceptsEventStream(["text/event-stream; q=0.1"]))
    }

    /// RFC 9110 §13.1.2: `*`, lists, and weak comparison.
    func testIfNoneMatchTakesListsStarAndWeakTags() {
        let tag = OffsetReadBatch.etag(id: "r-1", after: 0, nextSeq: 3, closed: true)
        XCTAssertTrue(OffsetReadBatch.ifNoneMatch([tag], matches: tag))
        XCTAssertTrue(OffsetReadBatch.ifNoneMatch(["\"x\", \(tag)"], matches: tag))
        XCTAssertTrue(OffsetReadBatch.ifNoneMatch(["*"], matches: tag))
        XCTAssertTrue(OffsetReadBatch.ifNoneMatch(["W/\(tag)"], matches: tag))
        XCTAssertTrue(OffsetReadBatch.ifNoneMatch(["\"x\"", tag], matches: tag))
        XCTAssertFalse(OffsetReadBatch.ifNoneMatch(["\"x\""], matches: tag))
        XCTAssertFalse(OffsetReadBatch.ifNoneMatch([], matches: tag))
    }
}
