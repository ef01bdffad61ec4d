# Writes parts.json: typed answer parts (docs/PROTOCOL.md §5.5) through a kit's whole stream —
# SSE parsing, drops, resumes with Last-Event-ID, the seq dedupe, the text and the parts the app
# gets. The expectations are written by hand from the protocol; this script only numbers the
# events, writes them as the relay frames them (`data:` line, then `id:`, then a blank line) and
# cuts the bodies where a case says.
import json, pathlib

def j(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))

def frame(seq, event):
    """One event as the relay writes it (PROTOCOL.md §4.1: `id:` last). `event` is an object, or
    a string written as the data line as it is (text that is not JSON)."""
    return f"data: {event if isinstance(event, str) else j(event)}\nid: {seq}\n\n"

def body(events, first, last):
    """The frames of events `first`…`last` (seqs, 1-based, inclusive)."""
    return "".join(frame(s, events[s - 1]) for s in range(first, last + 1))

def connections(events, cuts):
    """The connections of a run that drops after each cut. A cut is `(k, tail)`: the connection
    delivers events up to seq k whole, then the text `tail` (a cut frame: never dispatched), and
    ends without a terminal event; the next resumes with Last-Event-ID k. `(k, tail, replay)`: the
    next connection starts at seq `replay` ≤ k (events the kit already has, which it skips)."""
    out, start, last = [], 1, 0
    for cut in cuts:
        k, tail = cut[0], cut[1]
        out.append({"lastEventId": last, "body": body(events, start, k) + tail, "end": "drop"})
        last = k
        start = cut[2] if len(cut) > 2 else k + 1
    out.append({"lastEventId": last, "body": body(events, start, len(events)), "end": "close"})
    return out

def done(reason, completion):
    return {"type": "done", "finish_reason": reason, "usage": {"prompt_tokens": 20, "completion_tokens": completion, "total_tokens": 20 + completion}}

def r(content): return {"type": "reasoning", "content": content}
def d(content): return {"type": "delta", "content": content}
def start(i, name): return {"type": "tool_call_start", "id": i, "name": name}
def args(i, a): return {"type": "tool_call_delta", "id": i, "arguments": a}
def end(i, name, value): return {"type": "tool_call_end", "id": i, "name": name, "input": value}
def result(i, output): return {"type": "tool_result", "id": i, "output": output}
def call(i, name, arguments, value=None, ended=False, **output):
    c = {"id": i, "name": name, "arguments": arguments, "ended": ended}
    if ended: c["input"] = value
    c.update(output)   # output=…: an agent backend's tool_result arrived
    return c

LTR, RTL = "ltr", "rtl"

# A: reasoning, a line of text, then one tool call whose arguments come in three pieces.
A = [r("The user wants "), r("the weather in Riyadh."), d("Let me check the weather."), start("call_1", "get_weather"),
     args("call_1", '{"ci'), args("call_1", 'ty":"Riy'), args("call_1", 'adh"}'),
     end("call_1", "get_weather", {"city": "Riyadh"}), done("tool_calls", 6)]
A_PARTS = [A[0], A[1], A[3], A[4], A[5], A[6], A[7]]
A_CALL_UPDATES = [call("call_1", "get_weather", ""), call("call_1", "get_weather", '{"ci'),
                  call("call_1", "get_weather", '{"city":"Riy'), call("call_1", "get_weather", '{"city":"Riyadh"}'),
                  call("call_1", "get_weather", '{"city":"Riyadh"}', {"city": "Riyadh"}, ended=True)]
A_EXPECT = {"text": "Let me check the weather.", "parts": A_PARTS, "toolCallUpdates": A_CALL_UPDATES,
            "toolCalls": [A_CALL_UPDATES[-1]], "reasoning": "The user wants the weather in Riyadh.", "tokens": 5,
            "tokensReceived": 1, "direction": LTR, "completion": {"kind": "finished", "finishReason": "tool_calls"}}

