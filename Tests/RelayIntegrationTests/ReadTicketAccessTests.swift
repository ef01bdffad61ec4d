import Foundation
import RelayAuth
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// Read tickets (docs/PROTOCOL.md §2.5): `X-Read-Ticket` from a bearer-authenticated stream
/// response, `?ticket=` admitting `GET`/`HEAD` of that one stream only, on any instance,
/// revocation checked on every use, expiry, the shared key in Redis and its rotation.
final class ReadTicketAccessTests: RelayTestCase {
    private func ticketOfNewStream(_ relay: RelayProcess, token: String, id: String, maxTokens: Int = 20) throws -> (String, [SSEMessage]) {
        let c = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: maxTokens)
        let ticket = try XCTUnwrap(c.header("X-Read-Ticket"), "the POST's response carries a read ticket")
        return (ticket, try c.readAll())
    }

    private func get(_ relay: RelayProcess, _ path: String, headers: [(String, String)] = []) throws -> HTTPResponse {
        try HTTPClient.request(port: relay.port, method: "GET", path: path, headers: headers)
    }

    /// The ticket reads its stream from any event on (byte-identical events to a bearer read),
    /// by `?ticket=` with `?lastEventId=` or `Last-Event-ID`; the response to a ticket carries
    /// no new ticket. It admits nothing else: another stream, `POST`, `DELETE`, the budget, a
    /// tampered ticket — each `401 unauthorized` with `WWW-Authenticate: Bearer`.
    func testATicketReadsItsOwnStreamAndNothingElse() throws {
        let relay = try startRelay()
        let token = RelayProcess.token()
        let id = Chat.newID()
        let (ticket, events) = try ticketOfNewStream(relay, token: token, id: id)
        XCTAssertEqual(events.count, 21)
        let q = ticket.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!

        let byTicket = try SSEConnection(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?ticket=\(ticket)&lastEventId=0")
        XCTAssertEqual(byTicket.status, 200)
        XCTAssertNil(byTicket.header("X-Read-Ticket"), "no ticket is issued from a ticket")
        let again = try byTicket.readAll()
        XCTAssertEqual(again.map(\.data), events.map(\.data))
        XCTAssertEqual(again.map(\.lastEventId), events.map(\.lastEventId))
        // Percent-encoded, and with Last-Event-ID as EventSource sends it.
        let encoded = try SSEConnection(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?ticket=\(q)",
                                        headers: [("Last-Event-ID", "15")])
        XCTAssertEqual(try encoded.readAll().map(\.lastEventId), (16...21).map(String.init))
        XCTAssertEqual(try get(relay, "/api/chat/stream/\(id)?ticket=\(ticket)", headers: [("Last-Event-ID", "21")]).status, 204)
        // HEAD with the ticket: the GET's head, no new ticket; an offset read (§12) takes it too.
        let head = try RawConnection(port: relay.port)
        try head.send("HEAD /api/chat/stream/\(id)?ticket=\(ticket)&lastEventId=3 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let headText = String(decoding: head.readToEnd(timeout: 10), as: UTF8.self)
        XCTAssertTrue(headText.hasPrefix("HTTP/1.1 200 "), headText)
        XCTAssertTrue(headText.hasSuffix("\r\n\r\n") && !headText.contains("X-Read-Ticket"), headText)
        let offsetRead = try get(relay, "/api/chat/stream/\(id)?offset=-1&ticket=\(ticket)")
        XCTAssertEqual(offsetRead.status, 200, offsetRead.text)
        XCTAssertTrue(offsetRead.text.hasPrefix("[{"), offsetRead.text)

        func refused(_ r: HTTPResponse, _ what: String, message: String? = nil) {
            XCTAssertEqual(r.status, 401, what)
            XCTAssertEqual(r.errorCode, "unauthorized", what)
            XCTAssertEqual(r.header("WWW-Authenticate"), "Bearer", what)
            if let message { XCTAssertTrue(r.text.contains(message), "\(what): \(r.text)") }
        }
        let other = Chat.newID()
        _ = try ticketOfNewStream(relay, token: token, id: other, maxTokens: 2)
        refused(try get(relay, "/api/chat/stream/\(other)?ticket=\(ticket)"), "another stream of the same user", message: "invalid ticket")
        refused(try HTTPClient.request(port: relay.port, method: "POST", path: "/api/chat/stream?ticket=\(ticket)",
                                       headers: [("Content-Type", "application/json"), ("X-Request-Id", id)], body: Chat.body()), "POST")
        refused(try HTTPClient.request(port: relay.port, method: "DELETE", path: "/api/chat/stream/\(id)?ticket=\(ticket)"), "DELETE")
        refused(try get(relay, "/api/budget?ticket=\(ticket)"), "budget")
        var parts = ticket.split(separator: ".").map(String.init)
        parts[5] = String((Int(parts[5]) ?? 0) + 3600)
        refused(try get(relay, "/api/chat/stream/\(id)?ticket=\(parts.joined(separator: "."))"), "a longer expiry", message: "invalid ticket")
        refused(try get(relay, "/api/chat/stream/\(id)?ticket=rt1.nonsense"), "garbage", message: "invalid ticket")
        refused(try get(relay, "/api/chat/stream/\(id)?token=\(token)"), "the bearer token in the query", message: "missing bearer token")
        // Another user's ticket for an id the caller also uses names the other user's stream.
        let bob = RelayProcess.token(sub: "bob")
        let (bobTicket, _) = try ticketOfNewStream(relay, token: bob, id: id, maxTokens: 2)
        let bobRead = try SSEConnection(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?ticket=\(bobTicket)&lastEventId=0")
        XCTAssertEqual(try bobRead.readAll().count, 3, "bob's ticket reads bob's stream of that id, not alice's")
        XCTAssertFalse(relay.log.contains(ticket) || relay.log.contains(bobTicket), "tickets never reach the relay's log")
    }

    /// A ticket issued by one instance is accepted by another (the key is shared through
    /// Redis); a revoked session's ticket is refused on the next use; a ticket never
    /// outlives the token it was issued for.
    func testTicketsWorkOnEveryInstanceUntilRevokedOrExpired() throws {
        let a = try startRelay()
        let b = try startRelay()
        let sid = "s-" + UUID().uuidString
        let token = RelayProcess.token(sid: sid)
        let id = Chat.newID()
        let (ticket, events) = try ticketOfNewStream(a, token: token, id: id)
        let onB = try SSEConnection(port: b.port, method: "GET", path: "/api/chat/stream/\(id)?ticket=\(ticket)&lastEventId=0")
        XCTAssertEqual(try onB.readAll().map(\.data), events.map(\.data))
        XCTAssertEqual(try redis.cli("EXISTS", "relay:read-ticket-key"), "1")

        XCTAssertEqual(try redis.cli("SET", "relay:revoked:{\(sid)}", "1"), "OK")
        let revoked = try get(b, "/api/chat/stream/\(id)?ticket=\(ticket)&lastEventId=0")
        XCTAssertEqual(revoked.status, 401)
        XCTAssertTrue(revoked.text.contains("session revoked"), revoked.text)

        let short = RelayProcess.token(ttl: 2)
        let shortID = Chat.newID()
        let (shortTicket, _) = try ticketOfNewStream(a, token: short, id: shortID, maxTokens: 2)
        let exp = Int64(shortTicket.split(separator: ".")[5]) ?? .max
        XCTAssertLessThanOrEqual(exp, Int64(Date().timeIntervalSince1970) + 2, "capped by the token's exp")
        try eventually(10, "the ticket to expire") {
            let r = try get(a, "/api/chat/stream/\(shortID)?ticket=\(shortTicket)&lastEventId=0")
            return r.status == 401 && r.text.contains("ticket expired")
        }
    }

    /// Rotation (`DEL relay:read-ticket-key`): a relay started after it signs with a new key;
    /// an instance that still holds the old one reloads the key when a ticket names one it
    /// does not know, and accepts the ticket.
    func testAnInstanceLearnsARotatedKeyFromTheFirstTicketThatNamesIt() throws {
        let a = try startRelay()
        let token = RelayProcess.token()
        let id = Chat.newID()
        let (old, _) = try ticketOfNewStream(a, token: token, id: id, maxTokens: 2)
        _ = try redis.cli("DEL", "relay:read-ticket-key")
        let b = try startRelay()
        let (new, _) = try ticketOfNewStream(b, token: token, id: id, maxTokens: 2)
        XCTAssertNotEqual(ReadTicket.keyID(of: old), ReadTicket.keyID(of: new), "b made a new key")
        XCTAssertEqual(try get(a, "/api/chat/stream/\(id)?ticket=\(new)&lastEventId=0").status, 200)
        XCTAssertEqual(try get(a, "/api/chat/stream/\(id)?ticket=\(old)&lastEventId=0").status, 200,
                       "a's previous key still verifies the tickets it handed out")
    }

    /// Tickets come unauthenticated: ones naming made-up key ids are refused after at most
    /// one key reload a second per worker (`TicketKeyReloadPacing`), not one Redis round
    /// trip each; a real ticket is still served meanwhile.
    func testTicketsNamingUnknownKeysCostAtMostOneReloadASecond() throws {
        let relay = try startRelay(["RELAY_WORKERS": "1"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let (ticket, _) = try ticketOfNewStream(relay, token: token, id: id, maxTokens: 2)
        let parts = ticket.split(separator: ".").map(String.init)
        func calls(_ command: String) throws -> Int {
            let stats = try redis.cli("INFO", "commandstats")
            guard let line = stats.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_\(command):calls=") }) else { return 0 }
            return Int(line.dropFirst("cmdstat_\(command):calls=".count).prefix { $0.isNumber }) ?? 0
        }
        let setsBefore = try calls("set"), started = Date()
        // Clients sending their next made-up ticket as soon as the last was refused.
        let n = 16
        let statuses = LockedBox([Int]())
        let port = relay.port
        DispatchQueue.concurrentPerform(iterations: 8) { w in
            for i in stride(from: w, to: n, by: 8) {
                var forged = parts
                forged[1] = String(format: "%08x", 0x1000_0000 + i)
                let r = try? HTTPClient.request(port: port, method: "GET",
                                                path: "/api/chat/stream/\(id)?ticket=\(forged.joined(separator: "."))&lastEventId=0")
                statuses.mutate { $0.append(r?.status ?? -1) }
            }
        }
        let seconds = Date().timeIntervalSince(started)
        XCTAssertEqual(statuses.value.filter { $0 == 401 }.count, n, "every made-up key is refused")
        let reloads = try calls("set") - setsBefore
        XCTAssertGreaterThan(reloads, 0, "the made-up keys asked for reloads")
        XCTAssertLessThanOrEqual(Double(reloads), seconds + 2, "\(reloads) reloads in \(seconds) s for \(n) tickets")
        XCTAssertEqual(try get(relay, "/api/chat/stream/\(id)?ticket=\(ticket)&lastEventId=0").status, 200)
    }
}
