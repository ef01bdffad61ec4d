"""Agent answers suite: the relay's AI SDK UI Message Stream dialect (docs/PROTOCOL.md §4.6),
checked with a third-party implementation of the protocol's schema (docs/AGENTS.md).

Starts, all on 127.0.0.1 and all stopped at the end: a redis-server (Unix socket in a temp
dir) and relays A and B sharing it (`stream-relay serve`, simulated upstream, a retained window
of 40 events so that most resumes are lossless catch-ups, and a 4 s buffer TTL so that the
last round reads retained answers).

* Every chunk the relay writes validates against pydantic-ai's chunk models (extra fields
  forbidden), and the response has `x-vercel-ai-ui-message-stream: v1`.
* The built-in agent answer (`simulated-tools`: reasoning, two tool calls with streamed
  arguments and their results, a source, text) is read whole from A with `format=ai-sdk`.
* Then, for every event id k, a client that got the answer's chunks through the first and
  through the last chunk with id k resumes on B with `Last-Event-ID: k` and `format=ai-sdk`:
  the message it then holds has exactly the parts of the uninterrupted run, in order, none
  twice (a resume inside a text or reasoning part continues it in a part of the same kind).
* A resume `GET` with `format=ai-sdk` and no `Last-Event-ID` (the AI SDK's own reconnect
  request) gets the whole answer; after the stream's keys expired, the retained answer is
  read the same way.
* Your own backend: pydantic-ai behind its Vercel AI adapter (tests/agents/backend.py,
  FunctionModel: thinking, two tool calls it runs, text naming the caller) is the upstream of
  relays C and D (`RELAY_UPSTREAM=ai-sdk`). The backend trusts only the identity the relay
  signs; the answer reaches the client as the relay's parts with the verified caller in its
  text, validates in the AI SDK dialect and resumes from every cut on the other relay; a
  relay with another identity secret gets the backend's 401 as `upstream_error`.

Run:  python3 tests/agents/run.py   (after `swift build`; uses .venv/agents, made by
      scripts/install-deps.sh)
Prints one line per check and ends with "agents: N passed, N failed"; exit 1 on a failure.
"""
import http.client
import json
import os
import pathlib
import secrets
import subprocess
import sys
import tempfile
import time
import uuid

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VENV_PY = ROOT / ".venv/agents/bin/python3"
if pathlib.Path(sys.prefix).resolve() != VENV_PY.parents[1].resolve() and VENV_PY.exists() and not os.environ.get("AGENTS_NO_VENV"):
    os.execv(str(VENV_PY), [str(VENV_PY), __file__] + sys.argv[1:])
sys.path.insert(0, str(ROOT / "tests/interop"))
from processes import die_with_parent, free_port, http_status, minimal_env, wait_until  # noqa: E402
from ui_chunks import Message, sse_blocks, validate  # noqa: E402

BIN = pathlib.Path(os.environ.get("RELAY_BIN") or ROOT / ".build/debug/stream-relay")
RESULTS = []


def check(name, fn):
    try:
        fn()
        RESULTS.append((name, True))
        print(f"ok    {name}", flush=True)
    except Exception as e:  # noqa: BLE001 - every failure is reported, then the next check runs
        RESULTS.append((name, False))
        print(f"FAIL  {name}: {e}", flush=True)


