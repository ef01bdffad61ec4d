// One answer being streamed over fetch + ReadableStream (or XMLHttpRequest progress events), with
// ReconnectPolicy and ResponseRenderer; long-poll once a proxy buffers the event stream (conformance/CLIENT_RULES.md).
import { SSEParser } from './sseParser.js';
import { ReconnectPolicy, isEventStream } from './reconnectPolicy.js';
import { ResponseRenderer, isBudgetLimited } from './responseRenderer.js';
import { AnswerParts, parsePart } from './answerParts.js';
import { RENDER_INTERVAL_MS } from './renderBuffer.js';
import { networkAdvice, telemetryRecord, SLOW_RTT_MS, SLOW_BACKOFF_MS } from './uiState.js';
import { ProxyBufferingDetector } from './proxyBuffering.js';
import { decodeAPIError, parseRetryAfter, MAX_ERROR_BODY } from './relayAPIError.js';
import { randomRequestId } from './requestId.js';

/** Shortest time between the sends of two long-poll reads when the first brought no event, ms (a relay waits up to 20 s). */
export const LONG_POLL_MIN_INTERVAL_MS = 1000;

/**
 * @typedef {object} StreamOptions
 * @property {string} [requestId] `X-Request-Id` (random by default)
 * @property {number | null} [expectedSections] number of clauses, when the app knows it
 * @property {import('./uiState.js').NetworkConditions | null} [network] the device's network (NetInfo / navigator.connection)
 * @property {number} [firstURLIndex] index into baseURLs of the first connection
 * @property {(update: ChatUpdate) => void} [onUpdate] receives every update
 */

/**
 * One element of a stream's updates, in order:
 * `{kind:'layout', layout}` (direction decided, before any text), `{kind:'render', update}`,
 * `{kind:'parts', update}` (a typed part arrived: reasoning, tool call, source, data; docs/PROTOCOL.md §5.5),
 * `{kind:'connection', status, attempt?, url?, lastEventId?, delayMs?}`,
 * `{kind:'advice', advice}`, `{kind:'budget', budget}`, and last `{kind:'telemetry', record}`.
 * @typedef {{kind: string, [k: string]: any}} ChatUpdate
 */

/** One answer being streamed. Subscribe with `onUpdate`, `subscribe()` or `for await`. */
export class RelayStream {
  /** @param {import('./relayClient.js').RelayChatClient} client @param {any} request @param {StreamOptions} options @param {number} priorReconnections */
  constructor(client, request, options, priorReconnections) {
    this.client = client;
    this.request = request;
    this.options = options;
    this.requestId = options.requestId ?? randomRequestId(client.random);
    this._prior = priorReconnections;
    /** @type {((u: ChatUpdate) => void)[]} */
    this._listeners = options.onUpdate ? [options.onUpdate] : [];
    /** @type {ChatUpdate[]} */
    this._queue = [];
    /** @type {((v: IteratorResult<ChatUpdate>) => void) | null} */
    this._waiter = null;
    this._closed = false;
    const now = client.clock.now();
    this.startedAt = now;
    this.advice = networkAdvice(options.network ?? null);
    this.policy = new ReconnectPolicy({ backoffMs: this.advice.reconnectBackoffMs, random: client.random });
    this.renderer = new ResponseRenderer(now, { expectedSections: options.expectedSections ?? null });
    /** The answer's typed parts so far (each part event once: seqs already had are skipped). */
    this.parts = new AnswerParts();
    this._parser = new SSEParser();
    this._urlIndex = options.firstURLIndex ?? 0;
    this._connId = 0;
    /** @type {AbortController | null} */
    this._abort = null;
    /** @type {ProxyBufferingDetector | null} the buffering check of the open SSE response */
    this._detector = null;
    this._detectorTimer = null;
    /** @type {string | null} the last `Stream-Cursor` (sent back as `cursor`, Durable Streams §5.7) */
    this._cursor = null;
    this._ended = false;
    this._layoutSent = false;
    this._renderTimer = null;
    this._deadlineTimer = null;
    /** @type {import('./reconnectPolicy.js').Completion | null} */
    this.completion = null;
    /** Resolves when the stream has ended, with its completion. */
    this.finished = new Promise((resolve) => { this._resolveFinished = resolve; });
    queueMicrotask(() => this._start());
  }

  /** @param {(u: ChatUpdate) => void} fn @returns {() => void} unsubscribe */
  subscribe(fn) { this._listeners.push(fn); return () => { this._listeners = this._listeners.filter((f) => f !== fn); }; }

