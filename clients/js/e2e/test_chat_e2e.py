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
* `upstream_lost` in the stream (the proxy answers with that `error` event): the page says "The
  relay restarted; continuing with a fresh answer…" and re-sends the request once, to relay B.

* Layout, at a phone's 390 × 844 CSS px (mobile emulation) and at 1280 × 800: Send and Stop
  inside the viewport, the budget pill on one line and not cut, no horizontal scrolling; the
  rendered answer never shows a Markdown marker (`**`, `##`, `---`, a `- ` or `# ` line): not in
  any block the page inserted while streaming (the page's MutationObserver checks each), not in
  its visible text polled all through the stream and at the end; the typing indicator is hidden
  on every ending (done, stop, lost connection).

Screenshots (empty state; English and Arabic, streaming and finished; phone and desktop) go to
$E2E_SCREENSHOT_DIR (default: a temporary folder, printed), or with UPDATE_SCREENSHOTS=1 to
docs/screenshots/, the ones clients/js/README.md shows.
Run: python3 clients/js/e2e/test_chat_e2e.py   (after `swift build`; needs chromium,
chromium-driver, nginx, redis-server, libjs-markdown-it and the pinned pip packages in
requirements.txt). STREAM_RELAY_BIN names another relay binary.
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from cutting_proxy import CuttingProxy
from e2e_support import free_port, http_get, minimal_env, serves, wait_until

ROOT = pathlib.Path(__file__).resolve().parents[3]
BIN = pathlib.Path(os.environ.get("STREAM_RELAY_BIN", ROOT / ".build/debug/stream-relay"))


RATE = 400  # simulated tokens per second: an English answer takes ~8 s
PROMPT = "Draft a mutual NDA for a software partnership."
PHONE = (390, 844)
DESKTOP = (1280, 800)
if os.environ.get("UPDATE_SCREENSHOTS") == "1":
    SCREENSHOTS = ROOT / "docs" / "screenshots"
else:
    SCREENSHOTS = pathlib.Path(os.environ.get("E2E_SCREENSHOT_DIR") or pathlib.Path(tempfile.gettempdir()) / "stream-relay-e2e-screenshots")
SCREENSHOT_MAX_BYTES = 150_000

# Visible text of the answer container and the layout facts the test checks, read in the page.
LAYOUT_JS = """
const vw = window.innerWidth, vh = window.innerHeight;
const inside = (id) => { const e = document.getElementById(id); if (e.hidden || e.offsetParent === null) return null;
  const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top, bottom: r.bottom,
  inside: r.left >= 0 && r.top >= 0 && r.right <= vw && r.bottom <= vh && r.width >= 32 && r.height >= 32}; };
const pill = document.getElementById('budget');
const range = document.createRange(); range.selectNodeContents(pill);
const lines = new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top))).size;
const a = arguments[0] == null ? null : window.relayDemo.answers[arguments[0]];
const main = document.getElementById('transcript');
const wide = main.scrollWidth > main.clientWidth + 1
  ? Array.from(main.querySelectorAll('*')).filter((e) => e.getBoundingClientRect().right > main.getBoundingClientRect().right + 1)
      .slice(0, 3).map((e) => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().width)}px`) : null;
return {ended: !!(a && a.completion), jump: !document.getElementById('jump').hidden, wide, vw, vh, send: inside('send'), stop: inside('stop'), pillLines: lines, pillCut: pill.scrollWidth > pill.clientWidth + 1,
  pillRight: pill.getBoundingClientRect().right, overflowX: document.documentElement.scrollWidth > vw};
"""
ANSWER_TEXT_JS = "const e = document.querySelector(`.answer-text[data-index='${arguments[0]}']`); return e ? e.innerText : null"
MARKER = re.compile(r"\*\*|##|---|``|(^|\n)[ \t]*([-*+#>]|\d+[.)])[ \t]*(\n|$)")


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
            wait_until(f"relay on {port} ready", lambda: serves(port, "/readyz"), 20)
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
        wait_until("nginx", lambda: serves(cls.nginx_port, "/demo/index.html"), 10)
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1000,900",
                  "--force-device-scale-factor=1", "--lang=en-US", "--no-first-run", "--disable-extensions"):
            options.add_argument(a)
        service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver", log_output=str(tmp / "chromedriver.log"))
        cls.driver = webdriver.Chrome(service=service, options=options)
        cls.driver.set_script_timeout(10)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        print(f"screenshots: {SCREENSHOTS}", file=sys.stderr)

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

    def viewport(self, size):
        """Emulates a phone (mobile viewport, touch) at PHONE, a desktop window otherwise."""
        w, h = size
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                    {"width": w, "height": h, "deviceScaleFactor": 1, "mobile": size == PHONE})
        self.driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": size == PHONE})
        if self.driver.execute_script("return document.readyState === 'complete' && !!document.getElementById('transcript')"):
            wait_until(f"a {w} px viewport", lambda: self.driver.execute_script("return window.innerWidth") == w, 5)
            # Two animation frames: the page's resize handler has run and the layout is painted.
            self.driver.execute_async_script("const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(done))")

    def open_page(self, base="/a,/b", size=PHONE):
        self.viewport(size)
        # A fresh document per test (a URL differing only in its fragment would not reload).
        self.driver.get(f"http://127.0.0.1:{self.nginx_port}/demo/?run={time.monotonic_ns()}#token={self.token}&base={base}")
        wait_until("budget pill", lambda: "remaining" in self.driver.find_element(By.ID, "budget").text, 15)

    def send(self, model):
        """Types PROMPT, picks `model` and presses Send."""
        Select(self.driver.find_element(By.ID, "model")).select_by_value(model)
        self.driver.find_element(By.ID, "prompt").send_keys(PROMPT)
        self.driver.find_element(By.ID, "send").click()
        return self.started()

    def started(self):
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
        """Saves the viewport as SCREENSHOTS/name. With UPDATE_SCREENSHOTS=1 (the committed ones)
        the PNG is then quantised with pngquant (a 256-colour palette: text stays sharp) and must
        stay under SCREENSHOT_MAX_BYTES; that runs after the test, not to slow the stream's shots."""
        path = SCREENSHOTS / name
        self.driver.save_screenshot(str(path))
        if os.environ.get("UPDATE_SCREENSHOTS") == "1":
            self.addCleanup(self.shrink, path)

    def shrink(self, path):
        pngquant = shutil.which("pngquant")
        self.assertIsNotNone(pngquant, "UPDATE_SCREENSHOTS=1 needs pngquant (scripts/install-deps.sh installs it)")
        subprocess.run([pngquant, "--quality", "70-95", "--speed", "1", "--strip", "--force", "--output", str(path), str(path)],
                       check=True, stdin=subprocess.DEVNULL)
        self.assertLess(path.stat().st_size, SCREENSHOT_MAX_BYTES, f"{path.name} is {path.stat().st_size} bytes")

    def visible_answer_text(self, index):
        return self.driver.execute_script(ANSWER_TEXT_JS, index)

    def assert_no_markers(self, index, where):
        text = self.visible_answer_text(index) or ""
        m = MARKER.search(text)
        self.assertIsNone(m, f"{where}: Markdown marker {m and m.group(0)!r} visible: …{text[max(0, (m.start() if m else 0) - 80):(m.end() if m else 0) + 40]!r}")
        return text

    def assert_no_marker_ever_inserted(self, index):
        """Every block the page inserted into answer `index` while it streamed (the page's
        MutationObserver checks each insertion's text) was free of Markdown markers."""
        muts = self.driver.execute_script("return window.relayDemo.mutations.filter(m => m.answer === arguments[0])", index)
        inserted = [m for m in muts if m["type"] == "childList" and m["added"] > 0]
        self.assertGreater(len(inserted), 20, "the answer was rendered in many steps")
        flashes = [m["marker"] for m in muts if "marker" in m]
        self.assertEqual(flashes, [], f"{len(flashes)} of {len(inserted)} insertions showed a Markdown marker")

    def assert_layout(self, where, busy, index=None):
        """Send (idle) or Stop (busy: while answer `index` runs) inside the viewport, the pill on
        one line and whole, no sideways scroll."""
        f = self.driver.execute_script(LAYOUT_JS, index)
        if busy and f["ended"]:
            busy = False   # the answer ended between two polls: Send is back
        button = f["stop"] if busy else f["send"]
        self.assertIsNotNone(button, f"{where}: {'Stop' if busy else 'Send'} not displayed: {f}")
        self.assertTrue(button["inside"], f"{where}: {'Stop' if busy else 'Send'} outside the {f['vw']}×{f['vh']} viewport: {button}")
        self.assertEqual(f["pillLines"], 1, f"{where}: the budget pill wraps: {f}")
        self.assertFalse(f["pillCut"], f"{where}: the budget pill is cut: {f}")
        self.assertLessEqual(f["pillRight"], f["vw"], f"{where}: the pill leaves the viewport: {f}")
        self.assertFalse(f["overflowX"], f"{where}: the page scrolls sideways: {f}")
        self.assertIsNone(f["wide"], f"{where}: the transcript scrolls sideways: {f}")
        self.assertFalse(f["jump"], f"{where}: 'Jump to latest' shown though nobody scrolled: {f}")

    def watch_stream(self, index, shots, min_chars=3000):
        """While answer `index` streams: checks the layout and the visible text for markers at
        every poll; once `min_chars` of text are shown, takes the `shots` ({size: name}), each
        at its viewport (ending at PHONE). Returns the number of mid-stream text samples."""
        samples = 0
        taken = False
        while not (self.answer(index) or {}).get("completion"):
            text = self.assert_no_markers(index, "mid-stream")
            if text:
                samples += 1
                self.assert_layout("mid-stream", busy=True, index=index)
            if not taken and len(text or "") >= min_chars:
                for size, name in shots.items():
                    self.viewport(size)
                    self.assert_layout(f"mid-stream at {size}", busy=True, index=index)
                    self.screenshot(name)
                    if os.environ.get("UPDATE_SCREENSHOTS") == "1":
                        self.assertFalse((self.answer(index) or {}).get("completion"), f"{name}: the answer ended before the screenshot")
                self.viewport(PHONE)
                taken = True
            time.sleep(0.1)
        self.assertTrue(taken, "the answer ended before a mid-stream screenshot")
        return samples

    def assert_finished_rendering(self, index, reference, shots):
        """The finished answer: rendered as a whole (the page's renderer applied to the reference
        gives the same blocks), headings/rules/bold counted from the reference, no marker visible,
        typing indicator hidden, Send back inside the viewport at every size."""
        text = reference.decode("utf-8")
        same = self.driver.execute_script("""
            const box = document.querySelector(`.answer-text[data-index='${arguments[0]}']`);
            const t = document.createElement('template'); t.innerHTML = window.relayDemo.renderMarkdown(arguments[1]);
            const html = (n) => Array.from(n.children, (c) => c.outerHTML).join('');
            return html(box) === html(t.content);""", index, text)
        self.assertTrue(same, "the streamed rendering differs from rendering the whole document at once")
        count = lambda sel: self.driver.execute_script(
            "return document.querySelectorAll(`.answer-text[data-index='${arguments[0]}'] ${arguments[1]}`).length", index, sel)
        self.assertEqual(count("h2"), len(re.findall(r"^## ", text, re.M)))
        self.assertEqual(count("hr"), len(re.findall(r"^---$", text, re.M)))
        self.assertEqual(count("strong"), text.count("**") // 2)
        self.assertGreater(count("li"), 5)
        self.assert_no_markers(index, "finished")
        self.assert_no_marker_ever_inserted(index)
        self.assertFalse(self.typing_visible(index), "typing indicator visible after the answer ended")
        for size, name in shots.items():
            self.viewport(size)
            self.assert_layout(f"finished at {size}", busy=False)
            self.screenshot(name)
        self.viewport(PHONE)

    def typing_visible(self, index):
        return self.driver.execute_script(
            "return document.querySelector(`.answer-text[data-index='${arguments[0]}']`).closest('.answer').querySelector('.typing').offsetParent !== null", index)

    def status_text(self, index):
        return self.driver.execute_script(
            "return document.querySelector(`.answer-text[data-index='${arguments[0]}']`).closest('.answer').querySelector('.status').innerText", index)

    # ---- tests ---------------------------------------------------------------------

    def test_1_english_answer_resumes_on_the_other_relay_byte_identical(self):
        self.open_page()
        self.assert_layout("empty state", busy=False)
        self.assertTrue(self.driver.find_element(By.ID, "empty").is_displayed())
        self.screenshot("phone-empty.png")
        self.viewport(DESKTOP)
        self.assert_layout("empty state, desktop", busy=False)
        self.screenshot("desktop-empty.png")
        self.viewport(PHONE)
        ref_proc, ref_path = self.reference("simulated")
        self.proxy.arm(after_bytes=60_000)
        self.driver.find_element(By.CSS_SELECTOR, ".suggestion[data-model='simulated']").click()   # the empty state's English chip
        i = self.started()
        self.assertFalse(self.driver.find_element(By.ID, "empty").is_displayed())
        samples = self.watch_stream(i, {PHONE: "phone-english-streaming.png", DESKTOP: "desktop-english-streaming.png"})
        self.assertGreater(samples, 10, "the visible text was checked all through the stream")
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
        self.assertEqual(a["shown"].encode("utf-8"), reference, "the page rendered all of the simulated document")
        self.assertEqual(a["layout"]["direction"], "ltr")
        progress = a["progressTexts"]
        self.assertTrue(progress and all(re.fullmatch(r"Drafting clause \d+ of \d+…", t) for t in progress), progress)
        self.assertGreater(len(progress), 3, "the clause count advanced while drafting")
        self.assertEqual(self.driver.find_element(By.CSS_SELECTOR, f".answer-text[data-index='{i}']").get_attribute("dir"), "ltr")
        self.assert_finished_rendering(i, reference, {DESKTOP: "desktop-english-finished.png", PHONE: "phone-english-finished.png"})

    def test_2_arabic_answer_is_rtl_before_its_first_glyph(self):
        self.open_page()
        ref_proc, ref_path = self.reference("simulated-ar")
        self.driver.find_element(By.CSS_SELECTOR, ".suggestion[data-model='simulated-ar']").click()   # the Arabic chip
        i = self.started()
        self.assertGreater(self.watch_stream(i, {PHONE: "phone-arabic-streaming.png", DESKTOP: "desktop-arabic-streaming.png"}, 1500), 2)
        a = self.wait_finished(i)
        self.assertEqual(ref_proc.wait(timeout=60), 0, "reference run failed")
        self.assertEqual(a["completion"]["kind"], "finished")
        self.assertEqual(a["text"].encode("utf-8"), ref_path.read_bytes())
        self.assertEqual(a["model"], "simulated-ar")
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
        # Each block takes its own direction (dir="auto"): the Arabic ones are right-to-left.
        self.assertTrue(self.driver.execute_script(
            "return Array.from(arguments[0].querySelectorAll('p, li, h2')).every((e) => getComputedStyle(e).direction === 'rtl')", box))
        self.assert_finished_rendering(i, ref_path.read_bytes(), {DESKTOP: "desktop-arabic-finished.png", PHONE: "phone-arabic-finished.png"})

    def test_3_resume_button_after_three_failed_reconnections(self):
        self.open_page(base="/a", size=PHONE)
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
            self.assertEqual(self.status_text(i).splitlines()[0].strip(), "Connection lost.")
            self.assertFalse(self.typing_visible(i), "typing indicator visible after the connection was lost")
            self.assert_layout("connection lost", busy=False)
            self.screenshot("phone-connection-lost.png")
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

    def test_3b_upstream_lost_is_said_in_words_and_the_request_re_sent_once(self):
        # docs/PROTOCOL.md §8.3: `upstream_lost` → re-send the request; the page does it once by itself.
        self.open_page(size=PHONE)
        self.proxy.fail_next({"type": "error", "status": 503, "code": "upstream_lost", "message": "the instance generating the answer stopped"})
        self.driver.find_element(By.CSS_SELECTOR, ".suggestion[data-model='simulated']").click()
        i = self.started()
        a = self.wait_finished(i, 15)
        self.assertEqual(a["completion"]["code"], "upstream_lost")
        self.assertEqual(self.status_text(i).strip(), "The relay restarted; continuing with a fresh answer…")
        self.assertFalse(self.typing_visible(i), "typing indicator visible under the failure")
        self.assertEqual(self.driver.find_elements(By.ID, f"resume-{i}"), [], "no button: the page re-sends by itself")
        b = wait_until("the re-sent answer", lambda: self.answer(i + 1), 10)
        self.assertEqual(b["urls"][0], "/b", "re-sent to the next relay")
        self.assertNotEqual(b["requestId"], a["requestId"])
        self.wait_finished(i + 1)
        self.assertEqual(self.answer(i + 1)["completion"], {"kind": "finished", "finishReason": "stop"})
        self.assert_no_markers(i + 1, "re-sent answer")

    def test_5_agent_answer_shows_its_steps_and_resumes_inside_a_tool_call(self):
        """The built-in agent answer (docs/AGENTS.md) at phone width: its reasoning, two tool
        calls with their input and output, and a source appear as steps above the text; the
        stream is cut once inside the first call's arguments and resumed on relay B; the text is
        the answer's own, and no step shows twice."""
        self.open_page()
        ref_proc, ref_path = self.reference("simulated-tools")
        cuts = self.proxy.cuts   # the proxy serves every test: count this test's cut
        self.proxy.arm(after_bytes=3_600)   # past the reasoning (45 events), inside call_1's arguments
        self.driver.find_element(By.CSS_SELECTOR, ".suggestion[data-model='simulated-tools']").click()
        i = self.started()
        a = self.wait_finished(i)
        self.assertEqual(ref_proc.wait(timeout=60), 0, "reference run failed")
        self.assertEqual(self.proxy.cuts - cuts, 1, "the proxy cut the stream once")
        self.assertEqual(a["completion"], {"kind": "finished", "finishReason": "stop"})
        self.assertEqual(a["urls"], ["/a", "/b"], "sent to relay A (through the cutting proxy), resumed on relay B")
        self.assertEqual(a["text"].encode("utf-8"), ref_path.read_bytes(), "the text is the deltas alone, whole")
        steps = self.driver.execute_script("""
            const box = document.querySelector(`.answer-text[data-index='${arguments[0]}']`).closest('.answer').querySelector('.steps');
            return {hidden: box.hidden,
                    reasoning: box.querySelectorAll('.step.reasoning').length,
                    calls: Array.from(box.querySelectorAll('.step.tool'), (d) => [d.dataset.callId, d.dataset.state,
                                                                                 d.querySelector('.step-input').textContent]),
                    sources: Array.from(box.querySelectorAll('a.step.source'), (x) => x.href),
                    parts: window.relayDemo.answers[arguments[0]].parts};""", i)
        self.assertFalse(steps["hidden"])
        self.assertEqual(steps["reasoning"], 1)
        self.assertEqual([c[:2] for c in steps["calls"]], [["call_1", "result"], ["call_2", "result"]], steps)
        self.assertIn('"country":"SA"', steps["calls"][0][2], "the first call's whole input, after the cut inside its arguments")
        self.assertEqual(steps["sources"], ["https://example.com/guides/saudi-contract-law"])
        self.assertGreater(steps["parts"], 60, "every part once (reasoning pieces, argument pieces, ends, results, the source)")
        self.assert_layout("agent answer finished", busy=False)
        self.screenshot("phone-agent-finished.png")

    def test_4_stop_sends_delete_and_the_relay_stops_generating(self):
        self.open_page(size=DESKTOP)
        i = self.send("simulated")
        wait_until("some text", lambda: len((self.answer(i) or {}).get("text", "")) > 300, 20)
        stop = self.driver.find_element(By.ID, "stop")
        # Stop is shown while the answer is written; if it is not, say what the answer did.
        wait_until("the Stop button shown", lambda: stop.is_displayed() or self.answer(i).get("completion"), 5)
        self.assertTrue(stop.is_displayed(), f"Stop hidden while the answer is written: {self.answer(i).get('completion')} "
                        f"statuses {self.answer(i).get('statuses')}")
        stop.click()
        a = self.wait_finished(i, 10)
        self.assertEqual(a["completion"], {"kind": "stopped"})
        self.assertEqual(self.status_text(i).strip(), "Stopped.")
        self.assertFalse(self.typing_visible(i), "typing indicator visible after Stop")
        self.assert_no_markers(i, "stopped")
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
