// The connection rules of one answer as a pure state machine (conformance/CLIENT_RULES.md
// "Reconnect decisions"). Every time is an argument in ms; the random source is injected.
import { NORMAL_BACKOFF_MS } from './uiState.js';

/** Reconnections in a row without an event before `needsResume`. */
export const MAX_ATTEMPTS = 3;
/** No resume once this long has passed since the last event, ms (5 min). */
export const IDLE_LIMIT_MS = 300000;
/** Foreground connected time without an event after which the answer is complete, ms. */
export const HARD_TIMEOUT_MS = 60000;
/** Largest jitter added to a reconnect wait, ms (uniform in [0, 250]). */
export const MAX_JITTER_MS = 250;

/**
 * How an answer ended.
 * @typedef {{kind: 'finished', finishReason: string} | {kind: 'stopped'} | {kind: 'timedOut'} | {kind: 'needsResume'}
 *   | {kind: 'failed', status: number, code: string, message: string}} Completion
 */
/**
 * What the networking layer must do next.
 * @typedef {{type: 'none'} | {type: 'sendRequest'} | {type: 'reconnect', lastEventId: number, refreshToken: boolean}
 *   | {type: 'wait', until: number} | {type: 'stop'} | {type: 'finish', completion: Completion}} Action
 */

/** `true` when the app should offer Retry / Resume. @param {Completion} c */
export function offersRetry(c) {
  switch (c.kind) {
    case 'timedOut': case 'needsResume': return true;
    case 'failed': return c.status === 404 || c.status === 409 || c.status >= 500 || c.status === 0;
    default: return false;
  }
}

/** `true` for `text/event-stream`, parameters and case ignored (RFC 9110 §8.3.1). @param {string | null | undefined} ct */
export function isEventStream(ct) {
  if (!ct) return false;
  return ct.split(';')[0].trim().toLowerCase() === 'text/event-stream';
}

/**
 * `true` for the statuses that are retryable drops: 503 (the relay's `not_ready`, or a gateway's) and
 * 502 / 504 (a gateway or load balancer in front of the relay: the relay sends these codes only as
 * in-stream `error` events, PROTOCOL.md §8.2). @param {number} status
 */
export function isGatewayRetryable(status) { return status === 502 || status === 503 || status === 504; }

/** `true` for `application/json`, parameters and case ignored. @param {string | null | undefined} ct */
export function isJSON(ct) {
  if (!ct) return false;
  return ct.split(';')[0].trim().toLowerCase() === 'application/json';
}

/** @type {Action} */
const NONE = { type: 'none' };

/**
 * The late-resume rule (CLIENT_RULES.md "Late resume"), pure: what an unfinished answer does
 * once more than 5 min have passed since its last event. The relay keeps finished answers for
 * `RELAY_ANSWER_RETENTION` (PROTOCOL.md §6.5), so after a background the answer may be waiting:
 * `lateResume` (foreground) / `waitForForeground` (background); never backgrounded since the last
 * event → `needsResume` (the idle rule); not late, or the late resume already made → `proceed`.
 * @param {{idleMs: number, backgroundSinceLastEvent: boolean, lateResumeMade: boolean, foreground: boolean}} s
 * @returns {'proceed' | 'needsResume' | 'waitForForeground' | 'lateResume'}
 */
export function lateResumeDecision({ idleMs, backgroundSinceLastEvent, lateResumeMade, foreground }) {
  if (!(idleMs > IDLE_LIMIT_MS) || lateResumeMade) return 'proceed';
  if (!backgroundSinceLastEvent) return 'needsResume';
  return foreground ? 'lateResume' : 'waitForForeground';
}

/** `true` for a late resume's answers meaning the relay no longer has the answer (404, 204). @param {number} status */
export function lateResumeExpired(status) { return status === 404 || status === 204; }