  [Symbol.asyncIterator]() {
    return {
      next: () => {
        if (this._queue.length) return Promise.resolve({ value: /** @type {ChatUpdate} */ (this._queue.shift()), done: false });
        if (this._closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((r) => { this._waiter = r; });
      },
    };
  }

  /** Stop: the UI gets `stopped` at once; the DELETE goes out in the background. */
  stop() { this._perform(this.policy.stop()); }

  /** The app went to the background: render updates pause. */
  enterBackground() { this.renderer.enterBackground(); this.policy.enterBackground(this.client.clock.now()); }

  /** The app is back: buffered text is replayed; a dropped stream reconnects at once. */
  enterForeground() {
    const now = this.client.clock.now();
    const u = this.renderer.enterForeground(now);
    if (u) this._render(u);
    this._perform(this.policy.enterForeground(now));
    if (this._ended && !this.renderer.isBackground) this._close();
  }

  /** The manual Resume / Retry: re-sends the whole request as a new stream (new id, next base URL). */
  resume() {
    return new RelayStream(this.client, this.request, { ...this.options, requestId: undefined, firstURLIndex: this._urlIndex + 1 },
      this._prior + this.policy.reconnections + 1);
  }

  // ---- internals ----

  /** @param {ChatUpdate} u */
  _emit(u) {
    for (const f of this._listeners) { try { f(u); } catch (e) { queueMicrotask(() => { throw e; }); } }
    if (this._waiter) { const w = this._waiter; this._waiter = null; w({ value: u, done: false }); } else this._queue.push(u);
  }

  _start() {
    if (this.advice.warning || this.advice.suggestsSummaryMode) this._emit({ kind: 'advice', advice: this.advice });
    this._scheduleRender();
    this._perform(this.policy.start(this.client.clock.now()));
  }

  _scheduleRender() {
    this._renderTimer = this.client.clock.setTimeout(() => {
      this._renderTimer = null;
      if (this._ended) return;
      const u = this.renderer.tick(this.client.clock.now());
      if (u) this._render(u);
      this._scheduleRender();
    }, RENDER_INTERVAL_MS);
  }

  _scheduleDeadline() {
    if (this._deadlineTimer !== null) this.client.clock.clearTimeout(this._deadlineTimer);
    this._deadlineTimer = null;
    const d = this.policy.nextDeadline;
    if (d === null || this._ended) return;
    this._deadlineTimer = this.client.clock.setTimeout(() => {
      this._deadlineTimer = null;
      this._perform(this.policy.tick(this.client.clock.now()));
    }, Math.max(0, d - this.client.clock.now()));
  }

  /** @param {import('./responseRenderer.js').RenderUpdate} u */
  _render(u) {
    if (!this._layoutSent && u.layout) {
      this._layoutSent = true;
      this._emit({ kind: 'layout', layout: u.layout });
    }
    this._emit({ kind: 'render', update: u });
  }

  /** @param {import('./reconnectPolicy.js').Action} a */
  _perform(a) {
    switch (a.type) {
      case 'sendRequest':
        this._emit({ kind: 'connection', status: 'connecting', url: this.client.baseURL(this._urlIndex) });
        this._connect(true, 0, false);
        break;
      case 'reconnect':
        this._urlIndex += 1;
        this._emit({ kind: 'connection', status: 'reconnecting', attempt: this.policy.attempt, url: this.client.baseURL(this._urlIndex), lastEventId: a.lastEventId });
        this._connect(a.lastEventId === 0, a.lastEventId, a.refreshToken);
        break;
      case 'wait':
        this._emit({ kind: 'connection', status: 'waitingToReconnect', attempt: this.policy.attempt, delayMs: a.until - this.client.clock.now() });
        break;
      case 'stop':
        this._dropConnection();
        this.client.cancel(this.requestId, this._urlIndex).then((status) => this._emit({ kind: 'cancelled', status }));
        this._complete({ kind: 'stopped' });
        break;
      case 'finish':
        this._dropConnection();
        this._complete(a.completion);
        break;
      default: break;
    }
    this._scheduleDeadline();
  }

  _dropConnection() {
    this._connId += 1;
    if (this._abort) { const ac = this._abort; this._abort = null; ac.abort(); }
  }

  /** The bearer token for a connection of `id`; null when the stream moved on (or the provider failed: handled). @param {number} id @param {boolean} refresh */
  async _token(id, refresh) {
    try {
      const token = await this.client.token({ refresh });
      return id !== this._connId || this._ended ? null : token;
    } catch (e) {
      if (id !== this._connId || this._ended) return null;
      this._perform(this.policy.responseOpened(401, null, { code: 'unauthorized', message: `no bearer token: ${e}` }, this.client.clock.now()));
      return null;
    }
  }

  /** @param {boolean} post @param {number} lastEventId @param {boolean} refresh */
  async _connect(post, lastEventId, refresh) {
    if (!post && this.client.longPoll) return this._poll(lastEventId, refresh);
    const id = ++this._connId;
    this._parser.finish();
    this._clearDetector();
    const clock = this.client.clock;
    const token = await this._token(id, refresh);
    if (token === null) return;
    const base = this.client.baseURL(this._urlIndex);
    /** @type {Record<string, string>} */
    const headers = { Authorization: `Bearer ${token}`, Accept: 'text/event-stream', 'X-Request-Id': this.requestId, 'Cache-Control': 'no-store' };
    /** @type {RequestInit} */
    const init = { headers, cache: 'no-store' };
    let url;
    if (post) {
      url = `${base}/api/chat/stream`;
      init.method = 'POST';
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(this.request);
    } else {
      url = `${base}/api/chat/stream/${encodeURIComponent(this.requestId)}`;
      init.method = 'GET';
      headers['Last-Event-ID'] = String(lastEventId);
    }
    const ac = new AbortController();
    this._abort = ac;
    init.signal = ac.signal;
    const sentAt = clock.now();
    let res;
    try {
      res = await this.client.fetch(url, init);
    } catch {
      if (id !== this._connId || this._ended) return;
      this._lost();
      return;
    }
    if (id !== this._connId || this._ended) return;
    const now = clock.now();
    if (now - sentAt > SLOW_RTT_MS) this.policy.backoffMs = Math.max(this.policy.backoffMs, SLOW_BACKOFF_MS);
    const ct = res.headers.get('content-type');
    if (res.status !== 200) {
      let body = '';
      try { body = (await res.text()).slice(0, MAX_ERROR_BODY); } catch { /* keep empty */ }
      if (id !== this._connId || this._ended) return;
      const e = decodeAPIError(res.status, body);
      this._perform(this.policy.responseOpened(res.status, ct, { code: e.code, message: e.detail, retryAfterSec: parseRetryAfter(res.headers.get('retry-after')) }, clock.now()));
      return;
    }
    this._perform(this.policy.responseOpened(200, ct, {}, now));
    if (this.policy.state !== 'streaming') return;
    if (this.client.longPoll) {
      // The POST started (or found) the answer; its events are read over long-poll.
      this._dropConnection();
      this._pollNext(0);
      return;
    }
    await this._readSSE(res, id, sentAt, now);
  }

  /**
   * Reads an open 200 text/event-stream response to its end, watching it for a buffering proxy.
   * @param {any} res @param {number} id the connection @param {number} sentAt @param {number} now when the head arrived
   */
  async _readSSE(res, id, sentAt, now) {
    const clock = this.client.clock;
    this._emit({ kind: 'connection', status: 'streaming' });
    if (this.client.readMode === 'auto') this._watch(new ProxyBufferingDetector(sentAt), now);
    try {
      if (res.body && typeof res.body.getReader === 'function') {
        const reader = res.body.getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (id !== this._connId || this._ended) { reader.cancel().catch(() => {}); return; }
          if (done) break;
          if (!this._feed(value)) return;
        }
      } else {
        // A fetch without streaming bodies: all at once at the end (the detector sees a whole body).
        const text = await res.text();
        if (id !== this._connId || this._ended) return;
        if (!this._feed(text)) return;
      }
    } catch {
      if (id !== this._connId || this._ended) return;
    }
    if (id !== this._connId || this._ended) return;
    const d = this._detector;
    this._clearDetector();
    if (d && d.ended(clock.now()).decision === 'longPoll') { this._switchToLongPoll(d); return; }
    this._lost();
  }

