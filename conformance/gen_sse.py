# Writes sse.json from the WHATWG cases below (kept in Python so that byte vectors and
# control characters stay readable). Run: python3 conformance/gen_sse.py
import json, pathlib

def ev(data, type="message", id=""):
    return {"event": {"type": type, "data": data, "id": id}}

def com(text):
    return {"comment": text}

cases = []
def case(name, source, inp, items, lastEventId="", retry=None):
    c = {"name": name, "source": source}
    if isinstance(inp, bytes):
        c["inputHex"] = inp.hex()
    else:
        c["input"] = inp
    c["expect"] = {"items": items, "lastEventId": lastEventId, "retry": retry}
    cases.append(c)

S6 = "WHATWG HTML §9.2.6"
S5 = "WHATWG HTML §9.2.5"
case("spec example: four blocks", S6, ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
     [com("test stream"), ev("first event", id="1"), ev("second event"), ev(" third event")])
case("spec example: last block needs a blank line", S6, "data: first event\nid: 1\n\ndata:  third event\n", [ev("first event", id="1")], "1")
case("spec example: bare data lines", S6, "data\n\ndata\ndata\n\ndata:", [ev(""), ev("\n")])
case("spec example: space after colon optional", S6, "data:test\n\ndata: test\n\n", [ev("test"), ev("test")])
case("spec example: event types", S6, "event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n",
     [ev("73857293", type="add"), ev("2153", type="remove"), ev("113411", type="add")])
j = '{"type":"delta","content":"Clause 3 — عربي 😀"}'
case("relay frames: retry, ping, event", "docs/PROTOCOL.md §4", "retry: 1000\n\n: ping\n\nid: 7\ndata: " + j + "\n\n", [com("ping"), ev(j, id="7")], "7", 1000)
case("relay frames: a heartbeat line opens the next event's block", "docs/PROTOCOL.md §4.1",
     ": ping\nretry: 1000\ndata: " + j + "\nid: 7\n\n: ping\n: ping\ndata: " + j + "\nid: 8\n\n", [com("ping"), ev(j, id="7"), com("ping"), com("ping"), ev(j, id="8")], "8", 1000)
case("line endings LF", S5, "data: a\nid: 1\n\n", [ev("a", id="1")], "1")
case("line endings CRLF", S5, "data: a\r\nid: 1\r\n\r\n", [ev("a", id="1")], "1")
case("line endings CR", S5, "data: a\rid: 1\r\r", [ev("a", id="1")], "1")
case("line endings mixed", S5, "data: a\r\ndata: b\rdata: c\n\r\n", [ev("a\nb\nc")])
case("CR-only stream", S5, "data: a\rdata: b\r\r:c\rdata: d\r\r", [ev("a\nb"), com("c"), ev("d")])
case("LF then CR are two terminators", S5, "data: a\n\rdata: b\r\n\n", [ev("a"), ev("b")])
case("leading BOM stripped", S5, b"\xef\xbb\xbfdata: x\n\n", [ev("x")])
case("only one BOM stripped", S5, "\ufeff\ufeffdata: x\n\ndata: y\n\n", [ev("y")])
case("BOM only at stream start", S5, "data: a\n\n\ufeffdata: b\n\n:\ufeffc\n", [ev("a"), com("\ufeffc")])
case("partial BOM is content", S5, b"\xef\xbbdata: x\n\ndata: y\n\n", [ev("y")])
case("partial BOM then LF", S5, b"\xef\xbb\ndata: x\n\n", [ev("x")])
case("comment lines", S6, ":hello\n: hello\n:  two\n:\n: \n:: x\n", [com("hello"), com("hello"), com(" two"), com(""), com(""), com(": x")])
case("comment inside event", S6, "event: t\ndata: a\n: keepalive\ndata: b\n\n", [com("keepalive"), ev("a\nb", type="t")])
case("field without colon: event and data", S6, "event: x\nevent\ndata\ndata\n\n", [ev("\n")])
case("field without colon: id resets", S6, "id: 3\ndata: a\n\nid\ndata: b\n\n", [ev("a", id="3"), ev("b")])
case("only one leading space removed", S6, "data:  x\n\ndata:\tx\n\ndata:x \n\n", [ev(" x"), ev("\tx"), ev("x ")])
case("colons in value kept", S6, "data: a:b: c\n\nid: 1:2\ndata::\n\n", [ev("a:b: c"), ev(":", id="1:2")], "1:2")
case("unknown and miscased fields ignored", S6, "Data: x\nDATA: x\ndata : x\ndatas: x\nfoo: bar\nEvent: t\nID: 9\n\n", [])
case("unknown fields around data", S6, "foo: bar\ndata: x\nevents: t\n\n", [ev("x")])
case("event type resets after dispatch", S6, "event: a\ndata: 1\n\ndata: 2\n\n", [ev("1", type="a"), ev("2")])
case("last event field wins", S6, "event: a\nevent: b\ndata: 1\n\n", [ev("1", type="b")])
case("blank line without data resets type only", S6, "event: a\n\ndata: 2\n\n", [ev("2")])
case("blank lines only", S6, "\n\n\n", [])
case("multiple data lines joined with LF", S6, "data: a\ndata:\ndata: b\n\n", [ev("a\n\nb")])
case("trailing empty data line", S6, "data: a\ndata\n\n", [ev("a\n")])
case("NUL in data kept", S6, "data: a\u0000b\n\n", [ev("a\u0000b")])
case("id persists across events", S6, "id: 1\ndata: a\n\ndata: b\n\n", [ev("a", id="1"), ev("b", id="1")], "1")
case("id-only block sets last event id", S6, "id: 5\n\n", [], "5")
case("id-only block then event", S6, "id: 5\n\ndata: a\n\n", [ev("a", id="5")], "5")
case("empty id resets last event id", S6, "id: 1\ndata: a\n\nid:\ndata: b\n\n", [ev("a", id="1"), ev("b")])
case("id with space only resets", S6, "id: 1\n\nid: \n\n", [])
case("id after data in block", S6, "data: a\nid: 7\n\n", [ev("a", id="7")], "7")
case("id containing NUL ignored", S6, "id: 1\ndata: a\n\nid: 2\u00003\ndata: b\n\nid: \u0000\n\n", [ev("a", id="1"), ev("b", id="1")], "1")
case("retry digits", S6, "retry: 1000\n", [], "", 1000)
case("retry invalid keeps previous", S6, "retry: 1000\nretry: 10x\n", [], "", 1000)
case("retry invalid alone", S6, "retry: 10x\n", [], "", None)
case("retry leading zeros", S6, "retry: 007\n", [], "", 7)
case("retry zero", S6, "retry:0\n", [], "", 0)
case("retry non-digit forms ignored", S6, "retry: 5\nretry:\nretry\nretry:  6\nretry: -1\nretry: +1\nretry: 1.5\nretry: 1e3\nretry: \u0663\n", [], "", 5)
case("retry too large ignored", S6, "retry: 5\nretry: 99999999999999999999999\n", [], "", 5)
case("retry inside event", S6, "data: a\nretry: 250\ndata: b\n\n", [ev("a\nb")], "", 250)
case("retry then blank line", S6, "retry: 250\n\n", [], "", 250)
ar = "مرحبا بالعالم"
emo = "👋🏽 👨‍👩‍👧 🇸🇦"
case("UTF-8 split mid character", S5, f"event: رسالة\nid: ١٢٣\ndata: {ar}\ndata: {emo}\n\n: تعليق 😀\n",
     [ev(f"{ar}\n{emo}", type="رسالة", id="١٢٣"), com("تعليق 😀")], "١٢٣")
