"""End-to-end test of the web chat demo (clients/js/demo) in real headless Chromium.

Starts, all on 127.0.0.1 and all stopped at the end: a redis-server (Unix socket), two
relays (`stream-relay serve`) sharing it, a cutting TCP proxy in front of relay A, nginx
serving clients/js and proxying /a/api/ → proxy → relay A, /b/api/ → relay B; then drives
the demo page through chromedriver.

* English answer: the proxy cuts the connection mid-answer; the kit resumes on relay B with
  Last-Event-ID; the text on the page is byte-identical to the simulated upstream's
  document itself (`stream-relay docs simulated`, its tokens joined), not to another run.
* Arabic answer: the answer container has dir="rtl" before its first glyph (a
  MutationObserver in the page records every change), and the text equals the reference.
* Stop: the page sends DELETE (202) and the relay stops generating: replaying the stream
  from relay B ends with `done` / `finish_reason: "cancelled"` well before the document's end.

Screenshots of the finished answers go to docs/js-demo-english.png and docs/js-demo-arabic.png.
Run: python3 clients/js/e2e/test_chat_e2e.py   (after `swift build`; needs chromium,
chromium-driver, nginx, redis-server and the pinned pip packages in requirements.txt).
"""
import http.client
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

ROOT = pathlib.Path(__file__).resolve().parents[3]
BIN = pathlib.Path(os.environ.get("STREAM_RELAY_BIN", ROOT / ".build/debug/stream-relay"))


def minimal_env():
    """PATH, HOME, TMPDIR and LANG of this process only: the base of every child's environment."""
    return {k: os.environ[k] for k in ("PATH", "HOME", "TMPDIR", "LANG") if k in os.environ}
RATE = 400  # simulated tokens per second: an English answer takes ~8 s
PROMPT = "Draft a mutual NDA for a software partnership."


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what, predicate, timeout=30.0, interval=0.05):
    """Polls `predicate` until it returns a truthy value; fails with `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def http_get(port, path, headers=None, timeout=5.0):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


class CuttingProxy:
    """A loopback TCP proxy to one upstream. When armed, it cuts (closes both sides of) the
    next `POST /…/api/chat/stream` connection after `after_bytes` response bytes. While
    `dead`, every connection gets a 200 `text/event-stream` head and is then closed without
    a byte of body (a relay dying at once): the client sees a dropped stream, not an HTTP error."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.cut_after = None
        self.cuts = 0
        self.dead = False
        self.die_after_cut = False
        self.dead_answers = 0
        self.closed = False
        self.sockets = set()
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, after_bytes):
        with self.lock:
            self.cut_after = after_bytes

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.dead:
                threading.Thread(target=self._die, args=(client,), daemon=True).start()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self.lock:
                self.sockets.update((client, upstream))
            state = {"post_stream": False, "sent": 0}
            threading.Thread(target=self._pump, args=(client, upstream, state, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, state, False), daemon=True).start()

    def _die(self, client):
        try:
            client.settimeout(5)
            head = b""
            while b"\r\n\r\n" not in head:
                data = client.recv(65536)
                if not data:
                    break
                head += data
            client.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            with self.lock:
                self.dead_answers += 1
        except OSError:
            pass
        client.close()

    def _pump(self, src, dst, state, request_side):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if request_side and state["sent"] == 0 and data.startswith(b"POST ") and b"/api/chat/stream " in data.split(b"\r\n", 1)[0]:
                    state["post_stream"] = True
                if not request_side:
                    state["sent"] += len(data)
                    with self.lock:
                        cut = state["post_stream"] and self.cut_after is not None and state["sent"] >= self.cut_after
                        if cut:
                            self.cut_after = None
                            self.cuts += 1
                            self.dead = self.die_after_cut
                    if cut:
                        break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.closed = True
        self.listener.close()
        with self.lock:
            for s in self.sockets:
                try:
                    s.close()
                except OSError:
                    pass