  /** Watches the first-byte bound of an SSE response. @param {ProxyBufferingDetector} d @param {number} headersAt */
  _watch(d, headersAt) {
    this._detector = d;
    d.headers(headersAt);
    const deadline = d.deadline;
    if (deadline === null) return;
    const id = this._connId;
    this._detectorTimer = this.client.clock.setTimeout(() => {
      this._detectorTimer = null;
      if (id !== this._connId || this._ended || this._detector !== d) return;
      if (d.tick(this.client.clock.now()).decision === 'longPoll') this._switchToLongPoll(d);
    }, Math.max(0, deadline - headersAt));
  }

  _clearDetector() {
    if (this._detectorTimer != null) this.client.clock.clearTimeout(this._detectorTimer);
    this._detectorTimer = null;
    this._detector = null;
  }

  /**
   * A buffered response: this client reads over long-poll from now on, and this answer goes on from
   * its last event id at once (no wait, not a reconnection). @param {ProxyBufferingDetector} d
   */
  _switchToLongPoll(d) {
    const v = d.verdict;
    this.client.longPoll = true;
    if (v.decision === 'longPoll') this.client.bufferingDetected ??= v.reason;
    this._clearDetector();
    this._emit({ kind: 'connection', status: 'longPoll', reason: v.decision === 'longPoll' ? v.reason : null, lastEventId: this.policy.lastEventId });
    this._dropConnection();
    if (this._ended) return;
    this._pollNext(0);
  }