class Stack:
    """redis-server and relays A, B; all children of this process, stopped by close()."""

    def __init__(self, tmp, env, names=("A", "B")):
        self.tmp, self.procs = tmp, []
        sock = tmp / "redis.sock"
        self.start(["redis-server", "--port", "0", "--unixsocket", str(sock), "--save", "", "--appendonly", "no",
                    "--dir", str(tmp)], "redis.log")
        wait_until("redis-server", lambda: subprocess.run(["redis-cli", "-s", str(sock), "ping"],
                                                          capture_output=True).stdout.strip() == b"PONG", 10)
        self.redis = ["redis-cli", "-s", str(sock)]
        self.env = minimal_env(REDIS_URL=f"unix://{sock}", RELAY_JWT_SECRET=secrets.token_hex(24), RELAY_WORKERS="1", **env)
        self.ports = {}
        for name in names:
            self.add_relay(name)
        for name in names:
            self.wait_ready(name)

    def add_relay(self, name, **env):
        self.ports[name] = free_port()
        self.start([str(BIN), "serve"], f"relay-{name}.log",
                   dict(self.env, RELAY_LISTEN=f"127.0.0.1:{self.ports[name]}", RELAY_INSTANCE=f"relay-{name}", **env))

    def wait_ready(self, name):
        wait_until(f"relay {name} ready", lambda: http_status(self.ports[name], "/readyz") == 200, 30)

    def start(self, args, log, env=None):
        with open(self.tmp / log, "ab") as f:
            p = subprocess.Popen(args, env=env or minimal_env(), stdout=f, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
        self.procs.append(p)
        return p

    def mint(self, sub):
        return subprocess.run([str(BIN), "mint-token", "--sub", sub, "--sid", "s-" + sub, "--tier", "pro", "--ttl", "3600"],
                              env=self.env, capture_output=True, check=True, text=True).stdout.strip()

    def close(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def request(port, method, path, token, body=None, headers=()):
    """(status, headers, body text) of one request; the body read to its end."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    h = {"Authorization": f"Bearer {token}"}
    h.update(headers)
    if body is not None:
        h["Content-Type"] = "application/json"
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
    r = c.getresponse()
    text = r.read().decode()
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, text


def chunks_of(status, headers, text):
    """The validated chunks of a UI Message Stream response, as (id, chunk)."""
    if status != 200:
        raise AssertionError(f"status {status}: {text[:200]}")
    if headers.get("x-vercel-ai-ui-message-stream") != "v1":
        raise AssertionError(f"no x-vercel-ai-ui-message-stream: v1 header: {headers}")
    out = [(int(i) if i is not None else None, validate(d)) for i, d in sse_blocks(text)]
    if not out or out[-1][1].type != "done":
        raise AssertionError("the response does not end with [DONE]")
    if any(i is None for i, _ in out):
        raise AssertionError("a chunk without an id")
    return out


def fold(*responses):
    m = Message()
    for chunks in responses:
        m.new_response()
        for _, c in chunks:
            m.apply(c)
    return m.summary()


def relay_events(status, headers, text):
    """(id, event object) of each event of a relay-format response."""
    if status != 200:
        raise AssertionError(f"status {status}: {text[:300]}")
    return [(int(i), json.loads(d)) for i, d in sse_blocks(text) if i is not None]


def backend_rounds(stack, body):
    """Your own backend (pydantic-ai + Vercel AI adapter) as the upstream of relays C and D."""
    secret = secrets.token_hex(32)
    port = free_port()
    stack.start([str(VENV_PY if VENV_PY.exists() else sys.executable), str(HERE / "backend.py"), str(port)], "backend.log",
                minimal_env(BACKEND_IDENTITY_SECRET=secret))
    wait_until("the backend", lambda: http_status(port, "/") is not None, 60, 0.2)
    upstream = {"RELAY_UPSTREAM": "ai-sdk", "UPSTREAM_URL": f"http://127.0.0.1:{port}/api/chat"}
    for name in ("C", "D"):
        stack.add_relay(name, RELAY_UPSTREAM_IDENTITY_SECRET=secret, **upstream)
    stack.add_relay("E", RELAY_UPSTREAM_IDENTITY_SECRET=secrets.token_hex(32), **upstream)
    for name in ("C", "D", "E"):
        stack.wait_ready(name)
    sub = "backend-" + uuid.uuid4().hex[:8]
    token = stack.mint(sub)
    ask = {"messages": body["messages"]}
    whole = {}

    def relay_format():
        events = relay_events(*request(stack.ports["C"], "POST", "/api/chat/stream", token, ask,
                                       {"X-Request-Id": "be-" + uuid.uuid4().hex}))
        types = [e["type"] for _, e in events]
        if [i for i, _ in events] != list(range(1, len(events) + 1)):
            raise AssertionError("seqs are not 1, 2, 3, …")
        text = "".join(e["content"] for _, e in events if e["type"] == "delta")
        if f"for {sub} on the " not in text:
            raise AssertionError(f"the answer does not name the verified caller: {text!r}")
        ends = [e for _, e in events if e["type"] == "tool_call_end"]
        results = [e for _, e in events if e["type"] == "tool_result"]
        if types[0] != "reasoning" or len(ends) != 2 or len(results) != 2 or types[-1] != "done":
            raise AssertionError(f"unexpected events: {types}")
        if {e["name"] for e in ends} != {"lookup_governing_law", "current_date"} or results[1]["output"].get("date") != "2026-12-07":
            raise AssertionError(f"tool calls: {ends} {results}")

    check("your own backend: pydantic-ai's stream reaches the client as the relay's parts, naming the verified caller",
          relay_format)

    def dialect_and_cuts():
        rid = "be-" + uuid.uuid4().hex
        chunks = chunks_of(*request(stack.ports["C"], "POST", "/api/chat/stream?format=ai-sdk", token, ask, {"X-Request-Id": rid}))
        want = fold(chunks)
        if want[1] != "stop" or sum(1 for p in want[0] if p["type"] == "tool") != 2:
            raise AssertionError(f"unexpected message: {want}")
        for k in [0] + sorted({i for i, _ in chunks if i})[:-1]:
            rest = chunks_of(*request(stack.ports["D"], "GET", f"/api/chat/stream/{rid}?format=ai-sdk", token,
                                      headers={"Last-Event-ID": str(k)}))
            upto = max(n for n, (i, _) in enumerate(chunks) if i == k)
            got = fold(chunks[:upto + 1], rest)
            if got != want:
                raise AssertionError(f"cut at {k}, resumed on D: {got} != {want}")

    check("your own backend in the AI SDK dialect: every chunk validates and every cut resumes whole on the other relay",
          dialect_and_cuts)

    def wrong_secret():
        events = relay_events(*request(stack.ports["E"], "POST", "/api/chat/stream", token, ask,
                                       {"X-Request-Id": "be-" + uuid.uuid4().hex}))
        last = events[-1][1] if events else {}
        if last.get("type") != "error" or last.get("code") != "upstream_error" or "401" not in last.get("message", ""):
            raise AssertionError(f"expected upstream_error naming the 401: {last}")

    check("a relay whose identity the backend cannot verify gets its 401 as upstream_error", wrong_secret)


def main():
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="agents-"))
    stack = Stack(tmp, {"RELAY_SIMULATED_TOKENS_PER_SECOND": "400", "RELAY_BUFFER_EVENTS": "40", "RELAY_BUFFER_TTL": "4s"})
    try:
        token = stack.mint("agents-" + uuid.uuid4().hex[:8])
        rid = "chat-" + uuid.uuid4().hex
        body = {"messages": [{"role": "user", "content": "Draft a mutual NDA"}], "model": "simulated-tools"}
        whole = {}

        def live():
            whole["chunks"] = chunks_of(*request(stack.ports["A"], "POST", "/api/chat/stream?format=ai-sdk", token, body,
                                                 {"X-Request-Id": rid}))
            summary, finished = fold(whole["chunks"])
            kinds = [p["type"] for p in summary]
            if finished != "stop" or kinds[:1] != ["reasoning"] or kinds.count("tool") != 2 or "source" not in kinds:
                raise AssertionError(f"unexpected message: {kinds}, finish {finished}")
            tools = [p for p in summary if p["type"] == "tool"]
            for t in tools:
                # (the streamed input of each whole call parses to its input: Message.summary)
                if t["input"] is None or t["output"] is None:
                    raise AssertionError(f"tool call {t['id']}: no input or no output")
            whole["summary"] = (summary, finished)
            whole["ids"] = sorted({i for i, _ in whole["chunks"] if i})

        check("every chunk of the agent answer validates against pydantic-ai's models", live)
        if "summary" not in whole:
            return

        def every_cut():
            chunks = whole["chunks"]
            for k in [0] + whole["ids"][:-1]:
                status, headers, text = request(stack.ports["B"], "GET", f"/api/chat/stream/{rid}?format=ai-sdk",
                                                token, headers={"Last-Event-ID": str(k)})
                rest = chunks_of(status, headers, text)
                if rest[0][1].type != "start" or rest[0][0] != k:
                    raise AssertionError(f"from {k}: does not begin with start, id {k}")
                positions = [n for n, (i, _) in enumerate(chunks) if i == k] or [-1]
                for upto in sorted({positions[0], positions[-1]}):
                    got = fold(chunks[:upto + 1], rest)
                    if got != whole["summary"]:
                        raise AssertionError(f"cut after chunk {upto} (id {k}), resumed on B: {got} != {whole['summary']}")

        check("a cut at every event id, resumed on the other relay, holds exactly the uninterrupted parts", every_cut)

        def reconnect_without_id():
            got = fold(chunks_of(*request(stack.ports["B"], "GET", f"/api/chat/stream/{rid}?format=ai-sdk", token)))
            if got != whole["summary"]:
                raise AssertionError(f"{got} != {whole['summary']}")

        check("the AI SDK's reconnect GET (format=ai-sdk, no Last-Event-ID) gets the whole answer", reconnect_without_id)

        def retained():
            wait_until("the stream's keys expire", lambda: subprocess.run(
                stack.redis + ["--scan", "--pattern", f"relay:{{*:{rid}}}:meta"], capture_output=True, text=True).stdout.strip() == "",
                30, 0.2)
            chunks = whole["chunks"]
            for k in [0] + whole["ids"][:-1:7]:
                rest = chunks_of(*request(stack.ports["A"], "GET", f"/api/chat/stream/{rid}?format=ai-sdk", token,
                                          headers={"Last-Event-ID": str(k)}))
                upto = max(n for n, (i, _) in enumerate(chunks) if i == k) if k else 0
                got = fold(chunks[:upto + 1], rest)
                if got != whole["summary"]:
                    raise AssertionError(f"retained, from {k}: {got} != {whole['summary']}")

        check("after the stream's keys expired, the retained answer resumes the same way", retained)

        def refused():
            status, _, text = request(stack.ports["A"], "POST", "/api/chat/stream?format=vercel", token, body)
            if status != 400 or json.loads(text)["error"]["code"] != "invalid_request":
                raise AssertionError(f"format=vercel: {status} {text[:200]}")

        check("an unknown format is a 400 in the relay's JSON shape", refused)
        backend_rounds(stack, body)
    finally:
        stack.close()
    passed = sum(1 for _, ok in RESULTS if ok)
    failed = len(RESULTS) - passed
    print(f"agents: {passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
