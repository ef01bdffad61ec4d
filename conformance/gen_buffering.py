# Writes buffering.json: the CLIENT_RULES.md "Buffering proxies" decision as timelines. Each
# expectation is written by hand from the rule quoted in its case; this script only formats.
import json, pathlib

def rd(at, bytes_, events, terminal=False):
    r = {"at": at, "bytes": bytes_, "events": events}
    if terminal: r["terminal"] = True
    return r
RETRY = 13   # "retry: 1000\n\n"
SSE = {"decision": "sse", "at": None, "reason": None}
def lp(at, reason): return {"decision": "longPoll", "at": at, "reason": reason}
SILENT, WHOLE = "silentAfterHeaders", "wholeBodyAtEnd"

cases = [
 {"name": "a streaming answer: retry line with the head, events in many reads",
  "rule": "events in two reads → stay on SSE",
  "sent": 0, "headers": 120, "reads": [rd(120, RETRY, 0), rd(900, 60, 1), rd(950, 60, 1), rd(1400, 200, 1, True)], "end": 1400,
  "expect": SSE},
 {"name": "head, then nothing: long-poll 20 s after the head",
  "rule": "no body byte by head + 20,000 ms → long-poll",
  "sent": 0, "headers": 150, "reads": [], "end": None, "expect": lp(20150, SILENT)},
 {"name": "head, then the whole body 40 s later: decided at the bound, not at the end",
  "rule": "no body byte by head + 20,000 ms → long-poll",
  "sent": 0, "headers": 150, "reads": [rd(40000, 9000, 120, True)], "end": 40000, "expect": lp(20150, SILENT)},
 {"name": "a byte 1 ms before the bound keeps SSE",
  "rule": "no body byte by head + 20,000 ms → long-poll",
  "sent": 0, "headers": 150, "reads": [rd(20149, 8, 0), rd(21000, 60, 1), rd(22000, 60, 1)], "end": None, "expect": SSE},
 {"name": "a byte exactly at the bound is too late",
  "rule": "no body byte by head + 20,000 ms → long-poll (the bound is inclusive)",
  "sent": 0, "headers": 150, "reads": [rd(20150, 8, 0)], "end": None, "expect": lp(20150, SILENT)},
 {"name": "a thinking model: only a ping 16 s after the head keeps SSE",
  "rule": "a ping is a byte: the relay writes one after 15 s of silence, checked each second",
  "sent": 0, "headers": 100, "reads": [rd(16100, 8, 0)], "end": None, "expect": SSE},
 {"name": "the retry line with the head, then every event in one read at the end",
  "rule": "all events in one read of >= 3 events, >= 5,000 ms after the request, ending within 1,000 ms → long-poll",
  "sent": 0, "headers": 110, "reads": [rd(110, RETRY, 0), rd(12000, 4000, 60, True)], "end": 12000, "expect": lp(12000, WHOLE)},
 {"name": "head and body held together until the end",
  "rule": "all events in one read at the end → long-poll",
  "sent": 0, "headers": 30000, "reads": [rd(30000, 16000, 200, True)], "end": 30000, "expect": lp(30000, WHOLE)},
 {"name": "a proxy cut without done: the burst and then the end 400 ms later",
  "rule": "the body ended at most 1,000 ms after the single read",
  "sent": 0, "headers": 9000, "reads": [rd(9000, 3000, 50)], "end": 9400, "expect": lp(9400, WHOLE)},
 {"name": "the end 1,001 ms after the single read keeps SSE",
  "rule": "the body ended at most 1,000 ms after the single read",
  "sent": 0, "headers": 9000, "reads": [rd(9000, 3000, 50)], "end": 10001, "expect": SSE},
 {"name": "pings between do not break the burst",
  "rule": "reads without events do not count",
  "sent": 0, "headers": 100, "reads": [rd(100, RETRY, 0), rd(15200, 8, 0), rd(18000, 2000, 30, True)], "end": 18000, "expect": lp(18000, WHOLE)},
 {"name": "a resume of a finished stream: its replay in one read right after the request keeps SSE",
  "rule": "the single read must come >= 5,000 ms after the request",
  "sent": 0, "headers": 130, "reads": [rd(130, 2500, 40, True)], "end": 130, "expect": SSE},
 {"name": "the single read exactly 5,000 ms after the request is a whole body",
  "rule": "the single read must come >= 5,000 ms after the request",
  "sent": 1000, "headers": 6000, "reads": [rd(6000, 400, 3, True)], "end": 6000, "expect": lp(6000, WHOLE)},
 {"name": "a two-event answer in one read keeps SSE",
  "rule": "the single read must carry >= 3 events",
  "sent": 0, "headers": 100, "reads": [rd(100, RETRY, 0), rd(8000, 300, 2, True)], "end": 8000, "expect": SSE},
 {"name": "events split over two reads at the end keep SSE",
  "rule": "events in two reads → stay on SSE",
  "sent": 0, "headers": 100, "reads": [rd(100, RETRY, 0), rd(8000, 300, 3), rd(8050, 2000, 30, True)], "end": 8050, "expect": SSE},
 {"name": "an answer that ends without events keeps SSE",
  "rule": "an end without either sign → stay on SSE",
  "sent": 0, "headers": 100, "reads": [rd(100, RETRY, 0)], "end": 7000, "expect": SSE},
]
doc = {
 "description": "Buffering-proxy decisions (CLIENT_RULES.md 'Buffering proxies') for one text/event-stream response. A fresh detector per case, created with the request's send time `sent`; the head arrives at `headers`; each read `{at, bytes, events, terminal?}` is a chunk of the body with the number of events it completed (`terminal`: one of them is done/error, so the body ends with it); `end` is when the body ended (null: still open). Apply in time order; before each input, and after the last, when the detector's deadline is due (deadline <= the input's time, or after the last input at all), tick at the deadline. `expect`: `decision` sse | longPoll, `at` the time of the first longPoll verdict, `reason` silentAfterHeaders | wholeBodyAtEnd.",
 "cases": cases,
}
out = pathlib.Path(__file__).with_name("buffering.json")
out.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
print(f"wrote {out} ({len(cases)} cases)")
