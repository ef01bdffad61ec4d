import Foundation
@testable import RelayServer
import XCTest

/// Log lines (docs/OPERATIONS.md "Logs"; pure formatter, injected time; no relay process).
final class LogFormatterTests: XCTestCase {
    /// 2026-11-30T23:59:14.123Z
    let t = Date(timeIntervalSince1970: 1_796_083_154.123_4)

    func testTimestampsAreRFC3339UTCWithMilliseconds() {
        XCTAssertEqual(LogFormatter.timestamp(t), "2026-11-30T23:59:14.123Z")
        XCTAssertEqual(LogFormatter.timestamp(Date(timeIntervalSince1970: 0)), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(LogFormatter.timestamp(Date(timeIntervalSince1970: 951_782_400.998_9)), "2000-02-29T00:00:00.999Z", "leap day, rounded")
        XCTAssertEqual(LogFormatter.timestamp(Date(timeIntervalSince1970: 951_868_799.999_7)), "2000-03-01T00:00:00.000Z", "rounding carries into the next day")
        XCTAssertEqual(LogFormatter.timestamp(Date(timeIntervalSince1970: 4_107_542_399.5)), "2100-02-28T23:59:59.500Z", "2100 is no leap year")
        XCTAssertEqual(LogFormatter.timestamp(Date(timeIntervalSince1970: 4_107_542_400)), "2100-03-01T00:00:00.000Z")
        XCTAssertEqual(LogFormatter.timestamp(Date(timeIntervalSince1970: -5)), "1970-01-01T00:00:00.000Z", "clamped")
    }

    func testTimestampsAgreeWithFoundationAcrossYears() {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        f.timeZone = TimeZone(identifier: "UTC")
        var s: Double = 0
        while s < 7_000_000_000 {  // 1970 … 2191, ~37 days apart, odd milliseconds
            let d = Date(timeIntervalSince1970: s + 0.017)
            XCTAssertEqual(LogFormatter.timestamp(d), f.string(from: d))
            s += 3_196_811
        }
    }

    func testJSONLineHasStableKeysFirstAndUnescapedSlashes() throws {
        let line = LogFormatter(format: .json).line(time: t, level: .warn, message: "redis connection lost",
                                                    fields: ["worker": 1, "reason": "EOF", "redis": "unix:///tmp/r.sock",
                                                             "ok": true, "ratio": 0.5, "msg": "shadow", "ts": 1])
        XCTAssertEqual(line, #"{"ts":"2026-11-30T23:59:14.123Z","level":"warn","msg":"redis connection lost","ok":true,"ratio":0.5,"reason":"EOF","redis":"unix:///tmp/r.sock","worker":1}"#)
        let obj = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        XCTAssertEqual(obj["redis"] as? String, "unix:///tmp/r.sock")
        XCTAssertEqual(obj["msg"] as? String, "redis connection lost")
    }

    func testJSONEscapesQuotesAndControlCharacters() throws {
        let line = LogFormatter(format: .json).line(time: t, level: .error, message: "bad \"thing\"\n", fields: ["path": "a\\b\tc"])
        XCTAssertFalse(line.contains("\n"))
        let obj = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        XCTAssertEqual(obj["msg"] as? String, "bad \"thing\"\n")
        XCTAssertEqual(obj["path"] as? String, "a\\b\tc")
    }

    func testTextLineForTerminals() {
        let line = LogFormatter(format: .text).line(time: t, level: .info, message: "listening",
                                                    fields: ["port": 8080, "redis": "unix:///tmp/r.sock", "reason": "connection refused", "empty": ""])
        XCTAssertEqual(line, #"2026-11-30T23:59:14.123Z INFO  listening empty="" port=8080 reason="connection refused" redis=unix:///tmp/r.sock"#)
        XCTAssertTrue(LogFormatter(format: .text).line(time: t, level: .error, message: "x", fields: [:]).hasPrefix("2026-11-30T23:59:14.123Z ERROR x"))
    }

    func testSettingsFromEnvironment() throws {
        let auto = try Log.Settings(environment: [:], standardErrorIsTerminal: false)
        XCTAssertEqual(auto.level, .info)
        XCTAssertEqual(auto.formatter.format, .json, "JSON when stderr is not a terminal")
        XCTAssertEqual(try Log.Settings(environment: [:], standardErrorIsTerminal: true).formatter.format, .text)
        let set = try Log.Settings(environment: ["RELAY_LOG_LEVEL": "WARN", "RELAY_LOG_FORMAT": "json"], standardErrorIsTerminal: true)
        XCTAssertEqual(set.level, .warn)
        XCTAssertEqual(set.formatter.format, .json, "RELAY_LOG_FORMAT wins over the terminal check")
        XCTAssertEqual(try Log.Settings(environment: ["RELAY_LOG_FORMAT": "text"], standardErrorIsTerminal: false).formatter.format, .text)
        XCTAssertThrowsError(try Log.Settings(environment: ["RELAY_LOG_LEVEL": "verbose"], standardErrorIsTerminal: false))
        XCTAssertThrowsError(try Log.Settings(environment: ["RELAY_LOG_FORMAT": "logfmt"], standardErrorIsTerminal: false))
    }

    func testLevelsOrder() {
        XCTAssertEqual(LogLevel.allCases.map(\.name), ["debug", "info", "warn", "error"])
        XCTAssertTrue(LogLevel.debug < .info && LogLevel.info < .warn && LogLevel.warn < .error)
        XCTAssertEqual(LogLevel(name: "warning"), .warn)
        XCTAssertNil(LogLevel(name: "trace"))
    }
}
