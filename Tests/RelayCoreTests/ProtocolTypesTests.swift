import Foundation
import XCTest
@testable import RelayCore
import RelayConfiguration

final class ProtocolTypesTests: XCTestCase {
    func parse(_ json: String) throws -> ChatRequest { try ChatRequest.parse(Data(json.utf8)) }

    func code(_ json: String) -> String? {
        do {
            _ = try parse(json)
            return nil
        } catch let e as APIError {
            return e.code.rawValue
        } catch { return "other" }
    }

    func testChatRequestParsesTheDocumentedShape() throws {
        let r = try parse(#"{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"NDA"}],"model":"simulated-ar","max_tokens":300,"mode":"summary"}"#)
        XCTAssertEqual(r.messages.count, 2)
        XCTAssertEqual(r.model, "simulated-ar")
        XCTAssertEqual(r.maxTokens, 300)
        XCTAssertEqual(r.mode, .summary)
        XCTAssertEqual(try ChatRequest.parse(r.jsonBody), r, "jsonBody round-trips")
    }

    func testChatRequestRejectsBadBodies() {
        XCTAssertEqual(code("{"), "invalid_json")
        XCTAssertEqual(code("[]"), "invalid_json")
        XCTAssertEqual(code("\"x\""), "invalid_json")
        XCTAssertEqual(code("{}"), "invalid_request")
        XCTAssertEqual(code(#"{"messages":[]}"#), "invalid_request")
        XCTAssertEqual(code(#"{"messages":"hi"}"#), "invalid_request")
        XCTAssertEqual(code(#"{"messages":[{"role":"user"}]}"#), "invalid_request")
        XCTAssertEqual(code(#"{"messages":[{"role":"user","content":1}]}"#), "invalid_request")
        XCTAssertEqual(code(#"{"messages":[{"role":"robot","content":"x"}]}"#), "invalid_request")
        XCTAssertEqual(code(#"{"messages":[{"role":"user","content":"x","name":"n"}]}"#), "invalid_request")
        XCTAssertEqual(code(#"{"messages":[{"role":"user","content":"x"}],"stream":true}"#), "invalid_request")
        XCTAssertEqual(code(#"{"messages":[{"role":"user","content":"x"}],"max_tokens":0}"#), "invalid_request")
        XCTAssertEqual(code(#"{"messages":[{"role":"user","content":"x"}],"max_tokens":1.5}"#), "invalid_request")
        XCTAssertEqual(code(#"{"messages":[{"role":"user","content":"x"}],"max_tokens":true}"#), "invalid_request")
        XCTAssertEqual(code(#"{"messages":[{"role":"user","content":"x"}],"max_tokens":"5"}"#), "invalid_request")
        XCTAssertEqual(code(#"{"messages":[{"role":"user","content":"x"}],"mode":"short"}"#), "invalid_request")
        XCTAssertEqual(code(#"{"messages":[{"role":"user","content":"x"}],"model":""}"#), "invalid_request")
        XCTAssertNil(code(#"{"messages":[{"role":"user","content":"x"}],"model":null,"max_tokens":null}"#))
    }

    func testRequestIDAlphabetAndLength() {
        XCTAssertNoThrow(try RequestID(validating: "abcdefghijklmnop"))
        XCTAssertNoThrow(try RequestID(validating: String(repeating: "A-_9", count: 16)))
        XCTAssertThrowsError(try RequestID(validating: "abcdefghijklmno"), "15 characters")
        XCTAssertThrowsError(try RequestID(validating: String(repeating: "a", count: 65)))
        XCTAssertThrowsError(try RequestID(validating: "abcdefghijklmnop!"))
        XCTAssertThrowsError(try RequestID(validating: "abcdefghijklmnop/"))
        XCTAssertThrowsError(try RequestID(validating: "abcdefghijklmnopé"))
        XCTAssertThrowsError(try RequestID(validating: "abcdefghijklmnop{x}"), "no hash-tag braces in Redis keys")
        let r = RequestID.random()
        XCTAssertEqual(r.value.count, 32)
        XCTAssertNoThrow(try RequestID(validating: r.value))
        XCTAssertNotEqual(RequestID.random(), RequestID.random())
    }

    func testLastEventID() throws {
        XCTAssertEqual(try LastEventID.parse(""), 0)
        XCTAssertEqual(try LastEventID.parse("0"), 0)
        XCTAssertEqual(try LastEventID.parse(" 42 "), 42)
        XCTAssertEqual(try LastEventID.parse("9223372036854775807"), 9_223_372_036_854_775_807)
        for bad in ["-1", "+1", "1.0", "abc", "0x1", "1 2", String(repeating: "9", count: 40), "99999999999999999999"] {
            XCTAssertThrowsError(try LastEventID.parse(bad), bad) { e in
                XCTAssertEqual((e as? APIError)?.code, "invalid_last_event_id")
            }
        }
    }

    func testRedisEndpoint() throws {
        XCTAssertEqual(try RedisEndpoint.parse("redis://localhost"), .tcp(host: "localhost", port: 6379, db: 0))
        XCTAssertEqual(try RedisEndpoint.parse("redis://10.0.0.5:6380/2"), .tcp(host: "10.0.0.5", port: 6380, db: 2))
        XCTAssertEqual(try RedisEndpoint.parse("unix:///tmp/r.sock"), .unix(path: "/tmp/r.sock", db: 0))
        XCTAssertEqual(try RedisEndpoint.parse("unix:///tmp/r.sock?db=3"), .unix(path: "/tmp/r.sock", db: 3))
        for bad in ["http://x", "redis://", "redis://h:0", "redis://h:70000", "redis://h:1/x", "unix://relative", "unix:///s?db=-1"] {
            XCTAssertThrowsError(try RedisEndpoint.parse(bad), bad)
        }
    }

    func testConfigFromEnvironmentAndFlags() throws {
        let c = try RelayConfig.load(environment: ["RELAY_LISTEN": "0.0.0.0:9000", "RELAY_BUFFER_TTL": "5m", "RELAY_HEARTBEAT": "500ms",
                                                   "REDIS_URL": "redis://r:6379"],
                                     arguments: ["--workers", "3", "--buffer-events=50", "--listen", "127.0.0.1:9100"],
                                     defaultWorkers: 2)
        XCTAssertEqual(c.listenHost, "127.0.0.1", "flags win over the environment")
        XCTAssertEqual(c.listenPort, 9100)
        XCTAssertEqual(c.workers, 3)
        XCTAssertEqual(c.bufferEvents, 50)
        XCTAssertEqual(c.bufferTTLms, 300_000)
        XCTAssertEqual(c.heartbeatMs, 500)
        XCTAssertEqual(c.redis, .tcp(host: "r", port: 6379, db: 0))
        let d = try RelayConfig.load(environment: [:], arguments: [], defaultWorkers: 2)
        XCTAssertEqual(d.workers, 2)
        XCTAssertNil(d.redis, "no REDIS_URL: private redis-server")
        XCTAssertEqual(d.bufferEvents, 200)
        XCTAssertEqual(d.bufferTTLms, 300_000)
        XCTAssertEqual(d.heartbeatMs, 15_000)
    }

    func testConfigErrorsNameTheVariable() {
        let cases: [([String: String], [String], String)] = [
            (["RELAY_WORKERS": "zero"], [], "RELAY_WORKERS"),
            (["RELAY_LISTEN": "8080"], [], "RELAY_LISTEN"),
            (["RELAY_BUFFER_TTL": "5 minutes"], [], "RELAY_BUFFER_TTL"),
            (["RELAY_UPSTREAM": "gpt"], [], "RELAY_UPSTREAM"),
            (["RELAY_JWT_SECRET": "short"], [], "RELAY_JWT_SECRET"),
            (["REDIS_URL": "mysql://x"], [], "REDIS_URL"),
            ([:], ["--nope", "1"], "--nope"),
            ([:], ["--workers"], "--workers"),
        ]
        for (env, args, name) in cases {
            XCTAssertThrowsError(try RelayConfig.load(environment: env, arguments: args, defaultWorkers: 1)) { e in
                XCTAssertTrue("\(e)".contains(name), "\(e) names \(name)")
            }
        }
    }

    func testAPIErrorBody() {
        XCTAssertEqual(APIError.streamNotFound.body,
                       #"{"error":{"code":"stream_not_found","message":"no such stream (unknown, expired, or not yours)"}}"#)
        XCTAssertEqual(APIError.invalidRequest("a \"quoted\"\nline").body,
                       #"{"error":{"code":"invalid_request","message":"a \"quoted\"\nline"}}"#)
    }
}