def a_case(name, rule, cuts):
    return {"name": name, "rule": rule, "connections": connections(A, cuts), "expect": A_EXPECT}

# B: redacted reasoning, text with sources between its pieces, app data (with and without id).
B = [{"type": "reasoning_redacted", "data": "RW5jcnlwdGVkIHRoaW5raW5n"}, d("Riyadh is "),
     {"type": "source", "id": "s1", "url": "https://example.com/riyadh", "title": "Riyadh climate"}, d("hot in summer."),
     {"type": "source", "id": "s2", "url": "https://example.org/weather"},
     {"type": "data", "name": "weather", "id": "w1", "data": {"temp_c": 41, "sky": "clear", "alerts": []}},
     {"type": "data", "name": "chart", "data": [1, 2.5, None, True, "x"]}, done("stop", 2)]
B_EXPECT = {"text": "Riyadh is hot in summer.", "parts": [B[0], B[2], B[4], B[5], B[6]], "toolCallUpdates": [], "toolCalls": [],
            "reasoning": "", "tokens": 0, "tokensReceived": 2, "direction": LTR,
            "completion": {"kind": "finished", "finishReason": "stop"}}

# C: two tool calls interleaved, then one without arguments.
C = [start("call_a", "search"), start("call_b", "get_time"), args("call_a", '{"q":"ri'), args("call_b", '{"tz":"Asia/Riyadh"}'),
     args("call_a", 'yadh"}'), end("call_b", "get_time", {"tz": "Asia/Riyadh"}), end("call_a", "search", {"q": "riyadh"}),
     start("call_c", "list_tools"), end("call_c", "list_tools", {}), done("tool_calls", 3)]
C_CALLS = [call("call_a", "search", '{"q":"riyadh"}', {"q": "riyadh"}, ended=True),
           call("call_b", "get_time", '{"tz":"Asia/Riyadh"}', {"tz": "Asia/Riyadh"}, ended=True),
           call("call_c", "list_tools", "", {}, ended=True)]
C_EXPECT = {"text": "", "parts": C[:9], "toolCallUpdates": [
                call("call_a", "search", ""), call("call_b", "get_time", ""), call("call_a", "search", '{"q":"ri'),
                call("call_b", "get_time", '{"tz":"Asia/Riyadh"}'), call("call_a", "search", '{"q":"riyadh"}'),
                C_CALLS[1], C_CALLS[0], call("call_c", "list_tools", ""), C_CALLS[2]],
            "toolCalls": C_CALLS, "reasoning": "", "tokens": 3, "tokensReceived": 0, "direction": LTR,
            "completion": {"kind": "finished", "finishReason": "tool_calls"}}

# G: an agent backend ran the tool itself: its tool_result gives the ended call an output. A result
# before the end, a second one, one for a call never started, and one without output change no call.
WEATHER = {"temp_c": 41, "sky": "clear"}
G = [r("Checking the weather."), start("call_1", "get_weather"), args("call_1", '{"city":"Riyadh"}'), result("call_1", "too early"),
     end("call_1", "get_weather", {"city": "Riyadh"}), {"type": "tool_result", "id": "call_1"}, result("call_1", WEATHER),
     result("call_9", None), result("call_1", "again"), d("It is 41 °C and clear in Riyadh."), done("stop", 3)]
G_CALL = call("call_1", "get_weather", '{"city":"Riyadh"}', {"city": "Riyadh"}, ended=True)
G_EXPECT = {"text": "It is 41 °C and clear in Riyadh.", "parts": [G[0], G[1], G[2], G[3], G[4], G[6], G[7], G[8]],
            "toolCallUpdates": [call("call_1", "get_weather", ""), call("call_1", "get_weather", '{"city":"Riyadh"}'), G_CALL,
                                {**G_CALL, "output": WEATHER}],
            "toolCalls": [{**G_CALL, "output": WEATHER}], "reasoning": "Checking the weather.", "tokens": 2, "tokensReceived": 1,
            "direction": LTR, "completion": {"kind": "finished", "finishReason": "stop"}}

