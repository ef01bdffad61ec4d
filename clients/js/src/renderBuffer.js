// The render buffer (conformance/CLIENT_RULES.md): when streamed text is shown.
import { MarkdownLineScanner, isBlank, isThematicBreak } from './markdownLines.js';

/** UI update interval, ms. */
export const RENDER_INTERVAL_MS = 50;
/** Held characters (grapheme clusters) of unspaced text after which they are released. */
export const LONG_RUN_CHARACTERS = 64;
/** Characters (grapheme clusters) the first timed flush waits for, unless a break came first. */
export const FIRST_RENDER_CHARACTERS = 30;

/** @typedef {'interval' | 'paragraphBreak' | 'thematicBreak' | 'longRun' | 'done' | 'foreground'} FlushReason */
/** @typedef {{text: string, reason: FlushReason}} Flush */

const WS = /^\p{White_Space}+$/u;
const segmenter = typeof Intl !== 'undefined' && typeof Intl.Segmenter === 'function'
  ? new Intl.Segmenter(undefined, { granularity: 'grapheme' }) : null;

const RI = /^[\u{1F1E6}-\u{1F1FF}]$/u;
const EXTEND = /^[\p{M}\u200d\ufe0e\ufe0f\u{1F3FB}-\u{1F3FF}\u{E0020}-\u{E007F}]$/u;

/**
 * Grapheme clusters without `Intl.Segmenter` (older Hermes): a UAX #29 subset that keeps
 * CR LF, combining marks, variation selectors, emoji modifiers and tag characters with the
 * scalar before them, a ZWJ with the scalar after it, and regional indicators in pairs (flags).
 * @param {string} s @returns {string[]}
 */
export function graphemesFallback(s) {
  /** @type {string[]} */
  const out = [];
  for (const cp of s) {
    const prev = out.length ? out[out.length - 1] : null;
    const joins = prev !== null && (EXTEND.test(cp) || prev.endsWith('\u200d') || (prev === '\r' && cp === '\n')
      || (RI.test(cp) && RI.test(prev)));
    if (joins) out[out.length - 1] = prev + cp; else out.push(cp);
  }
  return out;
}

/**
 * Grapheme clusters of `s` (UAX #29 through `Intl.Segmenter`, else `graphemesFallback`).
 * @param {string} s @returns {string[]}
 */
export function graphemes(s) {
  return segmenter ? Array.from(segmenter.segment(s), (x) => x.segment) : graphemesFallback(s);
}

/**
 * The end (UTF-16 index) of the longest prefix that may be shown: it ends at or right
 * after whitespace (never mid-word) and before the last grapheme cluster unless that is
 * LF or CRLF (a later delta may extend a cluster); or, when the trailing unspaced run
 * holds at least 64 clusters, at the last stable cluster boundary (`longRun`).
 * @param {string} s @returns {{cut: number, longRun: boolean}}
 */
export function safeCut(s) {
  if (s === '') return { cut: 0, longRun: false };
  const g = graphemes(s);
  const last = g[g.length - 1];
  const lastIsBreak = last === '\n' || last === '\r\n';
  const stableCount = lastIsBreak ? g.length : g.length - 1;
  const offsets = [0];
  for (const x of g) offsets.push(offsets[offsets.length - 1] + x.length);
  if (!lastIsBreak && WS.test(last)) return { cut: offsets[g.length - 1], longRun: false };
  let i = stableCount;
  let run = lastIsBreak ? 0 : 1;
  while (i > 0) {
    if (WS.test(g[i - 1])) return { cut: offsets[i], longRun: false };
    run += 1;
    if (run >= LONG_RUN_CHARACTERS) return { cut: offsets[stableCount], longRun: true };
    i -= 1;
  }
  return { cut: 0, longRun: false };
}

/**
 * Accumulates deltas and decides when the UI shows them:
 * * at once when a blank line (`\n\n`) or a thematic break line (`---`, `***`, `___`)
 *   outside fenced code completes; otherwise every 50 ms (`tick`);
 * * never mid-word, never splitting a grapheme cluster; unspaced runs of 64 clusters go;
 * * the first timed flush also waits for 30 characters (a paragraph or thematic break,
 *   or `done`, skips that wait);
 * * everything at `finish()` (`done`, error, stop, timeout);
 * * nothing in the background (`enterForeground` replays what was buffered).
 * The concatenation of all flushes equals the concatenation of all deltas. Holding text
 * until the direction is decided is the renderer's job (`ResponseRenderer`), as in the
 * Swift kit.
 */
export class RenderBuffer {
  /** @param {number} now ms: the 50 ms interval starts here */
  constructor(now) {
    /** Text received but not yet flushed. */
    this.pending = '';
    this.isBackground = false;
    this.isFinished = false;
    this.hasFlushed = false;
    this._boundarySeen = false;
    this._lastFlushAt = now;
    this._scanner = new MarkdownLineScanner();
  }

  /** Adds a delta; returns a flush when it completed a paragraph or thematic break. @param {string} delta @param {number} now @returns {Flush | null} */
  append(delta, now) {
    if (this.isFinished || delta === '') return null;
    this.pending += delta;
    /** @type {FlushReason | null} */
    let reason = null;
    for (const line of this._scanner.feed(delta)) {
      if (isBlank(line.text)) reason = reason ?? 'paragraphBreak';
      else if (!line.insideFence && !line.isFence && isThematicBreak(line.text)) reason = 'thematicBreak';
    }
    if (!reason) return null;
    this._boundarySeen = true;
    if (this.isBackground) return null;
    return this._flushSafePrefix(reason, now);
  }

  /** The 50 ms timer: flushes the safe prefix when ≥ 50 ms passed since the last flush. @param {number} now @returns {Flush | null} */
  tick(now) {
    if (this.isBackground || this.isFinished || this.pending === '') return null;
    if (now - this._lastFlushAt < RENDER_INTERVAL_MS) return null;
    if (!this.hasFlushed && !this._boundarySeen && graphemes(this.pending).length < FIRST_RENDER_CHARACTERS) return null;
    return this._flushSafePrefix('interval', now);
  }

  /** The stream ended: everything pending (null when nothing is, or in the background). @param {number} now @returns {Flush | null} */
  finish(now) {
    if (this.isFinished) return null;
    this.isFinished = true;
    this._scanner.finish();
    if (this.isBackground) return null;
    return this._flushAll('done', now);
  }

  /** The app went to the background: updates pause, text keeps accumulating. */
  enterBackground() { this.isBackground = true; }

  /** The app is back: replays what was buffered (all of it after `finish`). @param {number} now @returns {Flush | null} */
  enterForeground(now) {
    if (!this.isBackground) return null;
    this.isBackground = false;
    if (this.isFinished) return this._flushAll('foreground', now);
    return this._flushSafePrefix('foreground', now);
  }

  /** @param {FlushReason} reason @param {number} now */
  _flushAll(reason, now) {
    if (this.pending === '') return null;
    const text = this.pending;
    this.pending = '';
    return this._emit(text, reason, now);
  }

  /** @param {FlushReason} reason @param {number} now */
  _flushSafePrefix(reason, now) {
    const { cut, longRun } = safeCut(this.pending);
    if (cut === 0) return null;
    const text = this.pending.slice(0, cut);
    this.pending = this.pending.slice(cut);
    return this._emit(text, longRun && reason === 'interval' ? 'longRun' : reason, now);
  }

  /** @param {string} text @param {FlushReason} reason @param {number} now @returns {Flush} */
  _emit(text, reason, now) {
    this._lastFlushAt = now;
    this.hasFlushed = true;
    return { text, reason };
  }
}
