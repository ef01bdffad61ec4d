"""Chromium's own `EventSource` (no client kit) reading an answer through nginx with a read ticket.

Starts, all on 127.0.0.1 and all stopped at the end: a redis-server (Unix socket), three relays
sharing it and nginx running deploy/nginx.conf itself (rendered by scripts/render-nginx-conf.sh)
with two relays, R1 and R2, in its round-robin pool; the third, the owner O, is reached only
through an added `/owner/` location, so the generation runs on an instance the test never stops
(a killed owner ends an answer with `upstream_lost`, docs/PROTOCOL.md §5.4, which is another
test's matter). nginx also serves the test page at /native/ (same origin: no CORS).

The page (docs/PROTOCOL.md §2.6) POSTs with `fetch` and `Authorization`, takes `X-Read-Ticket`
from the response head, drops the POST's body, and reads the answer with
`new EventSource('/api/chat/stream/ID?ticket=…')`. While the answer is generated, the pool relay
serving the EventSource is stopped with SIGTERM (a drain: the response ends with its chunked
terminator) and later the one serving it then with SIGKILL (the connection just dies); each is
restarted on its port. The browser reconnects by itself with `Last-Event-ID` each time.

Checked: every event arrives once, ids 1…N in order; the page's events are byte-identical to an
uninterrupted read of the same stream, and the text to the simulated document itself
(`stream-relay docs simulated`); after `done` the EventSource reconnects once, gets `204`
and is CLOSED (no further request, no event); the ticket appears in no log (nginx, relays).

Run: python3 clients/js/e2e/test_native_eventsource.py   (after `swift build`; needs chromium,
chromium-driver, nginx, redis-server and the pip packages in requirements.txt).
"""
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from e2e_support import free_port, http_get, minimal_env, serves, wait_until  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[3]
BIN = pathlib.Path(os.environ.get("STREAM_RELAY_BIN", ROOT / ".build/debug/stream-relay"))
RATE = 150  # simulated tokens per second: the English document (~3,000 tokens) takes ~20 s
# Every event of the answer stays in Redis (the default keeps 200; a resume from before the window
# gets the events back from the text, docs/PROTOCOL.md §6.3): each event must reach the page
# exactly once, with its own id.
BUFFER_EVENTS = 5000

PAGE = """<!doctype html>
<meta charset="utf-8">
<title>native EventSource</title>
<script>
// What the page saw, for the test to read.
window.run = { status: null, ticket: null, opens: 0, events: [], errors: [], readyStates: [] };
// POST with fetch (EventSource cannot POST nor send Authorization), take the read ticket
// from the response head, drop the body, and read the answer with the browser's EventSource.
window.start = async function (token, requestId) {
  const controller = new AbortController();
  const r = await fetch('/owner/api/chat/stream', {
    method: 'POST', signal: controller.signal,
    headers: { 'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json', 'X-Request-Id': requestId },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Draft a mutual NDA' }], model: 'simulated' }),
  });
  run.status = r.status;
  run.ticket = r.headers.get('X-Read-Ticket');
  controller.abort();   // the generation goes on without its first reader
  const es = new EventSource('/api/chat/stream/' + requestId + '?ticket=' + encodeURIComponent(run.ticket));
  window.es = es;
  es.onopen = () => { run.opens += 1; };
  es.onmessage = (e) => { run.events.push({ id: e.lastEventId, data: e.data }); };
  es.onerror = () => { run.errors.push({ readyState: es.readyState, events: run.events.length }); };
};
</script>
"""