/**
 * States: `idle`, `connecting` (attempt 0 = the original request), `streaming`,
 * `waiting` (until a time), `suspended` (dropped in the background), `ended`.
 *
 * * Drop (network error, refused/reset, body ended without `done`/`error`): wait
 *   `backoffMs + jitter` (1000 ms, 3000 ms when RTT > 500 ms; jitter = floor(random() × 251)),
 *   then `reconnect` with `Last-Event-ID` (the driver rotates the base URL; before any
 *   event it re-sends the POST with the same `X-Request-Id`).
 * * At most 3 reconnections in a row without an event; the next failure → `needsResume`.
 * * 502, 503 or 504 (± `Retry-After: R`) on any attempt: retryable drop, wait `max(R×1000, backoff) + jitter`
 *   (the relay answers only 503 before a stream; 502/504 come from a gateway in front of it).
 * * `token_expired` (error event, or 401 `token_expired`/`unauthorized` on a reconnect):
 *   wait `jitter`, then reconnect asking the token provider for a fresh token; a second 401
 *   after that refresh fails the answer; `session_revoked` is terminal (failed 401).
 * * Other non-200 responses and non-`text/event-stream` bodies are terminal failures.
 * * Hard timeout: 60 s counted only while in the foreground and connecting/streaming,
 *   without an event → `timedOut`.
 * * Idle rule: > 5 min since the last event (a clock that advances during sleep) → `needsResume`,
 *   unless the app was in the background since that event: then one late resume from
 *   `lastEventId` once in the foreground (`lateResumeDecision`); its 404/204 → `needsResume`.
 * * Background: a drop waits (`suspended`); on foreground within 5 min of the last event,
 *   reconnect at once.
 * * Stop: `stop` at once (the driver sends the DELETE in the background).
 */
export class ReconnectPolicy {
  /** @param {{backoffMs?: number, random?: () => number}} [options] random: [0, 1) source (Math.random). */
  constructor(options = {}) {
    /** Wait before each reconnection, ms. */
    this.backoffMs = options.backoffMs ?? NORMAL_BACKOFF_MS;
    this.random = options.random ?? Math.random;
    /** @type {'idle' | 'connecting' | 'streaming' | 'waiting' | 'suspended' | 'ended'} */
    this.state = 'idle';
    /** The attempt in flight or waited for: 0 is the original request. */
    this.attempt = 0;
    /** When `waiting`, the time to reconnect, ms. */
    this.until = 0;
    /** @type {Completion | null} */
    this.completion = null;
    /** `seq` of the last event (0 for none), in memory only. */
    this.lastEventId = 0;
    /** Reconnections and resumes made (telemetry). */
    this.reconnections = 0;
    this.isBackground = false;
    this._failuresInARow = 0;
    this._lastEventAt = 0;
    this._activeMs = 0;
    this._accountedAt = 0;
    this._refreshNext = false;
    this._refreshedSinceEvent = false;
    /** The app was in the background at some moment since the last event. */
    this._backgroundSinceEvent = false;
    /** The late resume was made and no event has come since. */
    this.lateResumed = false;
    /** Reads go over long-poll (the catch-up read of PROTOCOL.md's long-poll mode): every read is a resume. */
    this.polling = false;
  }

  get isEnded() { return this.state === 'ended'; }

  /** Jitter for one wait, ms in [0, 250]. */
  jitterMs() { return Math.min(MAX_JITTER_MS, Math.floor(this.random() * (MAX_JITTER_MS + 1))); }

  /** When `tick` must next be called, ms, or null. */
  get nextDeadline() {
    switch (this.state) {
      case 'waiting': return this.isBackground ? null : this.until;
      case 'connecting': case 'streaming':
        return this.isBackground ? this._lastEventAt + IDLE_LIMIT_MS : this._accountedAt + (HARD_TIMEOUT_MS - this._activeMs);
      default: return null;
    }
  }

  /** @param {number} now */
  _account(now) {
    const counting = !this.isBackground && (this.state === 'connecting' || this.state === 'streaming');
    if (counting) this._activeMs += Math.max(0, now - this._accountedAt);
    this._accountedAt = now;
  }

  /** Starts: send the request. @param {number} now @returns {Action} */
  start(now) { return this.state === 'idle' ? this._begin(now) : NONE; }

  /** Manual Resume / Retry after an ending that offers it: re-send the whole request. @param {number} now @returns {Action} */
  resume(now) {
    if (this.state !== 'ended' || !this.completion || !offersRetry(this.completion)) return NONE;
    this.reconnections += 1;
    this.completion = null;
    return this._begin(now);
  }

  /** @param {number} now @returns {Action} */
  _begin(now) {
    this.state = 'connecting';
    this.attempt = 0;
    this.lastEventId = 0;
    this._lastEventAt = now;
    this._accountedAt = now;
    this._activeMs = 0;
    this._failuresInARow = 0;
    this._refreshNext = false;
    this._refreshedSinceEvent = false;
    this.polling = false;
    this._backgroundSinceEvent = this.isBackground;
    this.lateResumed = false;
    return { type: 'sendRequest' };
  }

