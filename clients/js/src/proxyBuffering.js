// Detects a buffering proxy on one text/event-stream response (conformance/CLIENT_RULES.md
// "Buffering proxies"; vectors conformance/buffering.json). Pure: every time is an argument
// in ms on one clock. The same decision as the Swift kit's ProxyBufferingDetector.

/** Longest wait from the response head to its first body byte on a streaming path, ms: RELAY_HEARTBEAT 15 s + the 1 s check + 4 s margin. */
export const FIRST_BYTE_BOUND_MS = 20000;
/** Events that must arrive in the single read to call it a whole body. */
export const BURST_MIN_EVENTS = 3;
/** Shortest time from the request to the single read for a whole body, ms. */
export const BURST_MIN_WAIT_MS = 5000;
/** Longest time from the single read to the body's end for a whole body, ms. */
export const BURST_END_WINDOW_MS = 1000;

/**
 * `undecided`, `stream` (stay on SSE), or `longPoll` with its reason.
 * @typedef {{decision: 'undecided'} | {decision: 'stream'} | {decision: 'longPoll', reason: 'silentAfterHeaders' | 'wholeBodyAtEnd'}} BufferingVerdict
 */

/**
 * Two signs, each impossible on a streaming path:
 * * silent after the head: the head arrived at H and no body byte by H + 20 s (the relay writes
 *   each event as it comes, `retry:` in the first event's block, and `: ping` after any silence of
 *   15 s, checked each second, PROTOCOL.md §4.1);
 * * whole body at the end: every event of the response arrived in one read of at least 3 events, at
 *   least 5 s after the request was sent, and the body ended at most 1 s after it (a read that
 *   completes the terminal `done`/`error` is the end). Reads without events (`retry:`, pings) do not count.
 * Events in two reads, or an end without either sign → `stream`, for good.
 */
export class ProxyBufferingDetector {
  /** @param {number} sentAt when the request was sent, ms */
  constructor(sentAt) {
    this.sentAt = sentAt;
    /** @type {BufferingVerdict} */
    this.verdict = { decision: 'undecided' };
    /** @type {number | null} */
    this._headersAt = null;
    this._sawByte = false;
    this._eventReads = 0;
    /** @type {{at: number, events: number} | null} */
    this._burst = null;
  }

  /** When `tick` must be called (the first-byte bound), ms, or null. */
  get deadline() {
    if (this.verdict.decision !== 'undecided' || this._sawByte || this._headersAt === null) return null;
    return this._headersAt + FIRST_BYTE_BOUND_MS;
  }

  /** The response head (200 text/event-stream) arrived. @param {number} at */
  headers(at) { if (this._headersAt === null) this._headersAt = at; }

  /** @param {number} now @returns {BufferingVerdict} */
  tick(now) {
    const d = this.deadline;
    if (d !== null && now >= d) this.verdict = { decision: 'longPoll', reason: 'silentAfterHeaders' };
    return this.verdict;
  }

  /**
   * A read of the body: `bytes` bytes that completed `events` events; `terminal` when one of them is `done`/`error`.
   * @param {number} at @param {number} bytes @param {number} events @param {boolean} [terminal] @returns {BufferingVerdict}
   */
  read(at, bytes, events, terminal = false) {
    this.tick(at);
    if (this.verdict.decision !== 'undecided') return this.verdict;
    if (bytes > 0) this._sawByte = true;
    if (events > 0) {
      this._eventReads += 1;
      if (this._eventReads === 1) this._burst = { at, events };
      else { this.verdict = { decision: 'stream' }; return this.verdict; }
    }
    return terminal ? this.ended(at) : this.verdict;
  }

  /** The body ended (cleanly or not). @param {number} at @returns {BufferingVerdict} */
  ended(at) {
    this.tick(at);
    if (this.verdict.decision !== 'undecided') return this.verdict;
    const b = this._burst;
    if (this._eventReads === 1 && b && b.events >= BURST_MIN_EVENTS && b.at - this.sentAt >= BURST_MIN_WAIT_MS && at - b.at <= BURST_END_WINDOW_MS) {
      this.verdict = { decision: 'longPoll', reason: 'wholeBodyAtEnd' };
    } else {
      this.verdict = { decision: 'stream' };
    }
    return this.verdict;
  }
}