  /**
   * Sends the next long-poll read from the last event id, after `delayMs` (a read that brought nothing
   * sooner than `LONG_POLL_MIN_INTERVAL_MS` after it was sent is not repeated at once). @param {number} delayMs
   */
  _pollNext(delayMs) {
    const go = () => {
      if (this._ended) return;
      this.policy.pollSent(this.client.clock.now());
      this._scheduleDeadline();
      this._poll(this.policy.lastEventId, false);
    };
    if (delayMs <= 0) { go(); return; }
    const id = ++this._connId;
    this.client.clock.setTimeout(() => { if (id === this._connId) go(); }, delayMs);
  }

  /**
   * One long-poll read: `GET /api/chat/stream/{id}?offset=<last>&live=long-poll` (the relay's catch-up read;
   * offset -1 before any event). 200: a JSON array of events, fed like SSE events (the last one's seq is
   * `Stream-Next-Offset`); 204: none yet (`Stream-Closed: true`: the answer is over). Errors as on a resume.
   * @param {number} lastEventId @param {boolean} refresh
   */
  async _poll(lastEventId, refresh) {
    const id = ++this._connId;
    this._parser.finish();
    this._clearDetector();
    const clock = this.client.clock;
    const token = await this._token(id, refresh);
    if (token === null) return;
    const base = this.client.baseURL(this._urlIndex);
    let url = `${base}/api/chat/stream/${encodeURIComponent(this.requestId)}?offset=${lastEventId > 0 ? lastEventId : -1}&live=long-poll`;
    if (this._cursor !== null) url += `&cursor=${encodeURIComponent(this._cursor)}`;
    const ac = new AbortController();
    this._abort = ac;
    const sentAt = clock.now();
    const init = { method: 'GET', headers: { Authorization: `Bearer ${token}`, Accept: 'application/json', 'X-Request-Id': this.requestId, 'Cache-Control': 'no-store' },
      cache: /** @type {RequestCache} */ ('no-store'), signal: ac.signal };
    let res;
    let body = '';
    try {
      res = await this.client.fetch(url, init);
      if (id !== this._connId || this._ended) return;
      if (res.status === 200 && isEventStream(res.headers.get('content-type'))) {
        // A relay without the long-poll read ignored `offset` and resumed over SSE (from the start:
        // the seqs already seen are skipped). This client reads over SSE again and never switches back.
        this.client.longPoll = false;
        this.client.readMode = 'sse';
        const now = clock.now();
        this._perform(this.policy.responseOpened(200, res.headers.get('content-type'), {}, now));
        if (this.policy.state !== 'streaming') return;
        await this._readSSE(res, id, sentAt, now);
        return;
      }
      body = res.status === 204 ? '' : await res.text();
    } catch {
      if (id !== this._connId || this._ended) return;
      this._lost();
      return;
    }
    if (id !== this._connId || this._ended) return;
    this._abort = null;
    const h = (/** @type {string} */ n) => res.headers.get(n);
    const closed = (h('stream-closed') ?? '').trim().toLowerCase() === 'true';
    const cursor = h('stream-cursor');
    if (cursor) this._cursor = cursor;
    const status = res.status;
    const ct = h('content-type');
    let info = {};
    if (status !== 200 && status !== 204) {
      const e = decodeAPIError(status, body.slice(0, MAX_ERROR_BODY));
      info = { code: e.code, message: e.detail, retryAfterSec: parseRetryAfter(h('retry-after')) };
    }
    this._perform(this.policy.pollOpened(status, ct, closed, info, clock.now()));
    if (this.policy.state !== 'streaming' || this._ended) return;
    let got = 0;
    if (status === 200) {
      let events;
      try { events = JSON.parse(body); } catch { events = null; }
      const next = (h('stream-next-offset') ?? '').trim();
      if (!Array.isArray(events) || !/^[0-9]{1,20}$/.test(next)) { this._lost(); return; }
      got = events.length;
      events.forEach((ev, i) => {
        if (id !== this._connId || this._ended) return;
        this._received(JSON.stringify(ev), i === events.length - 1 ? String(Number(next)) : '');
      });
      if (id !== this._connId || this._ended) return;
      if (closed) { this._perform(this.policy.streamClosed(clock.now())); return; }
    }
    this._pollNext(got > 0 ? 0 : LONG_POLL_MIN_INTERVAL_MS - (clock.now() - sentAt));
  }