# D, E: the direction is decided from the text alone, whatever language the reasoning is in.
AR_REASONING = "يسأل المستخدم عن حالة الطقس في مدينة الرياض اليوم بالتفصيل"
EN_REASONING = "The user asks about today's weather in Riyadh in detail, in Arabic."
EN_TEXT = "The weather in Riyadh is hot and sunny today, with clear skies."
AR_TEXT = "الطقس في الرياض اليوم حار ومشمس مع سماء صافية."
D = [r(AR_REASONING), d(EN_TEXT), done("stop", 2)]
E = [r(EN_REASONING), d(AR_TEXT), done("stop", 2)]

# F: what is ignored. Unknown types, malformed parts and a data line that is not JSON are skipped
# (their ids still count: the resume after them starts after them); parts of a call never started
# or already ended are listed but change no call; fields a kit does not know are dropped; a null
# title or data id counts as absent.
F = [d("Hello, "), {"type": "citation_v9", "ref": "x"}, {"type": "tool_call_start", "id": "", "name": "f"},
     {"type": "reasoning", "content": 7}, {"type": "data", "name": "bad name!", "data": 1},
     {"type": "source", "id": "s1", "url": "https://example.com", "title": 5}, '{"type":"reasoning","content":',
     {"type": "tool_call_end", "id": "call_x", "name": "f"}, {"type": "data", "name": "x", "id": 3, "data": 1},
     args("call_zz", "{}"), end("call_zz", "ghost", {}), d("world."),
     {"type": "source", "id": "s1", "url": "https://example.com", "title": None, "favicon": "https://example.com/f.ico"},
     {"type": "data", "name": "x", "id": None, "data": None}, start("call_1", "f"), end("call_1", "f", None),
     args("call_1", "late"), start("call_1", "g"), done("stop", 3)]
F_PARTS = [F[9], F[10], {"type": "source", "id": "s1", "url": "https://example.com"}, {"type": "data", "name": "x", "data": None},
           F[14], F[15], F[16], F[17]]
F_EXPECT = {"text": "Hello, world.", "parts": F_PARTS,
            "toolCallUpdates": [call("call_1", "f", ""), call("call_1", "f", "", None, ended=True)],
            "toolCalls": [call("call_1", "f", "", None, ended=True)], "reasoning": "", "tokens": 2, "tokensReceived": 2,
            "direction": LTR, "completion": {"kind": "finished", "finishReason": "stop"}}

