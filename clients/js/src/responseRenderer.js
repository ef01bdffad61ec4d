// Turns one answer's events into UI updates: render buffer, direction decision, draft
// progress, typing indicator, completion. Pure: times are ms arguments.
import { RenderBuffer } from './renderBuffer.js';
import { DirectionDecider } from './textDirection.js';
import { DraftProgress } from './draftProgress.js';
import { TypingIndicator } from './uiState.js';
import { parsePart, countsAsToken } from './answerParts.js';

/**
 * @typedef {object} RenderUpdate
 * @property {string} appended text released by this update (append it to the screen)
 * @property {string} text all text released so far
 * @property {import('./textDirection.js').TextLayout | null} layout direction and line height (set before any text)
 * @property {import('./draftProgress.js').ProgressSnapshot | null} progress "Drafting clause 3 of 7…" on long drafts
 * @property {boolean} showsTypingIndicator `true` while nothing has been rendered
 * @property {import('./reconnectPolicy.js').Completion | null} completion set on the last update
 * @property {import('./renderBuffer.js').FlushReason | null} reason why the text was released
 * @property {boolean} budgetLimited `true` only on the last update of an answer the relay cut at the
 *   caller's token budget (`done` with `finish_reason: "length"` and `"budget_limited": true`;
 *   conformance/CLIENT_RULES.md "Budget-limited answers")
 */

/**
 * `true` when `event` is a `done` whose `budget_limited` is JSON `true` (docs/PROTOCOL.md §9); anything else
 * (absent, `false`, `1`, another event type) is `false`.
 * @param {any} event a decoded stream event
 */
export function isBudgetLimited(event) {
  return !!event && event.type === 'done' && event.budget_limited === true;
}

export class ResponseRenderer {
  /** @param {number} now request start, ms @param {{expectedSections?: number | null}} [options] */
  constructor(now, options = {}) {
    this.text = '';
    /** Delta events received (one per token on the relay's wire). Text only: parts are not counted here. */
    this.tokensReceived = 0;
    /**
     * Reasoning and tool-call argument pieces received (one token each): generated tokens that are not text
     * (docs/PROTOCOL.md §5.5). They are in a `done`'s `completion_tokens` but not in the text, so the draft
     * progress leaves them out of the usage it reads.
     */
    this.partTokensReceived = 0;
    /** @type {number | null} when the first delta arrived, ms */
    this.firstTokenAt = null;
    /** @type {import('./reconnectPolicy.js').Completion | null} */
    this.completion = null;
    /** @type {{prompt_tokens?: number, completion_tokens?: number, total_tokens?: number} | null} */
    this.usage = null;
    /** `true` once a `done` said the answer was cut by the token budget (`"budget_limited": true`). */
    this.budgetLimited = false;
    this.typing = new TypingIndicator(now);
    this._buffer = new RenderBuffer(now);
    /** @type {import('./renderBuffer.js').Flush | null} text the buffer released before the direction was decided */
    this._held = null;
    this._direction = new DirectionDecider();
    this._progress = new DraftProgress({ expectedTotal: options.expectedSections ?? null });
  }

  /** The layout, once decided (before the first text is released). */
  get layout() { return this._direction.layout; }
  get isBackground() { return this._buffer.isBackground; }

  /**
   * An event (`{type:'delta',content}` / `done` / `error`). Text only: a typed part (docs/PROTOCOL.md §5.5)
   * releases nothing and is not sampled for the direction or counted for the progress or the first token;
   * a well-formed reasoning or argument piece counts in `partTokensReceived`. Other types are ignored.
   * @param {any} event @param {number} now @returns {RenderUpdate | null}
   */
  receive(event, now) {
    if (this.completion) return null;
    switch (event.type) {
      case 'delta': {
        const s = String(event.content ?? '');
        this.tokensReceived += 1;
        if (this.firstTokenAt === null) this.firstTokenAt = now;
        this._progress.append(s);
        this._direction.append(s);
        return this._release(this._buffer.append(s, now), now);
      }
      case 'done':
        this.usage = event.usage ?? null;
        this.budgetLimited = isBudgetLimited(event);
        return this.finish(event.finish_reason === 'cancelled' ? { kind: 'stopped' } : { kind: 'finished', finishReason: event.finish_reason ?? 'stop' }, now);
      case 'error':
        return this.finish({ kind: 'failed', status: event.status ?? 500, code: event.code ?? 'error', message: event.message ?? '' }, now);
      default: {
        const part = parsePart(event);
        if (part && countsAsToken(part)) this.partTokensReceived += 1;
        return null;
      }
    }
  }

  /** The 50 ms timer. @param {number} now @returns {RenderUpdate | null} */
  tick(now) {
    if (this.completion) return null;
    return this._release(this._buffer.tick(now), now);
  }

  /** Ends the answer: decides the direction if still open, releases everything. @param {import('./reconnectPolicy.js').Completion} c @param {number} now @returns {RenderUpdate | null} */
  finish(c, now) {
    if (this.completion) return null;
    this.completion = c;
    this._progress.finish();
    this._direction.finish();
    const u = this._release(this._buffer.finish(now), now);
    if (u) return u;
    if (this._buffer.isBackground) return null;
    return this._snapshot('', c, null);
  }

  enterBackground() { this._buffer.enterBackground(); }

  /** @param {number} now @returns {RenderUpdate | null} */
  enterForeground(now) {
    if (!this._buffer.isBackground) return null;
    const u = this._release(this._buffer.enterForeground(now), now);
    if (u) return u;
    return this.completion ? this._snapshot('', this.completion, null) : null;
  }

  /**
   * The current progress, for the text's tokens: the deltas received, or the `done`'s completion tokens less
   * the part pieces when that is more (a coalesced delta stands for several tokens, docs/PROTOCOL.md §4.3).
   */
  progress() {
    return this._progress.snapshot(Math.max(this.tokensReceived, (this.usage?.completion_tokens ?? 0) - this.partTokensReceived));
  }

  /**
   * Shows `f` — together with text released earlier but held because the direction was
   * not decided yet (conformance/CLIENT_RULES.md: nothing is rendered before the decision) — once the
   * direction is decided and the app is in the foreground; holds it otherwise. The held
   * text thus appears at the delta that completes the sample, with the latest reason.
   * @param {import('./renderBuffer.js').Flush | null} f @param {number} now @returns {RenderUpdate | null}
   */
  _release(f, now) {
    if (f) this._held = { text: (this._held?.text ?? '') + f.text, reason: f.reason };
    const h = this._held;
    if (!this._direction.isDecided || this._buffer.isBackground || !h || h.text === '') return null;
    this._held = null;
    return this._update(h, now);
  }

  /** @param {import('./renderBuffer.js').Flush} f @param {number} now */
  _update(f, now) {
    this.text += f.text;
    this.typing.textRendered(now);
    return this._snapshot(f.text, this._buffer.isFinished ? this.completion : null, f.reason);
  }

  /** @param {string} appended @param {any} completion @param {any} reason @returns {RenderUpdate} */
  _snapshot(appended, completion, reason) {
    return { appended, text: this.text, layout: this.layout, progress: this.progress(),
      showsTypingIndicator: this.typing.isVisible, completion, reason,
      budgetLimited: completion !== null && this.budgetLimited };
  }
}
