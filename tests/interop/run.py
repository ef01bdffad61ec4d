"""Interoperability suite: third-party SSE clients read answers from two relays behind nginx
while the serving relay is stopped mid-answer (docs/INTEROP.md).

Starts, all on 127.0.0.1 and all stopped at the end: a redis-server (Unix socket in a temp
dir), relays A and B (`stream-relay serve`, simulated upstream) sharing it, and two nginx
instances running deploy/nginx.conf (rendered by scripts/render-nginx-conf.sh):

    nginx-A  upstream: A, then B as `backup`      nginx-B  upstream: B, then A as `backup`

Every answer is started by a POST straight at relay A (A generates it; the runner drops that
connection, the generation goes on) and read by a client through nginx. Rounds:

* SIGKILL (clients that reconnect by themselves): the clients read through nginx-B, so B
  serves them while A generates ("serving but not generating"); B is killed with SIGKILL
  once every client has its first delta; the clients reconnect through nginx-B, which finds
  B refusing connections and passes them to A.
* SIGTERM (every client): the clients read through nginx-A; A, serving and generating, gets
  SIGTERM (docs/PROTOCOL.md §4.4: it drains, its generations go on); the clients reconnect
  through nginx-A to B.
* after the end (SSE clients): each client opens a finished stream with `Last-Event-ID` =
  its final id; the relay answers 204 (PROTOCOL.md §4.2) and the client must stop there.

Each client reads an English (`simulated`) and an Arabic (`simulated-ar`) answer. A case
passes when the client's text is byte-identical to the simulated document itself
(`stream-relay docs simulated MODEL`), it got `done` with finish_reason `stop`, nginx's log
shows it resumed on the surviving relay with Last-Event-ID (or an offset), it exited by
itself within the deadline, and no request for its stream followed the one that delivered
`done`.

Run:  python3 tests/interop/run.py            (after `swift build`)
      RELAY_BIN=/path/to/stream-relay python3 tests/interop/run.py
      INTEROP_ONLY=httpx-sse,curl INTEROP_CASES=sigterm python3 tests/interop/run.py
Needs: redis-server, nginx, curl, node + Debian's node-eventsource, and the pinned PyPI
packages of tests/interop/requirements.txt (all installed by scripts/install-deps.sh).
Prints one line per case and ends with "interop: N passed, N failed"; exit 1 on a failure.
"""
import http.client
import json
import os
import pathlib
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from processes import die_with_parent, free_port, http_status, minimal_env, wait_until

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BIN = pathlib.Path(os.environ.get("RELAY_BIN") or os.environ.get("STREAM_RELAY_BIN") or ROOT / ".build/debug/stream-relay")
DRIVERS = HERE / "drivers"
RATE = int(os.environ.get("INTEROP_RATE", "60"))  # simulated tokens/s: English ~32 s, Arabic ~17 s
PROMPT = "Draft a mutual NDA for a software partnership."
MODELS = {"english": "simulated", "arabic": "simulated-ar"}
# s the runner waits for every client of a round to have its first delta before it stops the
# relay anyway (a client that cannot read the stream at all must not hold the round up; its
# case fails with "no delta before the signal"); well under the Arabic answer's length.
PROGRESS_TIMEOUT = float(os.environ.get("INTEROP_PROGRESS_TIMEOUT", "10"))
CUT_AFTER = float(os.environ.get("INTEROP_CUT_AFTER", "4"))  # s after the POSTs, at the earliest
FINISH_TIMEOUT = 90.0     # s until every client of a round has exited after the signal
NODE_MODULES = os.environ.get("INTEROP_NODE_PATH", "/usr/share/nodejs")  # Debian's node-eventsource

# Cases that fail through the client's own design, whatever a server does, with the text their
# failure must contain: reported XFAIL; a pass (or another failure) fails the run, so the list
# cannot hide a change. (client, round) -> (signature, why)
CLIENT_LIMITS = {
    ("aiohttp-sse-client2", "sigkill"): (
        "ClientPayloadError",
        "a relay killed mid-response leaves nginx no way to end the chunked body; the library "
        "reconnects only after a body that ended cleanly and raises ClientPayloadError otherwise"),
}