class NativeEventSourceEndToEnd(unittest.TestCase):
    procs = []

    @classmethod
    def start(cls, args, env=None, log=None):
        p = subprocess.Popen(args, env=env if env is not None else minimal_env(), stdin=subprocess.DEVNULL,
                             stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT if log else subprocess.DEVNULL)
        cls.procs.append(p)
        return p

    @classmethod
    def setUpClass(cls):
        if not BIN.exists():
            raise unittest.SkipTest(f"{BIN} missing: run swift build first")
        cls.tmp = pathlib.Path(tempfile.mkdtemp(prefix="native-es-"))
        try:
            cls._start_everything()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start_relay(cls, name):
        port = cls.ports[name]
        with open(cls.tmp / f"relay-{name}.log", "ab") as log:
            p = cls.start([str(BIN), "serve"], env=dict(cls.env, RELAY_LISTEN=f"127.0.0.1:{port}", RELAY_INSTANCE=f"relay-{name}"), log=log)
        cls.relays[name] = p
        wait_until(f"relay {name} ready", lambda: serves(port, "/readyz"), 20)
        return p

    @classmethod
    def _start_everything(cls):
        tmp = cls.tmp
        sock = tmp / "redis.sock"
        cls.start(["redis-server", "--port", "0", "--unixsocket", str(sock), "--save", "", "--appendonly", "no", "--dir", str(tmp)])
        wait_until("redis-server", lambda: subprocess.run(["redis-cli", "-s", str(sock), "ping"], capture_output=True).stdout.strip() == b"PONG", 10)
        # An explicit, minimal environment (docs/TESTING.md): nothing ambient reaches the relays.
        cls.env = dict(minimal_env(), REDIS_URL=f"unix://{sock}", RELAY_JWT_SECRET=os.urandom(24).hex(),
                       RELAY_SIMULATED_TOKENS_PER_SECOND=str(RATE), RELAY_WORKERS="1",
                       RELAY_BUFFER_EVENTS=str(BUFFER_EVENTS))
        cls.ports = {name: free_port() for name in ("O", "R1", "R2")}
        cls.relays = {}
        for name in cls.ports:
            cls.start_relay(name)
        cls.token = subprocess.run([str(BIN), "mint-token", "--sub", "es-user", "--sid", "es-session", "--tier", "pro", "--ttl", "3600"],
                                   env=cls.env, capture_output=True, check=True, text=True).stdout.strip()
        cls.nginx_port = free_port()
        conf = subprocess.run([str(ROOT / "scripts/render-nginx-conf.sh"), "--listen", f"127.0.0.1:{cls.nginx_port}",
                               f"127.0.0.1:{cls.ports['R1']}", f"127.0.0.1:{cls.ports['R2']}"],
                              capture_output=True, check=True, text=True).stdout
        (tmp / "native").mkdir()
        (tmp / "native" / "index.html").write_text(PAGE)
        extra = (f"        location /owner/ {{ proxy_pass http://127.0.0.1:{cls.ports['O']}/; proxy_buffering off; }}\n"
                 f"        location /native/ {{ root {tmp}; }}\n")
        marker = "        # --- event streams"
        assert marker in conf, "deploy/nginx.conf changed: no event-stream location to insert before"
        (tmp / "nginx.conf").write_text(conf.replace(marker, extra + marker, 1))
        user = "user root;" if os.getuid() == 0 else ""
        cls.nginx_log = open(tmp / "nginx-access.log", "wb")  # noqa: SIM115 (closed in tearDownClass)
        cls.nginx_err = open(tmp / "nginx-error.log", "wb")  # noqa: SIM115 (closed in tearDownClass)
        # stdout: the access log (access_log /dev/stdout); stderr: the error log (error_log stderr).
        cls.procs.append(subprocess.Popen(["nginx", "-p", f"{tmp}/", "-e", f"{tmp}/nginx-error.log", "-c", str(tmp / "nginx.conf"),
                                           "-g", f"pid {tmp}/nginx.pid; daemon off; {user}"], env=minimal_env(), stdin=subprocess.DEVNULL,
                                          stdout=cls.nginx_log, stderr=cls.nginx_err))
        wait_until("nginx", lambda: serves(cls.nginx_port, "/native/index.html"), 10)
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions"):
            options.add_argument(a)
        service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver", log_output=str(tmp / "chromedriver.log"))
        cls.driver = webdriver.Chrome(service=service, options=options)
        cls.driver.set_script_timeout(15)

    @classmethod
    def tearDownClass(cls):
        driver = getattr(cls, "driver", None)
        if driver:
            try:
                driver.quit()
            except Exception:
                pass
        for p in reversed(cls.procs):
            if p.poll() is None:
                p.terminate()
        for f in (getattr(cls, "nginx_log", None), getattr(cls, "nginx_err", None)):
            if f:
                f.close()
        for p in cls.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        cls.procs = []
        if os.environ.get("KEEP_E2E_TMP") != "1":
            shutil.rmtree(getattr(cls, "tmp", "/nonexistent"), ignore_errors=True)

    # ---- helpers -------------------------------------------------------------------

    def run_state(self):
        return self.driver.execute_script("return window.run")

    def events_seen(self):
        return self.driver.execute_script("return window.run.events.length")

    def live_connections(self, name):
        """relay_live_connections of one relay, read from its own /metrics (not through nginx)."""
        status, body = http_get(self.ports[name], "/metrics", timeout=2)
        m = re.search(rb"^relay_live_connections (\d+)", body, re.M)
        return int(m.group(1)) if status == 200 and m else 0

    def serving(self):
        """The pool relay the EventSource is connected to (exactly one holds a live connection)."""
        def one():
            live = [n for n in ("R1", "R2") if self.live_connections(n) > 0]
            return live[0] if len(live) == 1 else None
        return wait_until("exactly one pool relay serving the EventSource", one, 15)

    def wait_events(self, more_than, what):
        return wait_until(what, lambda: self.events_seen() > more_than, 30, 0.1)

    def uninterrupted(self, request_id):
        """The whole stream read at once with the bearer token, after the answer ended."""
        status, body = http_get(self.nginx_port, f"/api/chat/stream/{request_id}",
                                {"Authorization": f"Bearer {self.token}", "Last-Event-ID": "0"}, timeout=30)
        self.assertEqual(status, 200)
        text = body.decode("utf-8")
        events = []
        for block in text.split("\n\n"):
            fields = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line and not line.startswith(":"))
            if "data" in fields:
                events.append({"id": fields["id"], "data": fields["data"]})
        return events

    # ---- the test ------------------------------------------------------------------

    def test_native_eventsource_resumes_across_sigterm_and_sigkill_and_closes_after_the_end(self):
        reference = subprocess.run([str(BIN), "docs", "simulated", "simulated"], capture_output=True, check=True,
                                   env=minimal_env()).stdout
        self.assertGreater(len(reference), 5000)
        request_id = "native" + os.urandom(12).hex()
        self.driver.get(f"http://127.0.0.1:{self.nginx_port}/native/index.html")
        self.driver.execute_async_script("const done = arguments[arguments.length - 1]; window.start(arguments[0], arguments[1]).then(done, e => done(String(e)))",
                                         self.token, request_id)
        state = self.run_state()
        self.assertEqual(state["status"], 200)
        ticket = state["ticket"]
        self.assertTrue(ticket and ticket.startswith("rt1."), f"X-Read-Ticket readable by the page: {ticket!r}")

        # 1. SIGTERM the pool relay serving the EventSource: its response ends cleanly; the
        #    browser reconnects (with Last-Event-ID) through nginx to the other one.
        self.wait_events(200, "200 events on the first connection")
        first = self.serving()
        before = self.events_seen()
        self.relays[first].send_signal(signal.SIGTERM)
        self.assertEqual(self.relays[first].wait(timeout=20), 0, f"relay {first} drained and exited 0")
        self.start_relay(first)
        self.wait_events(before + 200, "events after the SIGTERM")

        # 2. SIGKILL the pool relay serving it now.
        second = self.serving()
        self.assertNotEqual(second, first, "the drained relay's client went to the other relay")
        before = self.events_seen()
        self.relays[second].send_signal(signal.SIGKILL)
        self.relays[second].wait(timeout=10)
        self.start_relay(second)
        self.wait_events(before + 200, "events after the SIGKILL")

        # 3. The end: done, then one reconnect answered 204, then CLOSED for good.
        wait_until("the done event", lambda: self.driver.execute_script(
            "const e = window.run.events; return e.length > 0 && JSON.parse(e[e.length - 1].data).type === 'done'"), 60, 0.2)
        wait_until("EventSource CLOSED after the 204", lambda: self.driver.execute_script("return window.es.readyState") == 2, 15, 0.1)
        closed = self.run_state()
        events = closed["events"]
        self.assertEqual([e["id"] for e in events], [str(i) for i in range(1, len(events) + 1)], "every event once, in order")
        done = json.loads(events[-1]["data"])
        self.assertEqual(done["type"], "done")
        self.assertEqual(done["finish_reason"], "stop")
        text = "".join(json.loads(e["data"]).get("content", "") for e in events if json.loads(e["data"])["type"] == "delta")
        self.assertEqual(text.encode("utf-8"), reference, "the answer differs from the simulated document")
        self.assertEqual(events, self.uninterrupted(request_id), "not byte-identical to an uninterrupted read")
        self.assertEqual(closed["opens"], 3, f"opened, reopened after SIGTERM, after SIGKILL: {closed}")
        self.assertEqual(closed["errors"][-1]["readyState"], 2, "the 204 closed the EventSource")
        self.assertEqual(sum(1 for e in closed["errors"] if e["readyState"] == 2), 1)
        # A quiet window: at every poll for 2 s, nothing arrived and nothing reconnected after CLOSED.
        quiet_until = time.monotonic() + 2
        while time.monotonic() < quiet_until:
            after = self.run_state()
            self.assertEqual((len(after["events"]), after["opens"], len(after["errors"])), (len(events), 3, len(closed["errors"])))
            time.sleep(0.1)

        # The ticket is a credential: neither the access log (deploy/nginx.conf logs paths without
        # the query) nor a relay's log holds it. nginx's error log does name the request line of
        # the connection the SIGKILL cut ("upstream prematurely closed"), ticket included: the
        # limit docs/DEPLOYING.md states.
        self.nginx_log.flush()
        logs = {p.name: p.read_bytes() for p in [*self.tmp.glob("relay-*.log"), self.tmp / "nginx-access.log"]}
        self.assertTrue(any(b"/api/chat/stream/" + request_id.encode() in v for v in logs.values()), "the access log names the path")
        for name, content in logs.items():
            self.assertNotIn(ticket.encode(), content, f"the ticket is in {name}")
        print(f"native EventSource: {len(events)} events, byte-identical; resumed after SIGTERM ({first}) and SIGKILL ({second}); closed by the 204")


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    failed = len(result.failures) + len(result.errors)
    print(f"native EventSource e2e: {result.testsRun - failed - len(result.skipped)} passed, {failed} failed, {len(result.skipped)} skipped")
    sys.exit(0 if result.wasSuccessful() and not result.skipped else 1)