cases = [
    a_case("uninterrupted: reasoning, text and a tool call in one connection",
           "each part is handed over once, in seq order; the text is the deltas only; the call's arguments are assembled and its input handed over whole at tool_call_end",
           []),
    a_case("drop between two reasoning pieces", "a resume from any Last-Event-ID gets every later event once (PROTOCOL.md §5.5)",
           [(1, "")]),
    a_case("drop right after tool_call_start", "the call is open with no arguments; the resume continues it", [(4, "")]),
    a_case("drop between two tool_call_delta events", "the resume starts at the next argument piece; the arguments are assembled once",
           [(5, "")]),
    a_case("drop inside a tool_call_delta frame: the cut piece is taken once, from the resume",
           "an event cut before its blank line is discarded with its id (WHATWG HTML §9.2.6); Last-Event-ID is the previous event's",
           [(5, body(A, 6, 6)[:30])]),
    a_case("drop after a part's id line, before its blank line: not dispatched, resumed from the id before",
           "the id of an event cut before its blank line is not the last event ID", [(5, body(A, 6, 6)[:-1])]),
    a_case("a resume that sends events the kit already has: they are skipped",
           "events whose seq is at most the last received are skipped (the relay sends none; a kit does not rely on it)",
           [(6, "", 4)]),
    a_case("a drop after every other part", "each resume continues from the last event received, inside the reasoning and inside the call",
           [(1, ""), (4, ""), (5, ""), (6, body(A, 7, 7)[:12]), (7, "")]),
    a_case("drop before any event: the POST is sent again and the parts come once",
           "before any event a reconnection re-sends the POST with the same X-Request-Id (CLIENT_RULES.md)",
           [(0, body(A, 1, 1)[:20])]),
    {"name": "sources and data between text pieces; redacted reasoning passed through, not reasoning, not a token",
     "rule": "source and data parts are handed over with exactly their fields (title and data id omitted when absent); reasoning_redacted is opaque",
     "connections": connections(B, [(3, ""), (5, "")]), "expect": B_EXPECT},
    {"name": "interleaved tool calls, one without arguments, dropped inside both",
     "rule": "calls may interleave; each is assembled by its id, listed in the order they started; input {} when no arguments came",
     "connections": connections(C, [(3, ""), (5, body(C, 6, 6)[:25])]), "expect": C_EXPECT},
    {"name": "an agent's tool_result, dropped between the call's end and its result: the output joins the ended call once",
     "rule": "tool_result (PROTOCOL.md §5.5) gives its ended call an output; too early, twice, for no call or without output it changes none",
     "connections": connections(G, [(5, ""), (7, body(G, 8, 8)[:15])]), "expect": G_EXPECT},
    {"name": "Arabic reasoning before English text: left-to-right",
     "rule": "the direction sample is the answer text only (CLIENT_RULES.md); reasoning is not sampled",
     "connections": connections(D, [(1, "")]),
     "expect": {"text": EN_TEXT, "parts": [D[0]], "toolCallUpdates": [], "toolCalls": [], "reasoning": AR_REASONING, "tokens": 1,
                "tokensReceived": 1, "direction": LTR, "completion": {"kind": "finished", "finishReason": "stop"}}},
    {"name": "English reasoning before Arabic text: right-to-left",
     "rule": "the direction sample is the answer text only (CLIENT_RULES.md); reasoning is not sampled",
     "connections": connections(E, []),
     "expect": {"text": AR_TEXT, "parts": [E[0]], "toolCallUpdates": [], "toolCalls": [], "reasoning": EN_REASONING, "tokens": 1,
                "tokensReceived": 1, "direction": RTL, "completion": {"kind": "finished", "finishReason": "stop"}}},
    {"name": "unknown types, malformed parts and parts of calls not open are ignored; the text and the ids are unchanged",
     "rule": "a client skips event types it does not know (PROTOCOL.md §5.5 'Old clients'); an event it cannot read is ignored but its id counts",
     "connections": connections(F, [(7, ""), (11, "")]), "expect": F_EXPECT},
]

doc = {
    "description": "Typed answer parts through a kit's stream (docs/PROTOCOL.md §5.5; formats in conformance/README.md). A chat is "
                   "started against a scripted relay whose connections answer in turn: each is a 200 text/event-stream response "
                   "with `body` (SSE text) that then ends (`drop`: without a terminal event, so the kit resumes; `close`: after "
                   "the done). `lastEventId` is the Last-Event-ID the kit must send on that connection (0: the POST, sent again "
                   "before any event). The random source returns 0. `expect`: the answer's final `text`; `parts`, every part "
                   "update's part in order (exactly these fields); `toolCallUpdates`, the non-null `toolCall` of those updates in "
                   "order ({id, name, arguments, ended, input once ended, output once a tool_result gave one}); `toolCalls`, "
                   "`reasoning` and `tokens` of the last part update (none: [], '', 0); `tokensReceived` of the telemetry record "
                   "(delta events); `direction` of the first render update with a layout; the `completion`.",
    "cases": cases,
}
out = pathlib.Path(__file__).with_name("parts.json")
out.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
print(f"wrote {out} ({len(cases)} cases)")
