// The networking layer's entry point: RelayChatClient starts answers (each one a RelayStream,
// src/relayStream.js), reads the token budget and sends Stop's DELETE (conformance/CLIENT_RULES.md).
import { RelayStream } from './relayStream.js';
import { BudgetState } from './uiState.js';
import { fetchStreamsBodies, xhrFetch } from './xhrTransport.js';
import { RelayAPIError, decodeAPIError } from './relayAPIError.js';
import { systemClock } from './clock.js';

/** DELETE attempts on Stop, the pause between them (ms) and each one's timeout (ms). */
export const STOP_ATTEMPTS = 3;
export const STOP_RETRY_MS = 1000;
export const STOP_TIMEOUT_MS = 10000;

/**
 * @typedef {object} ClientOptions
 * @property {string[]} baseURLs relay base URLs (`https://host`, or a path prefix like `/r1` on the page's origin); reconnections rotate through them
 * @property {(info: {refresh: boolean}) => string | Promise<string>} token bearer token provider, called on every connection; `refresh: true` after `token_expired`
 * @property {typeof fetch} [fetch] a fetch whose `response.body` is a `ReadableStream` (React Native: `expo/fetch`); implies `transport: 'fetch'`
 * @property {'fetch' | 'xhr'} [transport] the HTTP stack: `fetch` (streamed bodies) or `xhr` (XMLHttpRequest progress events: bare
 *   React Native). Default: `fetch` when this runtime's fetch streams bodies (or `fetch` is given), else `xhr`.
 * @property {new () => any} [XMLHttpRequest] the XMLHttpRequest constructor for `transport: 'xhr'` (`globalThis.XMLHttpRequest`)
 * @property {'auto' | 'sse' | 'longPoll'} [readMode] `auto` (default): SSE, and long-poll for the rest of this client's life once
 *   a response looks buffered by a proxy (conformance/CLIENT_RULES.md "Buffering proxies"); `sse`: never switch; `longPoll`: from the start
 * @property {import('./clock.js').Clock} [clock]
 * @property {() => number} [random] [0, 1) source of the reconnection waits (ReconnectPolicy: full jitter, then backoff + 0–250 ms) and of request ids
 * @property {(record: {requestId: string, tokensReceived: number, latencyMs: number, reconnections: number}) => void} [telemetry]
 */

/** Starts chats against one or more relays and reads the token budget. */
export class RelayChatClient {
  /** @param {ClientOptions} options */
  constructor(options) {
    if (!options || !Array.isArray(options.baseURLs) || options.baseURLs.length === 0) throw new TypeError('RelayChatClient needs at least one base URL');
    this.baseURLs = options.baseURLs.map((u) => u.replace(/\/+$/, ''));
    this.token = options.token;
    const g = /** @type {any} */ (globalThis);
    /** @type {'fetch' | 'xhr'} the HTTP stack in use */
    this.transport = options.transport ?? (options.fetch || fetchStreamsBodies() || typeof g.XMLHttpRequest !== 'function' ? 'fetch' : 'xhr');
    if (this.transport === 'xhr') this.fetch = /** @type {any} */ (xhrFetch(options.XMLHttpRequest ?? g.XMLHttpRequest));
    else this.fetch = options.fetch ?? g.fetch.bind(globalThis);
    /** @type {'auto' | 'sse' | 'longPoll'} */
    this.readMode = options.readMode ?? 'auto';
    /** `true` once answers are read over long-poll: from the start (`readMode: 'longPoll'`) or since a buffered response. */
    this.longPoll = this.readMode === 'longPoll';
    /** @type {'silentAfterHeaders' | 'wholeBodyAtEnd' | null} why this client switched to long-poll, if it did */
    this.bufferingDetected = null;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.telemetry = options.telemetry ?? null;
    /** @type {BudgetState | null} the budget last read or updated by a `done` */
    this.budget = null;
  }

  /** @param {number} i */
  baseURL(i) { const n = this.baseURLs.length; return this.baseURLs[((i % n) + n) % n]; }

  /**
   * Starts an answer: `POST /api/chat/stream` at once.
   * @param {{messages: {role: string, content?: string|Object[]|null, tool_calls?: Object[], tool_call_id?: string}[],
   *   model?: string, max_tokens?: number, mode?: string,
   *   temperature?: number, top_p?: number, stop?: string|string[], seed?: number, presence_penalty?: number,
   *   frequency_penalty?: number, tools?: Object[], tool_choice?: string|Object}} request  the body
   *   (docs/PROTOCOL.md §3.1), sent as given
   * @param {import('./relayStream.js').StreamOptions} [options]
   */
  startChat(request, options = {}) {
    return new RelayStream(this, request, options, 0);
  }

  /** `GET /api/budget`, trying each base URL until one answers. @returns {Promise<BudgetState>} @throws {RelayAPIError} */
  async fetchBudget() {
    /** @type {any} */
    let last = new RelayAPIError(0, 'unreachable', 'no relay reachable');
    for (const base of this.baseURLs) {
      let res;
      try {
        res = await this.fetch(`${base}/api/budget`, { headers: { Authorization: `Bearer ${await this.token({ refresh: false })}` } });
      } catch (e) { last = e; continue; }
      const body = await res.text();
      if (res.status !== 200) throw decodeAPIError(res.status, body);
      this.budget = BudgetState.fromJSON(JSON.parse(body));
      return this.budget;
    }
    throw last;
  }

  /**
   * `DELETE /api/chat/stream/{id}`: at most 3 attempts 1 s apart, rotating base URLs from
   * `preferredIndex`, each with a 10 s timeout. Resolves to the status (202; 404 only when
   * every attempt got 404, which is retried: the relay may not have seen the POST yet) or null.
   * @param {string} requestId @param {number} [preferredIndex]
   */
  async cancel(requestId, preferredIndex = 0) {
    let notFound = false;
    for (let k = 0; k < STOP_ATTEMPTS; k++) {
      if (k > 0) await new Promise((r) => this.clock.setTimeout(() => r(undefined), STOP_RETRY_MS));
      const ac = new AbortController();
      const timer = this.clock.setTimeout(() => ac.abort(), STOP_TIMEOUT_MS);
      try {
        const token = await this.token({ refresh: false });
        const res = await this.fetch(`${this.baseURL(preferredIndex + k)}/api/chat/stream/${encodeURIComponent(requestId)}`, {
          method: 'DELETE', headers: { Authorization: `Bearer ${token}`, 'X-Request-Id': requestId }, signal: ac.signal,
        });
        try { await res.text(); } catch { /* body irrelevant */ }
        // A 404 may come from a relay that has not seen the POST yet and keeps no cancel for
        // it (PROTOCOL.md §7; a relay that does answers 202 "pending"): retried like a failure.
        if (res.status === 404) notFound = true;
        else if (res.status < 500) return res.status;
      } catch { /* network error or timeout: next attempt */ } finally { this.clock.clearTimeout(timer); }
    }
    return notFound ? 404 : null;
  }
}
