# Writes reconnect.json: the CLIENT_RULES.md reconnect decisions as step tables. Each step is
# written by hand from the rule text quoted in its case's "rule"; this script only formats.
import json, pathlib

def delta(at, seq, text="x"): return {"at": at, "input": "event", "seq": seq, "event": {"type": "delta", "content": text}, "expect": NONE}
def done(at, seq, reason="stop"): return {"at": at, "input": "event", "seq": seq, "event": {"type": "done", "finish_reason": reason, "usage": {"prompt_tokens": 5, "completion_tokens": seq, "total_tokens": 5 + seq}}}
NONE = {"action": "none"}
def start(at=0): return {"at": at, "input": "start", "expect": {"action": "sendRequest"}}
def ok(at): return {"at": at, "input": "response", "status": 200, "contentType": "text/event-stream", "expect": NONE}
def resp(at, status, code, expect, **kw): return {"at": at, "input": "response", "status": status, "contentType": "application/json", "code": code, **kw, "expect": expect}
def drop(at, expect): return {"at": at, "input": "drop", "expect": expect}
def tick(at, expect=NONE): return {"at": at, "input": "tick", "expect": expect}
def wait(until): return {"action": "wait", "until": until}
def reconnect(last, refresh=None):
    a = {"action": "reconnect", "lastEventId": last}
    if refresh is not None: a["refreshToken"] = refresh
    return a
def finish(kind, **kw): return {"action": "finish", "completion": {"kind": kind, **kw}}
def after_one_drop():
    """Start, one event (seq 1), a drop at 30 ms and the reconnect it leads to at 1030 ms."""
    return [start(), ok(10), delta(20, 1), drop(30, wait(1030)), tick(1030, reconnect(1))]