# name -> (command prefix, reconnects by itself, reads SSE)
CLIENTS = {
    "node-eventsource": (["node", str(DRIVERS / "node_eventsource_driver.js")], True, True),
    "requests-sse": ([sys.executable, str(DRIVERS / "requests_sse_driver.py")], True, True),
    "aiohttp-sse-client2": ([sys.executable, str(DRIVERS / "aiohttp_sse_client2_driver.py")], True, True),
    "sseclient-py": ([sys.executable, str(DRIVERS / "sseclient_py_driver.py")], False, True),
    "httpx-sse": ([sys.executable, str(DRIVERS / "httpx_sse_driver.py")], False, True),
    "curl": ([sys.executable, str(DRIVERS / "curl_driver.py")], False, True),
    "durable-streams": ([sys.executable, str(DRIVERS / "durable_streams_driver.py")], True, False),
}


class Stack:
    """redis-server, relays A and B, nginx-A and nginx-B; all children of this process."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []
        self.relays = {}
        self.sock = tmp / "redis.sock"
        self.start(["redis-server", "--port", "0", "--unixsocket", str(self.sock), "--save", "", "--appendonly", "no",
                    "--dir", str(tmp)], "redis.log")
        wait_until("redis-server", lambda: subprocess.run(["redis-cli", "-s", str(self.sock), "ping"],
                                                          capture_output=True).stdout.strip() == b"PONG", 10)
        self.env = minimal_env(REDIS_URL=f"unix://{self.sock}", RELAY_JWT_SECRET=secrets.token_hex(24),
                               RELAY_SIMULATED_TOKENS_PER_SECOND=str(RATE), RELAY_WORKERS="1")
        self.ports = {"A": free_port(), "B": free_port()}
        for name in ("A", "B"):
            self.start_relay(name)
        for name in ("A", "B"):
            self.wait_ready(name)
        self.nginx_ports = {}
        for first, second in (("A", "B"), ("B", "A")):
            port = free_port()
            conf = subprocess.run([str(ROOT / "scripts/render-nginx-conf.sh"), "--listen", f"127.0.0.1:{port}",
                                   f"127.0.0.1:{self.ports[first]}", f"127.0.0.1:{self.ports[second]} backup"],
                                  capture_output=True, check=True, text=True).stdout
            d = tmp / f"nginx-{first}"
            d.mkdir()
            (d / "nginx.conf").write_text(conf)
            user = "user root;" if os.getuid() == 0 else ""
            self.start(["nginx", "-p", f"{d}/", "-e", f"{d}/error.log", "-c", str(d / "nginx.conf"),
                        "-g", f"pid {d}/nginx.pid; daemon off; {user}"], f"nginx-{first}/access.log")
            self.nginx_ports[first] = port
            wait_until(f"nginx-{first}", lambda: http_status(port, "/lb-healthz") == 200, 10)

    def start(self, args, log, env=None):
        with open(self.tmp / log, "ab") as f:
            p = subprocess.Popen(args, env=env or minimal_env(), stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 preexec_fn=die_with_parent)
        self.procs.append(p)
        return p

    def start_relay(self, name):
        env = dict(self.env, RELAY_LISTEN=f"127.0.0.1:{self.ports[name]}", RELAY_INSTANCE=f"relay-{name}")
        self.relays[name] = self.start([str(BIN), "serve"], f"relay-{name}.log", env)

    def wait_ready(self, name):
        wait_until(f"relay {name} ready", lambda: http_status(self.ports[name], "/readyz") == 200, 30)

    def restart(self, name):
        p = self.relays[name]
        p.wait(timeout=60)  # a drained relay exits once its generations have ended
        self.start_relay(name)
        self.wait_ready(name)

    def metric(self, name, metric):
        """A counter from relay `name`'s /metrics (Prometheus text), summed over its labels."""
        c = http.client.HTTPConnection("127.0.0.1", self.ports[name], timeout=5)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                  if line.startswith(metric) and line[len(metric):len(metric) + 1] in (" ", "{")]
        if not values:
            raise AssertionError(f"relay {name} has no metric {metric}")
        return sum(values)

    def mint(self, sub, sid):
        return subprocess.run([str(BIN), "mint-token", "--sub", sub, "--sid", sid, "--tier", "pro", "--ttl", "3600"],
                              env=self.env, capture_output=True, check=True, text=True).stdout.strip()

    def start_answer(self, token, model, request_id):
        """POST at relay A; returns once the 200 head arrived, then drops the connection (the
        generation runs to its end without a reader, PROTOCOL.md §3.3)."""
        c = http.client.HTTPConnection("127.0.0.1", self.ports["A"], timeout=10)
        body = json.dumps({"messages": [{"role": "user", "content": PROMPT}], "model": model})
        c.request("POST", "/api/chat/stream", body=body, headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json", "X-Request-Id": request_id})
        r = c.getresponse()
        if r.status != 200:
            raise AssertionError(f"POST {model} answered {r.status}: {r.read()[:300]!r}")
        c.close()

    def access_log(self, first):
        return (self.tmp / f"nginx-{first}/access.log").read_text(errors="replace")

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


LOG_LINE = re.compile(r'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+" (?P<status>\d{3}) .* up=(?P<up>[^ ]+(?:, [^ ]+)*) us=.* leid="(?P<leid>[^"]*)"(?: off="(?P<off>[^"]*)")?')


def requests_for(log, request_id):
    """nginx's access-log entries (deploy/nginx.conf `relay` format) of one stream's GETs, in
    the order they completed: dicts with path, status, upstream (the last one tried), leid."""
    out = []
    for line in log.splitlines():
        m = LOG_LINE.search(line)
        if m and m["method"] == "GET" and f"/api/chat/stream/{request_id}" in m["path"]:
            out.append(dict(path=m["path"], status=int(m["status"]), upstream=m["up"].split(", ")[-1], leid=m["leid"],
                            offset=m["off"] or ""))
    return out


ALL_DRIVERS = []


class Driver:
    """One client reading one answer, as a child process printing JSON lines."""

    def __init__(self, client, case, url, token, tmp, extra_args=()):
        self.client, self.case = client, case
        cmd, _, _ = CLIENTS[client]
        self.log_path = tmp / f"driver-{client}-{case.replace('/', '-')}.log"
        env = minimal_env(INTEROP_TOKEN=token, NODE_PATH=NODE_MODULES, PYTHONPATH=str(DRIVERS), PYTHONUNBUFFERED="1")
        for k in ("PYTHONHOME", "VIRTUAL_ENV"):
            if k in os.environ:
                env[k] = os.environ[k]
        self.started = time.monotonic()
        self.proc = subprocess.Popen(cmd + [url, *extra_args], env=env, stdout=subprocess.PIPE,
                                     stderr=open(self.log_path, "wb"), stdin=subprocess.PIPE, preexec_fn=die_with_parent)
        ALL_DRIVERS.append(self)
        self.ready = False
        self.progress = None
        self.result = None
        self.bad_lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                self.bad_lines.append(raw[:200])
                continue
            if "ready" in msg:
                self.ready = True
            if "progress" in msg:
                self.progress = msg["progress"] or "?"
                self.progress_at = time.monotonic() - self.started
            if "result" in msg:
                self.result = msg["result"]

    def go(self):
        """Lets the driver connect (it has imported its library and waits for this line)."""
        self.started = time.monotonic()
        try:
            self.proc.stdin.write(b"go\n")
            self.proc.stdin.close()
        except OSError:
            pass

    def wait(self, deadline):
        try:
            self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            self.reader.join(5)
            return True
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.reader.join(5)
            return False

    def log_tail(self, n=6):
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(lines[-n:])


class Suite:
    def __init__(self):
        self.results = []  # (client, case, ok, reason)
        self.expected = []  # client limitations seen (CLIENT_LIMITS)
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="interop-"))
        only = os.environ.get("INTEROP_ONLY")
        self.clients = [c for c in CLIENTS if not only or c in only.split(",")]
        cases = os.environ.get("INTEROP_CASES")
        self.rounds = [r for r in ("sigkill", "sigterm", "after-end") if not cases or r in cases.split(",")]

    def record(self, client, case, ok, reason=""):
        limit = CLIENT_LIMITS.get((client, case.split("/")[-1]))
        if limit and not ok and limit[0] in reason:
            self.expected.append((client, case, reason))
            print(f"XFAIL {client:20} {case:18} client limitation ({limit[1]}): {reason}", flush=True)
            return
        if limit:
            ok, reason = False, f"listed as a client limitation ({limit[0]}) but {'passed' if ok else 'failed otherwise: ' + reason}"
        self.results.append((client, case, ok, reason))
        print(f"{'PASS' if ok else 'FAIL'}  {client:20} {case:18} {reason}", flush=True)

    def references(self):
        refs = {}
        for lang, model in MODELS.items():
            refs[lang] = subprocess.run([str(BIN), "docs", "simulated", model], capture_output=True, check=True,
                                        env=minimal_env()).stdout
            assert len(refs[lang]) > 5000, f"reference {model} is {len(refs[lang])} bytes"
        return refs

    def run(self):
        if not BIN.exists():
            print(f"interop: {BIN} missing: run `swift build` first (or set RELAY_BIN)", file=sys.stderr)
            return 2
        self.refs = self.references()
        self.stack = Stack(self.tmp)
        self.finished = {}  # client -> (request id, final id, nginx side) of a finished answer
        try:
            for r in self.rounds:
                if r == "after-end":
                    self.after_end_round()
                else:
                    self.signal_round(r)
        finally:
            for d in ALL_DRIVERS:
                if d.proc.poll() is None:
                    d.proc.kill()
                    d.proc.wait()
            self.stack.close()
        passed = sum(1 for r in self.results if r[2])
        failed = len(self.results) - passed
        print(f"\nlogs: {self.tmp}" if failed or os.environ.get("KEEP_INTEROP_TMP") == "1" else "", flush=True)
        if not failed and os.environ.get("KEEP_INTEROP_TMP") != "1":
            shutil.rmtree(self.tmp, ignore_errors=True)
        if self.expected:
            print(f"{len(self.expected)} expected failure(s) of client limitations (CLIENT_LIMITS in {pathlib.Path(__file__).name})")
        print(f"interop: {passed} passed, {failed} failed")
        return 0 if failed == 0 and self.results else 1

    def signal_round(self, kind):
        """Every participating client reads an English and an Arabic answer; once all have
        their first delta, the serving relay gets SIGKILL (B, not generating) or SIGTERM (A,
        generating)."""
        serving, survivor, sig = ("B", "A", signal.SIGKILL) if kind == "sigkill" else ("A", "B", signal.SIGTERM)
        clients = [c for c in self.clients if kind == "sigterm" or CLIENTS[c][1]]
        if not clients:
            return
        port = self.stack.nginx_ports[serving]
        # Tokens first: the answers then start within a second of each other.
        plan = [(client, lang, model, self.stack.mint(f"interop-{client}", f"{client}-{kind}-{lang}"))
                for client in clients for lang, model in MODELS.items()]
        drivers = []
        for client, lang, model, token in plan:
            rid = f"interop-{kind}-{lang}-{secrets.token_hex(6)}"
            d = Driver(client, f"{lang}/{kind}", f"http://127.0.0.1:{port}/api/chat/stream/{rid}", token, self.tmp)
            d.lang, d.rid, d.model, d.token = lang, rid, model, token
            drivers.append(d)
        try:
            wait_until("every client loaded", lambda: all(d.ready or d.proc.poll() is not None for d in drivers), 60)
        except AssertionError:
            pass  # such a case fails below with what its driver said
        round_start = time.monotonic()
        for d in drivers:
            self.stack.start_answer(d.token, d.model, d.rid)
        for d in drivers:
            d.go()
        try:
            wait_until("every client's first delta", lambda: all(d.progress or d.result or d.proc.poll() is not None
                                                                  for d in drivers),
                       max(0.1, PROGRESS_TIMEOUT - (time.monotonic() - round_start)))
        except AssertionError:
            pass  # the cases without progress fail below with what their driver said
        # Pacing on purpose, not synchronisation: the cut lands a few hundred events into the
        # answers (at 60 tokens/s), so the resume replays a real backlog from Redis.
        time.sleep(max(0.0, CUT_AFTER - (time.monotonic() - round_start)))
        # The claim of the round, checked: relay A generates every answer; B generated none.
        generated = {name: self.stack.metric(name, "relay_generations_started_total") for name in ("A", "B")}
        if generated["B"] != 0 or generated["A"] < len(drivers):
            raise AssertionError(f"relay_generations_started_total: {generated}; expected A >= {len(drivers)}, B = 0")
        self.stack.relays[serving].send_signal(sig)
        signalled = time.monotonic()
        print(f"{kind}: relay {serving} signalled {signalled - round_start:.1f} s after the first POST; first deltas at "
              + ", ".join(f"{d.client}/{d.lang} {getattr(d, 'progress_at', -1):.1f} s" for d in drivers), flush=True)
        deadline = signalled + FINISH_TIMEOUT
        exited = {id(d): d.wait(deadline) for d in drivers}
        time.sleep(1.0)  # nginx writes a request's log line when it ends; the drivers are gone now
        log = self.stack.access_log(serving)
        for d in drivers:
            self.judge(d, exited[id(d)], log, serving, survivor, kind)
        self.stack.restart(serving)

    def judge(self, d, exited, log, serving, survivor, kind):
        res = d.result or {}
        reqs = requests_for(log, d.rid)
        why = []
        if not exited:
            why.append(f"did not stop within {FINISH_TIMEOUT:.0f} s of the {kind}")
        if d.progress is None:
            why.append("no delta before the signal")
        if res.get("client_error"):
            why.append(f"client: {res['client_error']}")
        if res.get("error"):
            why.append(res["error"])
        if not d.result:
            why.append(f"no result (exit {d.proc.returncode})")
        done = res.get("done") or {}
        if d.result and done.get("finish_reason") != "stop":
            why.append(f"no done/stop (done={done or None})")
        text = (res.get("text") or "").encode("utf-8")
        ref = self.refs[d.lang]
        if d.result and text != ref:
            same = next((i for i, (a, b) in enumerate(zip(text, ref)) if a != b), min(len(text), len(ref)))
            why.append(f"text differs from the reference at byte {same} ({len(text)} vs {len(ref)} bytes)")
        # Resumed through nginx on the survivor, from where it was (Last-Event-ID or offset).
        if len(reqs) < 2:
            why.append(f"nginx saw {len(reqs)} GET(s) for the stream: no resume")
        else:
            first, later = reqs[0], reqs[1:]
            if not first["upstream"].endswith(f":{self.stack.ports[serving]}"):
                why.append(f"first read not served by relay {serving} ({first['upstream']})")
            if not any(r["upstream"].endswith(f":{self.stack.ports[survivor]}") and r["status"] == 200 for r in later):
                why.append(f"no 200 from relay {survivor} after the {kind}: {[(r['status'], r['upstream']) for r in later]}")
            if CLIENTS[d.client][2] and not all(r["leid"] not in ("", "-", "0") for r in later):
                why.append(f"a reconnect without Last-Event-ID: {[r['leid'] for r in later]}")
            if not CLIENTS[d.client][2] and not all(r["offset"] not in ("", "-") and r["offset"] != "-1" for r in later):
                why.append(f"a later read without the offset reached: {[(r['path'], r['offset']) for r in later][:3]}")
            # Stopped: nothing after the request that delivered `done` (the last 200).
            if reqs[-1]["status"] != 200 and res.get("done"):
                why.append(f"requests after done: {[(r['status'], r['leid']) for r in reqs][-3:]}")
        if d.bad_lines:
            why.append(f"driver printed non-JSON: {d.bad_lines[:1]}")
        if why and d.log_tail():
            why.append(f"[driver log: {d.log_tail()}]")
        if not why and CLIENTS[d.client][2] and res.get("last_id"):
            self.finished.setdefault("any", (d.rid, res["last_id"], d.client))
        if why:
            self.record(d.client, d.case, False, "; ".join(why))
            return
        resume = next(r for r in reqs[1:] if r["upstream"].endswith(f":{self.stack.ports[survivor]}"))
        where = f"Last-Event-ID {resume['leid']}" if resume["leid"] not in ("", "-") else resume["path"].split("?")[-1]
        self.record(d.client, d.case, True, f"{len(reqs)} GETs, resumed on {survivor} with {where}")

    def after_end_round(self):
        """A client that connects to a finished stream from its final id gets 204 and stops
        (no error, one request, no reconnect). One client at a time: all read the same stream."""
        if "any" not in self.finished:
            for client in self.clients:
                if CLIENTS[client][2]:
                    self.record(client, "after-end", False, "no answer of an earlier round passed: no finished stream to reconnect to")
            return
        rid, last_id, owner = self.finished["any"]
        side = "A"
        for client in self.clients:
            if not CLIENTS[client][2]:
                continue
            seen = len(requests_for(self.stack.access_log(side), rid))
            token = self.stack.mint(f"interop-{owner}", f"{client}-after-end")  # streams are scoped to their sub
            d = Driver(client, "after-end", f"http://127.0.0.1:{self.stack.nginx_ports[side]}/api/chat/stream/{rid}",
                       token, self.tmp, extra_args=[last_id])
            d.go()
            exited = d.wait(time.monotonic() + 30)
            time.sleep(0.5)  # nginx logs a request when it ends
            reqs = requests_for(self.stack.access_log(side), rid)[seen:]
            res = d.result or {}
            why = []
            if not exited:
                why.append("did not stop within 30 s")
            if not d.result:
                why.append(f"no result (exit {d.proc.returncode})")
            if res.get("client_error"):
                why.append(f"client: {res['client_error']}")
            if res.get("error"):
                why.append(res["error"])
            if res.get("text") or res.get("done"):
                why.append("delivered events from a finished stream")
            if [(r["status"], r["leid"]) for r in reqs] != [(204, last_id)]:
                why.append(f"expected one GET with Last-Event-ID {last_id} answered 204, nginx saw "
                           f"{[(r['status'], r['leid']) for r in reqs]}")
            if why and d.log_tail():
                why.append(f"[driver log: {d.log_tail()}]")
            self.record(client, "after-end", not why, "; ".join(why) if why else "one GET, 204, stopped")


if __name__ == "__main__":
    sys.exit(Suite().run())
