import Foundation
import RelayEventStore
import RelayRedis
import RelayTestKit
import XCTest

/// The event store's Lua scripts as embedded at build time (`Scripts`, `Lua/<name>.lua`),
/// without Redis: each follows the header convention (`LuaHeader`: its KEYS, ARGV and reply
/// shapes named, the indices its body uses declared, its error kinds typed), every file
/// in `Lua/` is embedded once, and the Redis Cluster variant of the lease expiry differs
/// from the plain one by its publish command alone.
final class LuaScriptHeaderTests: XCTestCase {
    private let folder = LuaHeader.folder(module: "RelayEventStore", testFile: #filePath)

    func testEveryEmbeddedScriptHasAHeaderNamingItsKeysArgvAndReplies() throws {
        XCTAssertFalse(Scripts.all.isEmpty)
        for s in Scripts.all {
            XCTAssertFalse(s.text.isEmpty, s.file)
            XCTAssertEqual(LuaHeader.problems(file: s.file, text: s.text), [], s.file)
        }
    }

    func testEveryLuaFileIsEmbeddedOnceAndAsItIsOnDisk() throws {
        let files = Scripts.all.map(\.file)
        XCTAssertEqual(files.count, Set(files).count, "a script is listed twice")
        XCTAssertEqual(Set(files), try LuaHeader.files(in: folder))
        for s in Scripts.all {
            XCTAssertEqual(s.text, try String(contentsOf: folder.appendingPathComponent(s.file), encoding: .utf8), s.file)
        }
    }

    func testTheEventLogLoadsTheLeaseExpiryOfItsRedis() {
        XCTAssertTrue(Scripts.eventLog(sharded: false).contains(Scripts.expireLease.source))
        XCTAssertFalse(Scripts.eventLog(sharded: false).contains(Scripts.expireLeaseSharded.source))
        XCTAssertTrue(Scripts.eventLog(sharded: true).contains(Scripts.expireLeaseSharded.source))
        XCTAssertFalse(Scripts.eventLog(sharded: true).contains(Scripts.expireLease.source))
    }

    /// The cluster variant is its own file, not a text replace: its body must stay the
    /// plain one's with `SPUBLISH` (Redis 7 sharded pub/sub) in place of `PUBLISH`, and its
    /// header must name the same KEYS, ARGV and replies.
    func testTheClusterLeaseExpiryDiffersFromThePlainOneOnlyByItsPublish() throws {
        let plain = try LuaHeader.parse(Scripts.expireLease.text)
        let sharded = try LuaHeader.parse(Scripts.expireLeaseSharded.text)
        XCTAssertEqual(plain.keys, sharded.keys)
        XCTAssertEqual(plain.argv, sharded.argv)
        XCTAssertEqual(plain.replies, sharded.replies)
        let a = plain.body.split(separator: "\n", omittingEmptySubsequences: false)
        let b = sharded.body.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(a.count, b.count)
        let differing = zip(a, b).filter { $0 != $1 }
        XCTAssertEqual(differing.count, 1, "one line differs")
        XCTAssertEqual(differing.first.map { $0.0.replacingOccurrences(of: "redis.call('PUBLISH'", with: "redis.call('SPUBLISH'") },
                       differing.first.map { String($0.1) })
    }

    /// Each script that fences a stream sets it to the largest entry ID, `Scripts.fenceID`,
    /// and no other literal ID.
    func testEveryFenceIsTheLargestEntryID() throws {
        let fencing = ["appendFinal.lua", "expireLease.lua", "expireLeaseSharded.lua", "takeover.lua", "appendFenced.lua"]
        for s in Scripts.all {
            let body = try LuaHeader.parse(s.text).body
            XCTAssertEqual(body.contains("redis.call('XSETID', KEYS[1], '\(Scripts.fenceID)')"), fencing.contains(s.file), s.file)
            for line in body.split(separator: "\n") where line.contains("'XSETID'") {
                let literals = line.split(separator: "'").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
                for id in literals where id.contains("-") && id.count > 3 { XCTAssertEqual(id, Scripts.fenceID, "\(s.file): \(line)") }
            }
        }
    }

    /// Every error kind a header names is one `RedisErrorCode` types, so no caller reads
    /// error text (no script documents a Redis command's own `ERR` as an answer).
    func testEveryDocumentedErrorKindIsTyped() throws {
        var kinds: Set<String> = []
        for s in Scripts.all { kinds.formUnion(try LuaHeader.parse(s.text).errors) }
        XCTAssertEqual(kinds, ["NOSTREAM", "FINISHED", "OUTOFORDER"])
        for kind in kinds {
            if case .other = RedisErrorCode(message: "\(kind) 7") { XCTFail("\(kind) is not typed") }
        }
    }

    /// The convention's checker refuses what breaks it (so the test above can fail).
    func testTheHeaderCheckerRefusesAMalformedHeader() {
        let good = "-- x.lua: does x.\n--\n-- KEYS[1] a: a key\n-- ARGV: none\n-- Reply 1: done\n\nreturn redis.call('GET', KEYS[1])\n"
        XCTAssertEqual(LuaHeader.problems(file: "x.lua", text: good), [])
        XCTAssertFalse(LuaHeader.problems(file: "y.lua", text: good).isEmpty, "line 1 names another file")
        XCTAssertFalse(LuaHeader.problems(file: "x.lua", text: good.replacingOccurrences(of: "KEYS[1]", with: "KEYS[2]")).isEmpty,
                       "KEYS out of order")
        XCTAssertFalse(LuaHeader.problems(file: "x.lua", text: good.replacingOccurrences(of: "-- Reply 1: done\n", with: "")).isEmpty,
                       "no reply")
        XCTAssertFalse(LuaHeader.problems(file: "x.lua", text: good.replacingOccurrences(of: "-- ARGV: none\n", with: "")).isEmpty,
                       "no ARGV entry")
        XCTAssertFalse(LuaHeader.problems(file: "x.lua", text: good + "return ARGV[1]\n").isEmpty, "ARGV[1] used, none declared")
        XCTAssertFalse(LuaHeader.problems(file: "x.lua", text: good + "return redis.error_reply('NOPE x')\n").isEmpty,
                       "an error kind not in the header")
        XCTAssertFalse(LuaHeader.problems(file: "x.lua", text: "-- x.lua: does x.\n-- KEYS: none\n-- ARGV: none\n-- Reply 1: one\n\n\n").isEmpty,
                       "an empty body")
        XCTAssertFalse(LuaHeader.problems(file: "x.lua", text: good.replacingOccurrences(of: "-- ARGV: none", with: "-- ARGV: none\n-- stray")).isEmpty,
                       "a stray line among the entries")
        XCTAssertFalse(LuaHeader.problems(file: "x.lua", text: good.replacingOccurrences(of: "--\n", with: "-- ARGV[1] is not an entry\n")).isEmpty,
                       "a description line that reads like an entry")
    }
}