cases = [
 {"name": "drop after events: wait 1 s, reconnect with Last-Event-ID, finish on done",
  "rule": "Drop → wait backoff (1000 ms) + jitter, reconnect with Last-Event-ID",
  "steps": [start(), ok(100), delta(200, 1), delta(300, 2), drop(400, wait(1400)), tick(1000), tick(1400, reconnect(2)),
            ok(1500), delta(1600, 3), {**done(1700, 4), "expect": finish("finished", finishReason="stop")}]},
 {"name": "drop before any event: re-send the POST (lastEventId 0)",
  "rule": "before any event, re-send the POST with the same X-Request-Id",
  "steps": [start(), drop(50, wait(1050)), tick(1050, reconnect(0))]},
 {"name": "three reconnections in a row, then needsResume; Resume re-sends the request",
  "rule": "At most 3 reconnections in a row without an event in between; the next failure → needsResume",
  "steps": [start(), ok(10), delta(20, 1), drop(30, wait(1030)), tick(1030, reconnect(1)), drop(1100, wait(2100)),
            tick(2100, reconnect(1)), drop(2200, wait(3200)), tick(3200, reconnect(1)), drop(3300, finish("needsResume")),
            tick(3400), {"at": 4000, "input": "resume", "expect": {"action": "sendRequest"}}]},
 {"name": "an event between failures resets the count",
  "rule": "3 reconnections in a row without an event in between",
  "steps": [start(), ok(10), delta(20, 1), drop(30, wait(1030)), tick(1030, reconnect(1)), drop(1100, wait(2100)),
            tick(2100, reconnect(1)), ok(2150), delta(2200, 2), drop(2300, wait(3300)), tick(3300, reconnect(2)),
            drop(3400, wait(4400)), tick(4400, reconnect(2)), drop(4500, wait(5500)), tick(5500, reconnect(2)),
            drop(5600, finish("needsResume"))]},
 {"name": "slow link: 3 s backoff when the measured RTT is over 500 ms",
  "rule": "backoff = 3000 ms when the measured RTT > 500 ms",
  "steps": [{"at": 0, "input": "rtt", "rttMs": 700, "expect": NONE}, start(), ok(700), delta(800, 1), drop(900, wait(3900)),
            tick(3900, reconnect(1))]},
 {"name": "RTT of exactly 500 ms keeps the 1 s backoff",
  "rule": "backoff = 3000 ms when the measured RTT > 500 ms",
  "steps": [{"at": 0, "input": "rtt", "rttMs": 500, "expect": NONE}, start(), ok(500), delta(600, 1), drop(700, wait(1700))]},
 {"name": "jitter comes from the injected random source",
  "rule": "jitter = uniform random in [0, 250] ms from an injectable random source: floor(r × 251) for r in [0, 1)",
  "random": 0.5,
  "steps": [start(), ok(10), delta(20, 1), drop(30, wait(1155)), tick(1154), tick(1155, reconnect(1))]},
 {"name": "jitter at the top of the range",
  "rule": "jitter = floor(r × 251), at most 250 ms",
  "random": 0.999,
  "steps": [start(), ok(10), delta(20, 1), drop(30, wait(1280))]},
 {"name": "idle rule: a drop more than 5 min after the last event ends in needsResume",
  "rule": "no resume once more than 300,000 ms have passed since the last event",
  "steps": [start(), ok(10), delta(20, 1), {"at": 30, "input": "background", "expect": NONE}, drop(300021, finish("needsResume"))]},
 {"name": "background: a drop waits; foreground within 5 min reconnects at once",
  "rule": "a drop while in the background waits; on foreground within 5 min of the last event, reconnect at once from lastEventId",
  "steps": [start(), ok(10), delta(20, 1), delta(30, 2), {"at": 40, "input": "background", "expect": NONE}, drop(1000, NONE),
            tick(5000), {"at": 120000, "input": "foreground", "expect": reconnect(2)}]},
 {"name": "background: foreground after 5 idle minutes → needsResume",
  "rule": "idle rule",
  "steps": [start(), ok(10), delta(20, 1), {"at": 40, "input": "background", "expect": NONE}, drop(1000, NONE),
            {"at": 300021, "input": "foreground", "expect": finish("needsResume")}]},
 {"name": "hard timeout: 60 s connected in the foreground without an event",
  "rule": "60 s without an event and without done → timedOut",
  "steps": [start(), ok(10), delta(20, 1), tick(60019), tick(60020, finish("timedOut"))]},
 {"name": "hard timeout before the first event counts from the request",
  "rule": "60 s without an event, counting time connecting",
  "steps": [start(), tick(59999), tick(60000, finish("timedOut"))]},
 {"name": "hard timeout does not count time in the background",
  "rule": "counting only time spent in the foreground while connected or connecting",
  "steps": [start(), ok(10), delta(20, 1), {"at": 1000, "input": "background", "expect": NONE},
            {"at": 101000, "input": "foreground", "expect": NONE}, tick(160019), tick(160020, finish("timedOut"))]},
 {"name": "hard timeout does not count the reconnect wait",
  "rule": "counting only time spent in the foreground while connected or connecting",
  "steps": [start(), ok(10), delta(20, 1), drop(30000, wait(31000)), tick(31000, reconnect(1)), ok(31100),
            tick(61019), tick(61020, finish("timedOut"))]},
 {"name": "503 with Retry-After on a reconnect is a retryable drop",
  "rule": "503 with Retry-After: R → wait max(R × 1000, backoff) + jitter, rotate base URL",
  "steps": after_one_drop() + [resp(1100, 503, "not_ready", wait(6100), retryAfter=5), tick(6100, reconnect(1))]},
 {"name": "503 on the first request without Retry-After waits the backoff",
  "rule": "503 (any attempt) with or without Retry-After",
  "steps": [start(), resp(10, 503, "not_ready", wait(1010)), tick(1010, reconnect(0))]},
 {"name": "503 Retry-After shorter than the backoff waits the backoff",
  "rule": "wait max(R × 1000, backoff) + jitter",
  "steps": [{"at": 0, "input": "rtt", "rttMs": 900, "expect": NONE}, start(), resp(10, 503, "not_ready", wait(3010), retryAfter=1)]},
 {"name": "503 counts toward the 3",
  "rule": "503 … counts toward the 3",
  "steps": [start(), resp(10, 503, "not_ready", wait(1010)), tick(1010, reconnect(0)), resp(1020, 503, "not_ready", wait(2020)),
            tick(2020, reconnect(0)), resp(2030, 503, "not_ready", wait(3030)), tick(3030, reconnect(0)),
            resp(3040, 503, "not_ready", finish("needsResume"))]},
 {"name": "token_expired error event: fresh token, resume from lastEventId",
  "rule": "token_expired (as an error event): ask the token provider for a fresh token, then reconnect from lastEventId (no backoff beyond jitter)",
  "steps": [start(), ok(10), delta(20, 1), {"at": 30, "input": "event", "seq": 1, "event": {"type": "error", "status": 401, "code": "token_expired", "message": "token expired"}, "expect": wait(30)},
            tick(30, reconnect(1, refresh=True)), ok(40), delta(50, 2)]},
 {"name": "401 token_expired on a reconnect: refresh once; a second 401 fails",
  "rule": "the provider is asked at most once per expiry: if the reconnect made with the fresh token is again refused with 401, the answer fails with that 401",
  "steps": [start(), ok(10), delta(20, 1), drop(30, wait(1030)), tick(1030, reconnect(1, refresh=False)),
            resp(1040, 401, "token_expired", wait(1040)), tick(1040, reconnect(1, refresh=True)),
            resp(1050, 401, "token_expired", finish("failed", status=401, code="token_expired"))]},
 {"name": "401 unauthorized on a reconnect also refreshes the token",
  "rule": "a 401 response to a reconnect whose error code is token_expired or unauthorized",
  "steps": after_one_drop() + [resp(1040, 401, "unauthorized", wait(1040)), tick(1040, reconnect(1, refresh=True)), ok(1050), delta(1060, 2)]},
 {"name": "session_revoked error event is terminal",
  "rule": "session_revoked (event or response code) is terminal: failed(401)",
  "steps": [start(), ok(10), delta(20, 1), {"at": 30, "input": "event", "seq": 1, "event": {"type": "error", "status": 401, "code": "session_revoked", "message": "revoked"}, "expect": finish("failed", status=401, code="session_revoked")}]},
 {"name": "session_revoked response to a reconnect is terminal",
  "rule": "session_revoked (event or response code) is terminal: failed(401)",
  "steps": after_one_drop() + [resp(1040, 401, "session_revoked", finish("failed", status=401, code="session_revoked"))]},
 {"name": "429 is terminal",
  "rule": "Other non-200 responses (400, 404, 409, 413, 429 …) are terminal failures",
  "steps": [start(), resp(10, 429, "token_budget_exhausted", finish("failed", status=429, code="token_budget_exhausted"))]},
 {"name": "404 on a reconnect is terminal",
  "rule": "Other non-200 responses are terminal failures",
  "steps": after_one_drop() + [resp(1040, 404, "not_found", finish("failed", status=404, code="not_found"))]},
 {"name": "200 that is not text/event-stream fails",
  "rule": "a content type other than text/event-stream fails at once",
  "steps": [start(), {"at": 10, "input": "response", "status": 200, "contentType": "application/json", "expect": finish("failed", status=200, code="bad_content_type")}]},
 {"name": "text/event-stream with parameters and another case is accepted",
  "rule": "RFC 9110 §8.3.1: media type case-insensitive, parameters ignored",
  "steps": [start(), {"at": 10, "input": "response", "status": 200, "contentType": "Text/Event-Stream; charset=utf-8", "expect": NONE}, delta(20, 1)]},
 {"name": "error event is terminal",
  "rule": "done and error events are terminal",
  "steps": [start(), ok(10), delta(20, 1), {"at": 30, "input": "event", "seq": 2, "event": {"type": "error", "status": 502, "code": "upstream_error", "message": "x"}, "expect": finish("failed", status=502, code="upstream_error")}]},
 {"name": "done with finish_reason cancelled is a stop",
  "rule": "done(cancelled) → stopped",
  "steps": [start(), ok(10), delta(20, 1), {**done(30, 2, "cancelled"), "expect": finish("stopped")}]},
 {"name": "Stop: stopped at once, a later drop is ignored",
  "rule": "Stop: the UI gets stopped at once; the DELETE goes out in the background",
  "steps": [start(), ok(10), delta(20, 1), {"at": 30, "input": "stop", "expect": {"action": "stop"}}, drop(40, NONE), tick(2000)]},
 {"name": "Stop while waiting to reconnect",
  "rule": "Stop",
  "steps": [start(), ok(10), delta(20, 1), drop(30, wait(1030)), {"at": 500, "input": "stop", "expect": {"action": "stop"}}, tick(1030)]},
 {"name": "Stop before the start",
  "rule": "Stop",
  "steps": [{"at": 0, "input": "stop", "expect": finish("stopped")}]},
]
doc = {
 "description": "Reconnect decision tables (CLIENT_RULES.md 'Reconnect decisions'). A fresh policy per case with backoff 1000 ms and a random source that always returns `random` (default 0, so jitter = 0). Apply the steps in order at time `at` (ms, one clock) and compare the returned action with `expect`.",
 "inputs": {
  "start": "start the answer",
  "rtt": "the measured round-trip time `rttMs` (backoff becomes 3000 ms when > 500)",
  "response": "response headers: `status`, `contentType`; for non-200 the error body's `code` and, optionally, `retryAfter` seconds",
  "event": "an SSE event with id `seq` and JSON `event` ({type: delta|done|error, …})",
  "drop": "network error, refused/reset, or the body ended without done/error",
  "tick": "time passed (timers)",
  "background": "the app went to the background", "foreground": "the app came back",
  "stop": "the user pressed Stop", "resume": "the user pressed Resume (re-send the whole request)"
 },
 "actions": {
  "none": "nothing", "sendRequest": "POST /api/chat/stream",
  "wait": "wait until `until` ms, then tick",
  "reconnect": "connect again to the next base URL with Last-Event-ID `lastEventId` (0 = re-send the POST with the same X-Request-Id); `refreshToken`, when present in the vector, says whether the token provider must be asked for a fresh token",
  "stop": "cancel the connection, DELETE /api/chat/stream/{id} in the background, completion stopped",
  "finish": "the answer ended with `completion` {kind: finished(finishReason) | stopped | timedOut | needsResume | failed(status, code)}"
 },
 "cases": cases,
}
out = pathlib.Path(__file__).with_name("reconnect.json")
out.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
print(f"wrote {out} ({len(cases)} cases)")
