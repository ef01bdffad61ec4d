"""The AI SDK UI Message Stream as a client reads it (tests/agents/run.py).

`validate` checks one chunk against pydantic-ai's chunk models (pydantic_ai.ui.vercel_ai.
response_types, converted from the AI SDK's ui-message-chunks.ts; extra fields forbidden).
`Message` folds chunks into a message's parts the way the AI SDK's processUIMessageStream does
(a `*-delta` needs its part's `*-start` first on the same response), and `summary` reduces the
parts to what a user sees, so a run cut anywhere and resumed compares with an uninterrupted one.
"""
import json

from pydantic_ai.ui.vercel_ai import response_types as rt

# Every concrete chunk model, by its `type` (data-* chunks share DataChunk).
MODELS = {}
for name in dir(rt):
    cls = getattr(rt, name)
    if isinstance(cls, type) and issubclass(cls, rt.BaseChunk) and cls is not rt.BaseChunk:
        field = cls.model_fields.get("type")
        if field is not None and isinstance(field.default, str):
            MODELS[field.default] = cls


def validate(data):
    """The chunk model instance for one SSE `data` value ("[DONE]" included); raises on a chunk
    that pydantic-ai's models refuse."""
    if data == "[DONE]":
        return rt.DoneChunk()
    obj = json.loads(data)
    t = obj.get("type", "")
    cls = rt.DataChunk if t.startswith("data-") else MODELS.get(t)
    if cls is None:
        raise ValueError(f"unknown chunk type {t!r}")
    return cls.model_validate(obj)


def sse_blocks(raw):
    """(id, data) of each SSE event in a response body (WHATWG HTML §9.2.6, the fields this
    relay writes: data, id; comments skipped)."""
    out = []
    for block in raw.replace("\r\n", "\n").split("\n\n"):
        data, ident = [], None
        for line in block.split("\n"):
            if line.startswith(":") or not line:
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            elif field == "id":
                ident = value
        if data:
            out.append((ident, "\n".join(data)))
    return out


class Message:
    """One assistant message built from chunks, over one or more responses."""

    def __init__(self):
        self.parts = []
        self.open = {}  # text/reasoning part id -> part, for this response
        self.started = set()
        self.tools = {}
        self.finished = None

    def new_response(self):
        self.open = {}
        self.started = set()  # tool calls whose tool-input-start came on this response

    def apply(self, chunk):
        t = chunk.type
        if t in ("text-start", "reasoning-start"):
            kind = t.split("-")[0]
            if chunk.id in self.open:
                raise AssertionError(f"{t} {chunk.id} twice")
            part = {"type": kind, "text": ""}
            self.open[chunk.id] = part
            self.parts.append(part)
        elif t in ("text-delta", "reasoning-delta"):
            if chunk.id not in self.open:
                raise AssertionError(f"{t} for {chunk.id} without its start on this response")
            self.open[chunk.id]["text"] += chunk.delta
        elif t in ("text-end", "reasoning-end"):
            if self.open.pop(chunk.id, None) is None:
                raise AssertionError(f"{t} for {chunk.id} not open")
        elif t == "tool-input-start":
            if chunk.tool_call_id in self.tools:
                raise AssertionError(f"tool call {chunk.tool_call_id} started twice")
            part = {"type": "tool", "id": chunk.tool_call_id, "name": chunk.tool_name, "input_text": "", "input": None,
                    "output": None}
            self.tools[chunk.tool_call_id] = part
            self.parts.append(part)
            self.started.add(chunk.tool_call_id)
        elif t == "tool-input-delta":
            # As the AI SDK's useChat: a call's streamed input is kept per response, and a delta
            # for a call that did not start on this response fails the chat.
            if chunk.tool_call_id not in self.started:
                raise AssertionError(f"tool-input-delta for {chunk.tool_call_id} without its start on this response")
            self.tools[chunk.tool_call_id]["input_text"] += chunk.input_text_delta
        elif t == "tool-input-available":
            self.tools[chunk.tool_call_id]["input"] = chunk.input
        elif t == "tool-output-available":
            self.tools[chunk.tool_call_id]["output"] = chunk.output
        elif t == "source-url":
            self.parts.append({"type": "source", "id": chunk.source_id, "url": chunk.url, "title": chunk.title})
        elif t.startswith("data-"):
            self.parts.append({"type": t, "id": chunk.id, "data": chunk.data})
        elif t == "finish":
            if self.finished is not None:
                raise AssertionError("finish twice")
            self.finished = chunk.finish_reason
        elif t == "error":
            raise AssertionError(f"error chunk: {chunk.error_text}")

    def summary(self):
        """The parts with adjacent text (or reasoning) parts joined: a resume inside a part
        continues it in a new part of the same kind, which a user reads as one. A tool part is
        its input and output (what useChat keeps); the streamed input text of a whole call must
        parse to its input, and one cut by a resume inside the arguments stops where the cut was."""
        out = []
        for p in self.parts:
            if out and p["type"] in ("text", "reasoning") and out[-1]["type"] == p["type"]:
                out[-1] = dict(out[-1], text=out[-1]["text"] + p["text"])
            elif p["type"] == "tool":
                whole = p["input"] is not None and json.dumps(p["input"], sort_keys=True)
                streamed = p["input_text"]
                try:
                    parsed = json.dumps(json.loads(streamed), sort_keys=True) if streamed else None
                except ValueError:
                    parsed = None
                if parsed is not None and whole and parsed != whole:
                    raise AssertionError(f"tool call {p['id']}: streamed input {streamed!r} is not its input {p['input']!r}")
                out.append({k: v for k, v in p.items() if k != "input_text"})
            else:
                out.append(dict(p))
        return out, self.finished