  _lost() {
    this._connId += 1;
    this._abort = null;
    this._parser.finish();
    this._clearDetector();
    this._perform(this.policy.connectionLost(this.client.clock.now()));
  }

  /** Parses a chunk and handles its events. `false` when the connection was dropped or the answer ended. @param {Uint8Array | string} chunk */
  _feed(chunk) {
    let items;
    try { items = this._parser.feed(chunk); } catch { this._dropConnection(); this._lost(); return false; }
    const id = this._connId;
    const d = this._detector;
    if (d && d.verdict.decision === 'undecided') {
      const events = items.filter((it) => it.kind === 'event');
      const terminal = events.some((it) => { try { const t = JSON.parse(it.data)?.type; return t === 'done' || t === 'error'; } catch { return false; } });
      const before = d.verdict.decision;
      const v = d.read(this.client.clock.now(), chunk.length, events.length, terminal);
      if (v.decision === 'longPoll' && before !== 'longPoll') {
        if (v.reason === 'silentAfterHeaders') { this._switchToLongPoll(d); return false; }
        // A whole body: its events are all here; this answer ends with them, later ones use long-poll.
        this.client.longPoll = true;
        this.client.bufferingDetected ??= v.reason;
        this._emit({ kind: 'connection', status: 'longPoll', reason: v.reason, lastEventId: this.policy.lastEventId });
      }
    }
    for (const it of items) {
      if (it.kind !== 'event') continue;
      this._received(it.data, it.lastEventId);
      if (id !== this._connId || this._ended) return false;
    }
    return true;
  }

  /** @param {string} data @param {string} lastEventId */
  _received(data, lastEventId) {
    const now = this.client.clock.now();
    const seq = /^[0-9]+$/.test(lastEventId) ? Number(lastEventId) : null;
    let event = null;
    try { event = JSON.parse(data); } catch { event = null; }
    const terminal = event && (event.type === 'done' || event.type === 'error');
    // Already seen (the relay's terminal `error` repeats the last delta's seq: not skipped).
    if (seq !== null && seq <= this.policy.lastEventId && !terminal) return;
    const action = this.policy.eventReceived(seq, event, now);
    const refreshing = event && event.type === 'error' && action.type !== 'finish';
    if (event && !refreshing) {
      const u = this.renderer.receive(event, now);
      if (u) this._render(u);
      const part = this.renderer.completion === null ? parsePart(event) : null;
      if (part) this._emit({ kind: 'parts', update: this.parts.receive(part) });
      if (event.type === 'done' && this.client.budget && event.usage) {
        this.client.budget.apply(event.usage, isBudgetLimited(event));
        this._emit({ kind: 'budget', budget: this.client.budget });
      }
    }
    if (refreshing) this._dropConnection();
    this._perform(action);
  }

  /** @param {import('./reconnectPolicy.js').Completion} c */
  _complete(c) {
    if (this._ended) return;
    this._ended = true;
    this.completion = c;
    const u = this.renderer.finish(c, this.client.clock.now());
    if (u) this._render(u);
    if (this._renderTimer !== null) this.client.clock.clearTimeout(this._renderTimer);
    if (this._deadlineTimer !== null) this.client.clock.clearTimeout(this._deadlineTimer);
    this._renderTimer = this._deadlineTimer = null;
    this._clearDetector();
    if (!this.renderer.isBackground) this._close();
  }

  _close() {
    if (this._closed) return;
    const first = this.renderer.firstTokenAt;
    const record = telemetryRecord(this.requestId, this.renderer.tokensReceived, first === null ? 0 : first - this.startedAt,
      this._prior + this.policy.reconnections);
    if (this.client.telemetry) this.client.telemetry(record);
    this._emit({ kind: 'telemetry', record });
    this._closed = true;
    if (this._waiter) { const w = this._waiter; this._waiter = null; w({ value: undefined, done: true }); }
    /** @type {any} */ (this)._resolveFinished(this.completion);
  }
}