case("invalid UTF-8 replaced per maximal subpart", "WHATWG Encoding §4 UTF-8 decoder",
     b"data: " + bytes([0xFF, 0x61, 0xF0, 0x9F, 0x98, 0x62, 0xC0, 0x80, 0xED, 0xA0, 0x80]) + b"\n\n",
     [ev("\ufffda\ufffdb\ufffd\ufffd\ufffd\ufffd\ufffd")])
case("truncated sequence at line end", "WHATWG Encoding §4 UTF-8 decoder", b"data: a\xe2\x82\ndata: b\n\n", [ev("a\ufffd\nb")])
case("overlong NUL in id is not NUL", "WHATWG Encoding §4 UTF-8 decoder", b"id: \xc0\x80\n\n", [], "\ufffd\ufffd")
case("incomplete event at EOF discarded with its id", S5, "id: 1\ndata: x\n\nid: 2\nevent: t\ndata: y\n", [ev("x", id="1")], "1")
case("unterminated comment at EOF discarded", S5, "data: a\n\n: ping", [ev("a")])

doc = {
    "description": "SSE byte streams (WHATWG HTML §9.2.5-9.2.6) and the items a parser must produce. "
                   "Each case is fed whole, split in two at every byte boundary, and byte by byte; then the "
                   "stream ends (finish). Every plan must give exactly `items`, and the parser's last event ID "
                   "string and reconnection time must equal `lastEventId` and `retry` (null = never set).",
    "input": "`input` is UTF-8 text; `inputHex` is raw bytes in hex (invalid UTF-8, BOM fragments).",
    "items": "{\"event\":{\"type\",\"data\",\"id\"}} where id is the event's last event ID; {\"comment\":text} for a `:` line "
             "(text after the colon, one leading space removed).",
    "cases": cases,
}
out = pathlib.Path(__file__).with_name("sse.json")
# U+FEFF is written as an escape: some JSON readers drop a literal BOM character inside strings.
text = json.dumps(doc, ensure_ascii=False, indent=1).replace("\ufeff", "\\ufeff")
out.write_text(text + "\n", encoding="utf-8")
print(f"wrote {out} ({len(cases)} cases)")