  /**
   * Response headers (and, for non-200, the decoded error body) arrived.
   * @param {number} status @param {string | null} contentType
   * @param {{code?: string, message?: string, retryAfterSec?: number | null}} info
   * @param {number} now @returns {Action}
   */
  responseOpened(status, contentType, info, now) {
    if (this.state !== 'connecting') return NONE;
    this._account(now);
    if (status === 200) {
      if (!isEventStream(contentType)) {
        return this._end({ kind: 'failed', status, code: 'bad_content_type', message: `expected text/event-stream, got ${contentType ?? 'none'}` });
      }
      this.state = 'streaming';
      return NONE;
    }
    const code = info?.code ?? `http_${status}`;
    const message = info?.message ?? `HTTP ${status}`;
    if (isGatewayRetryable(status)) {
      const r = info?.retryAfterSec;
      return this._retryableDrop(now, Math.max(r != null && r >= 0 ? r * 1000 : 0, this.backoffMs));
    }
    if (status === 401 && code !== 'session_revoked' && (this.attempt > 0 || this.polling) && (code === 'token_expired' || code === 'unauthorized')) {
      if (!this._refreshedSinceEvent) return this._tokenExpired(now);
    }
    if (this.lateResumed && lateResumeExpired(status)) return this._end({ kind: 'needsResume' });
    return this._end({ kind: 'failed', status, code, message });
  }

  /**
   * The next long-poll read is being sent: after the previous one ended without the terminal event,
   * or to finish a buffered SSE response from `lastEventId`. Not a reconnection: no wait, not counted,
   * the hard timeout keeps running. No effect unless connecting or streaming. @param {number} now
   */
  pollSent(now) {
    if (this.state !== 'streaming' && this.state !== 'connecting') return;
    this._account(now);
    this.state = 'connecting';
    this.polling = true;
  }

  /**
   * A long-poll response head: `200 application/json` (events follow) or `204` (none yet) → reading;
   * `204` with `Stream-Closed: true` → the answer ended without the terminal event reaching us: failed;
   * other statuses exactly as `responseOpened` (a 401 is treated as on a resume).
   * @param {number} status @param {string | null} contentType @param {boolean} closed `Stream-Closed: true`
   * @param {{code?: string, message?: string, retryAfterSec?: number | null}} info @param {number} now @returns {Action}
   */
  pollOpened(status, contentType, closed, info, now) {
    if (this.state !== 'connecting') return NONE;
    if (status === 204 && closed) { this._account(now); return this.streamClosed(now); }
    if (status === 204 || (status === 200 && isJSON(contentType))) {
      this._account(now);
      this.state = 'streaming';
      return NONE;
    }
    if (status === 200) {
      this._account(now);
      return this._end({ kind: 'failed', status, code: 'bad_content_type', message: `expected application/json, got ${contentType ?? 'none'}` });
    }
    return this.responseOpened(status, contentType, info, now);
  }

  /** A long-poll read said `Stream-Closed: true` but the terminal event never came: failed (204 `stream_closed`). @param {number} now @returns {Action} */
  streamClosed(now) {
    if (this.state === 'ended') return NONE;
    this._account(now);
    return this._end({ kind: 'failed', status: 204, code: 'stream_closed', message: 'the answer ended without its terminal event' });
  }

  /**
   * An event arrived: its SSE id (`seq`) and decoded content (`{type:'delta'|'done'|'error',…}`).
   * @param {number | null} seq @param {{type: string, [k: string]: any} | null} event @param {number} now @returns {Action}
   */
  eventReceived(seq, event, now) {
    if (this.state !== 'streaming') return NONE;
    this._account(now);
    if (seq !== null && seq !== undefined) this.lastEventId = seq;
    this._lastEventAt = now;
    this._activeMs = 0;
    if (event && event.type === 'error' && event.code === 'token_expired') {
      if (this._refreshedSinceEvent) {
        return this._end({ kind: 'failed', status: event.status ?? 401, code: event.code, message: event.message ?? '' });
      }
      return this._tokenExpired(now);
    }
    this._failuresInARow = 0;
    this._refreshedSinceEvent = false;
    this._backgroundSinceEvent = this.isBackground;
    this.lateResumed = false;
    if (!event) return NONE;
    if (event.type === 'done') {
      return this._end(event.finish_reason === 'cancelled' ? { kind: 'stopped' } : { kind: 'finished', finishReason: event.finish_reason ?? 'stop' });
    }
    if (event.type === 'error') {
      return this._end({ kind: 'failed', status: event.status ?? 500, code: event.code ?? 'error', message: event.message ?? '' });
    }
    return NONE;
  }