class ChatDemoEndToEnd(unittest.TestCase):
    procs = []

    @classmethod
    def start(cls, args, env=None, log=None):
        p = subprocess.Popen(args, env=env if env is not None else minimal_env(), stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL)
        cls.procs.append(p)
        return p

    @classmethod
    def setUpClass(cls):
        if not BIN.exists():
            raise unittest.SkipTest(f"{BIN} missing: run swift build first")
        cls.tmp = pathlib.Path(tempfile.mkdtemp(prefix="jskit-e2e-"))
        try:
            cls._start_everything()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def _start_everything(cls):
        tmp = cls.tmp
        sock = tmp / "redis.sock"
        cls.start(["redis-server", "--port", "0", "--unixsocket", str(sock), "--save", "", "--appendonly", "no",
                   "--dir", str(tmp)])
        wait_until("redis-server", lambda: subprocess.run(["redis-cli", "-s", str(sock), "ping"], capture_output=True).stdout.strip() == b"PONG", 10)
        secret = os.urandom(24).hex()
        # An explicit, minimal environment (docs/TESTING.md): nothing ambient (RELAY_ADMIN_KEY,
        # RELAY_LOSSLESS_RESUME, …) reaches the relays.
        env = dict(minimal_env(), REDIS_URL=f"unix://{sock}", RELAY_JWT_SECRET=secret,
                   RELAY_SIMULATED_TOKENS_PER_SECOND=str(RATE), RELAY_WORKERS="1")
        cls.relay_ports = []
        for name in ("A", "B"):
            port = free_port()
            cls.relay_ports.append(port)
            with open(tmp / f"relay-{name}.log", "wb") as log:
                cls.start([str(BIN), "serve"], env=dict(env, RELAY_LISTEN=f"127.0.0.1:{port}", RELAY_INSTANCE=f"relay-{name}"), log=log)
        for port in cls.relay_ports:
            wait_until(f"relay on {port} ready", lambda: cls._ready(port), 20)
        cls.token = subprocess.run([str(BIN), "mint-token", "--sub", "e2e-user", "--sid", "e2e-session", "--tier", "pro", "--ttl", "3600"],
                                   env=env, capture_output=True, check=True, text=True).stdout.strip()
        cls.env = env
        cls.proxy = CuttingProxy(cls.relay_ports[0])
        cls.nginx_port = free_port()
        conf = subprocess.run([str(ROOT / "clients/js/demo/render-nginx-conf.sh"), f"127.0.0.1:{cls.nginx_port}",
                               f"127.0.0.1:{cls.proxy.port}", f"127.0.0.1:{cls.relay_ports[1]}"], capture_output=True, check=True, text=True).stdout
        (tmp / "nginx.conf").write_text(conf)
        user = "user root;" if os.getuid() == 0 else ""
        cls.start(["nginx", "-p", f"{tmp}/", "-e", f"{tmp}/nginx-error.log", "-c", str(tmp / "nginx.conf"),
                   "-g", f"pid {tmp}/nginx.pid; daemon off; {user}"])
        wait_until("nginx", lambda: cls._nginx_up(), 10)
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1000,900",
                  "--force-device-scale-factor=1", "--lang=en-US", "--no-first-run", "--disable-extensions"):
            options.add_argument(a)
        service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver", log_output=str(tmp / "chromedriver.log"))
        cls.driver = webdriver.Chrome(service=service, options=options)
        cls.driver.set_script_timeout(10)

    @classmethod
    def _ready(cls, port):
        try:
            return http_get(port, "/readyz", timeout=1)[0] == 200
        except OSError:
            return False

    @classmethod
    def _nginx_up(cls):
        try:
            return http_get(cls.nginx_port, "/demo/index.html", timeout=1)[0] == 200
        except OSError:
            return False

    @classmethod
    def tearDownClass(cls):
        driver = getattr(cls, "driver", None)
        if driver:
            try:
                driver.quit()
            except Exception:
                pass
        proxy = getattr(cls, "proxy", None)
        if proxy:
            proxy.close()
        for p in reversed(cls.procs):
            if p.poll() is None:
                p.terminate()
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

    def open_page(self):
        # A fresh document per test (a URL differing only in its fragment would not reload).
        self.driver.get(f"http://127.0.0.1:{self.nginx_port}/demo/?run={time.monotonic_ns()}#token={self.token}&base=/a,/b")
        wait_until("budget pill", lambda: "remaining" in self.driver.find_element(By.ID, "budget").text, 15)

    def send(self, model):
        Select(self.driver.find_element(By.ID, "model")).select_by_value(model)
        self.driver.find_element(By.ID, "send").click()
        return wait_until("answer started", lambda: self.driver.execute_script("return window.relayDemo.answers.length") > 0, 10) - 1

    def answer(self, index):
        return self.driver.execute_script("return window.relayDemo.answers[arguments[0]]", index)

    def wait_finished(self, index, timeout=60):
        return wait_until(f"answer {index} to end", lambda: (self.answer(index) or {}).get("completion") and self.answer(index), timeout, 0.2)

    def reference(self, model):
        """The simulated upstream's whole answer for `model`, its tokens joined
        (`stream-relay docs simulated MODEL`): an independent reference, not another run
        through a relay."""
        out = self.tmp / f"reference-{model}.txt"
        return subprocess.Popen([str(BIN), "docs", "simulated", model],
                                stdout=open(out, "wb"), stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                env=minimal_env()), out

    def screenshot(self, name):
        path = ROOT / "docs" / name
        path.parent.mkdir(exist_ok=True)
        self.driver.save_screenshot(str(path))

    def dom_text(self, index):
        return self.driver.execute_script(
            "return document.querySelector(`.answer-text[data-index='${arguments[0]}']`).textContent", index)

    # ---- tests ---------------------------------------------------------------------

    def test_1_english_answer_resumes_on_the_other_relay_byte_identical(self):
        self.open_page()
        ref_proc, ref_path = self.reference("simulated")
        self.proxy.arm(after_bytes=60_000)
        i = self.send("simulated")
        a = self.wait_finished(i)
        self.assertEqual(ref_proc.wait(timeout=60), 0, "reference run failed")
        self.assertEqual(self.proxy.cuts, 1, "the proxy cut the stream once")
        self.assertEqual(a["completion"], {"kind": "finished", "finishReason": "stop"})
        self.assertIn("reconnecting", a["statuses"])
        self.assertEqual(a["urls"], ["/a", "/b"], "sent to relay A (through the cutting proxy), resumed on relay B")
        self.assertGreaterEqual(a["telemetry"]["reconnections"], 1)
        self.assertEqual(sorted(a["telemetry"].keys()), ["latencyMs", "reconnections", "requestId", "tokensReceived"])
        reference = ref_path.read_bytes()
        self.assertGreater(len(reference), 5000)
        self.assertEqual(a["text"].encode("utf-8"), reference, "kit text differs from the simulated document")
        self.assertEqual(self.dom_text(i).encode("utf-8"), reference, "page text differs from the simulated document")
        self.assertEqual(a["layout"]["direction"], "ltr")
        progress = a["progressTexts"]
        self.assertTrue(progress and all(re.fullmatch(r"Drafting clause \d+ of \d+…", t) for t in progress), progress)
        self.assertGreater(len(progress), 3, "the clause count advanced while drafting")
        self.assertEqual(self.driver.find_element(By.CSS_SELECTOR, f".answer-text[data-index='{i}']").get_attribute("dir"), "ltr")
        self.screenshot("js-demo-english.png")

    def test_2_arabic_answer_is_rtl_before_its_first_glyph(self):
        self.open_page()
        ref_proc, ref_path = self.reference("simulated-ar")
        i = self.send("simulated-ar")
        a = self.wait_finished(i)
        self.assertEqual(ref_proc.wait(timeout=60), 0, "reference run failed")
        self.assertEqual(a["completion"]["kind"], "finished")
        self.assertEqual(a["text"].encode("utf-8"), ref_path.read_bytes())
        self.assertEqual(a["layout"], {"direction": "rtl", "isArabic": True, "lineHeight": 1.8})
        muts = self.driver.execute_script("return window.relayDemo.mutations.filter(m => m.answer === arguments[0])", i)
        self.assertTrue(muts, "the MutationObserver recorded nothing")
        self.assertEqual(muts[0]["type"], "attributes", f"the container's first change must be its dir, got {muts[0]}")
        self.assertEqual((muts[0]["oldDir"], muts[0]["dir"]), (None, "rtl"), "dir set to rtl from nothing")
        self.assertTrue(any(m["type"] == "childList" and m["added"] > 0 for m in muts[1:]), "text was inserted after dir")
        self.assertEqual([m for m in muts if m["type"] == "attributes"], muts[:1], "the direction is set once, never changed")
        box = self.driver.find_element(By.CSS_SELECTOR, f".answer-text[data-index='{i}']")
        self.assertEqual(box.get_attribute("dir"), "rtl")
        self.assertEqual(self.driver.execute_script("return getComputedStyle(arguments[0]).direction", box), "rtl")
        self.screenshot("js-demo-arabic.png")

    def test_3_resume_button_after_three_failed_reconnections(self):
        self.driver.get(f"http://127.0.0.1:{self.nginx_port}/demo/?run={time.monotonic_ns()}#token={self.token}&base=/a")
        wait_until("budget pill", lambda: "remaining" in self.driver.find_element(By.ID, "budget").text, 15)
        ref_proc, ref_path = self.reference("simulated")
        self.proxy.die_after_cut = True
        self.proxy.arm(after_bytes=20_000)
        try:
            i = self.send("simulated")
            a = self.wait_finished(i, 30)
            self.assertEqual(a["completion"], {"kind": "needsResume"})
            self.assertEqual(a["statuses"].count("reconnecting"), 3, a["statuses"])
            self.assertEqual(self.proxy.dead_answers, 3)
            button = self.driver.find_element(By.ID, f"resume-{i}")
            self.assertEqual(button.text, "Resume")
        finally:
            self.proxy.die_after_cut = False
            self.proxy.dead = False
        button.click()
        b = self.wait_finished(i + 1)
        self.assertEqual(ref_proc.wait(timeout=60), 0, "reference run failed")
        self.assertEqual(b["completion"], {"kind": "finished", "finishReason": "stop"})
        self.assertNotEqual(b["requestId"], a["requestId"], "Resume re-sends the whole request")
        self.assertEqual(b["text"].encode("utf-8"), ref_path.read_bytes())
        self.assertEqual(b["telemetry"]["reconnections"], 4, "3 reconnections + the manual resume")

    def test_4_stop_sends_delete_and_the_relay_stops_generating(self):
        self.open_page()
        i = self.send("simulated")
        wait_until("some text", lambda: len((self.answer(i) or {}).get("text", "")) > 300, 20)
        self.driver.find_element(By.ID, "stop").click()
        a = self.wait_finished(i, 10)
        self.assertEqual(a["completion"], {"kind": "stopped"})
        a = wait_until("DELETE answered", lambda: self.answer(i).get("cancelStatus") and self.answer(i), 15)
        self.assertEqual(a["cancelStatus"], 202)
        # Replay the whole stream from relay B: it ends with done(cancelled), far before the document's end.
        status, body = http_get(self.relay_ports[1], f"/api/chat/stream/{a['requestId']}",
                                {"Authorization": f"Bearer {self.token}", "Last-Event-ID": "0"}, timeout=15)
        self.assertEqual(status, 200)
        events = [json.loads(line[6:]) for line in body.decode("utf-8").split("\n") if line.startswith("data: ")]
        self.assertEqual(events[-1]["type"], "done", events[-1])
        self.assertEqual(events[-1]["finish_reason"], "cancelled")
        deltas = sum(1 for e in events if e["type"] == "delta")
        self.assertLess(deltas, 2500, "generation went on after the DELETE")
        self.assertEqual(self.driver.find_element(By.ID, "stop").get_attribute("disabled"), "true")


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    failed = len(result.failures) + len(result.errors)
    print(f"browser e2e: {result.testsRun - failed - len(result.skipped)} passed, {failed} failed, {len(result.skipped)} skipped")
    sys.exit(0 if result.wasSuccessful() and not result.skipped else 1)