  /** The connection failed, or its body ended without `done`/`error`. @param {number} now @returns {Action} */
  connectionLost(now) {
    if (this.state !== 'connecting' && this.state !== 'streaming') return NONE;
    this._account(now);
    if (this.isBackground) {
      // In the background since the last event: never late-ended here (the late resume waits for the foreground).
      this.state = 'suspended';
      return NONE;
    }
    return this._retryableDrop(now, this.backoffMs);
  }

  /** `lateResumeDecision` now. @param {number} now */
  _late(now) {
    return lateResumeDecision({ idleMs: now - this._lastEventAt, backgroundSinceLastEvent: this._backgroundSinceEvent,
      lateResumeMade: this.lateResumed, foreground: !this.isBackground });
  }

  /** The late resume: reconnect at once from `lastEventId`, counted. @param {number} now @returns {Action} */
  _lateResume(now) {
    this.lateResumed = true;
    this._failuresInARow += 1;
    this.attempt = this._failuresInARow;
    return this._reconnect(now);
  }

  /** @param {number} now @param {number} waitMs @returns {Action} */
  _retryableDrop(now, waitMs) {
    if (this._failuresInARow >= MAX_ATTEMPTS) return this._end({ kind: 'needsResume' });
    switch (this._late(now)) {
      case 'needsResume': return this._end({ kind: 'needsResume' });
      case 'waitForForeground': this.state = 'suspended'; return NONE;
      case 'lateResume': return this._lateResume(now);
      default: break;
    }
    this._failuresInARow += 1;
    this.attempt = this._failuresInARow;
    this.until = now + waitMs + this.jitterMs();
    this.state = 'waiting';
    return { type: 'wait', until: this.until };
  }

  /** @param {number} now @returns {Action} */
  _tokenExpired(now) {
    this._refreshNext = true;
    return this._retryableDrop(now, 0);
  }

  /** Time passed: reconnects when the wait is over; ends on the hard timeout or idle rule. @param {number} now @returns {Action} */
  tick(now) {
    switch (this.state) {
      case 'waiting':
        switch (this._late(now)) {
          case 'needsResume': return this._end({ kind: 'needsResume' });
          case 'waitForForeground': return NONE;
          case 'lateResume': this._failuresInARow -= 1; return this._lateResume(now);   // this wait's attempt becomes the late resume
          default: break;
        }
        if (this.isBackground || now < this.until) return NONE;
        return this._reconnect(now);
      case 'connecting': case 'streaming':
        this._account(now);
        if (this._activeMs >= HARD_TIMEOUT_MS) return this._end({ kind: 'timedOut' });
        return NONE;
      case 'suspended':
        if (this._late(now) === 'needsResume') return this._end({ kind: 'needsResume' });
        return NONE;
      default: return NONE;
    }
  }

  /** @param {number} now @returns {Action} */
  _reconnect(now) {
    this.state = 'connecting';
    this._accountedAt = now;
    this.reconnections += 1;
    const refreshToken = this._refreshNext;
    if (refreshToken) { this._refreshNext = false; this._refreshedSinceEvent = true; }
    return { type: 'reconnect', lastEventId: this.lastEventId, refreshToken };
  }

  /** The app went to the background. @param {number} now */
  enterBackground(now) { this._account(now); this.isBackground = true; this._backgroundSinceEvent = true; }

  /** The app is back: a suspended or waiting stream reconnects at once (within 5 min of the last event). @param {number} now @returns {Action} */
  enterForeground(now) {
    this._account(now);
    this.isBackground = false;
    if (this.state !== 'suspended' && this.state !== 'waiting') return NONE;
    switch (this._late(now)) {
      case 'needsResume': return this._end({ kind: 'needsResume' });
      case 'lateResume':
        if (this.state === 'waiting') this._failuresInARow -= 1;   // the wait's attempt becomes the late resume
        if (this._failuresInARow >= MAX_ATTEMPTS) return this._end({ kind: 'needsResume' });
        return this._lateResume(now);
      default: break;
    }
    if (this.state === 'suspended') {
      if (this._failuresInARow >= MAX_ATTEMPTS) return this._end({ kind: 'needsResume' });
      this._failuresInARow += 1;
      this.attempt = this._failuresInARow;
    }
    return this._reconnect(now);
  }

  /** The user pressed Stop. @returns {Action} */
  stop() {
    if (this.state === 'ended') return NONE;
    const wasIdle = this.state === 'idle';
    this.state = 'ended';
    this.completion = { kind: 'stopped' };
    return wasIdle ? { type: 'finish', completion: this.completion } : { type: 'stop' };
  }

  /** @param {Completion} c @returns {Action} */
  _end(c) {
    this.state = 'ended';
    this.completion = c;
    return { type: 'finish', completion: c };
  }
}
