// "Drafting clause 3 of 7…" from the answer's Markdown headings (conformance/CLIENT_RULES.md).
// Mirrors Sources/RelayClient/DraftProgress.swift.
import { MarkdownLineScanner, atxHeading, setextUnderline, isParagraphText, orderedListNumber } from './markdownLines.js';

/** Answers must be longer than this many tokens (delta events) to show progress. */
export const LONG_ANSWER_TOKENS = 1000;

const KEYWORDS = new Set(['clause', 'article', 'section', 'part', 'schedule', 'البند', 'المادة', 'الفقرة', 'بند', 'مادة']);
const NOUNS = new Set(['clauses', 'sections', 'articles', 'parts', 'headings', 'بنود', 'مواد', 'بندا', 'بندًا', 'مادة']);
const WORDS = { two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, eleven: 11, twelve: 12,
  thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18, nineteen: 19, twenty: 20 };

/** Decimal value of a scalar of any script's `Nd` range, or null. @param {string} ch */
function decimalValue(ch) {
  if (!/^\p{Nd}$/u.test(ch)) return null;
  const cp = /** @type {number} */ (ch.codePointAt(0));
  // Nd characters come in runs of ten starting at a zero; find the zero.
  for (let z = cp; z > cp - 10; z--) {
    const c = String.fromCodePoint(z);
    if (!/^\p{Nd}$/u.test(c)) return cp - z - 1;
    if (z === cp - 9) return 9;
    void c;
  }
  return null;
}

/** Leading decimal digits' value, or null. @param {string} s */
export function decimalPrefix(s) {
  let v = 0, any = false;
  for (const ch of s) {
    const d = ASCII_FAST(ch) ?? decimalValue(ch);
    if (d === null) break;
    v = v * 10 + d; any = true;
    if (v > 100000) return null;
  }
  return any ? v : null;
}
/** @param {string} ch */
function ASCII_FAST(ch) { const c = ch.charCodeAt(0); return ch.length === 1 && c >= 48 && c <= 57 ? c - 48 : null; }

/** The number a heading carries (`Clause 3`, `3.`, `البند ٣`), or null. @param {string} title */
export function headingNumber(title) {
  const words = title.split(/[ \t\u00a0]+/).filter((w) => w !== '');
  if (words.length === 0) return null;
  const first = words[0];
  if (KEYWORDS.has(first.toLowerCase()) && words.length > 1) return decimalPrefix(words[1]);
  let digits = '';
  for (const ch of first) { if ((ASCII_FAST(ch) ?? decimalValue(ch)) === null) break; digits += ch; }
  if (digits !== '') {
    const after = first.slice(digits.length);
    if (after === '.' || after === ')' || after === ':') return decimalPrefix(digits);
    if (after === '' && words.length > 1 && ['—', '–', '-', ':'].includes(words[1])) return decimalPrefix(digits);
  }
  return null;
}

/** "This draft has 9 clauses" → 9, or null. @param {string} line */
export function statedCount(line) {
  const tokens = line.split(/[^\p{L}\p{N}\p{Mn}]+/u).filter((t) => t !== '').map((t) => t.toLowerCase());
  for (let k = 1; k < tokens.length; k++) {
    if (!NOUNS.has(tokens[k])) continue;
    const prev = tokens[k - 1];
    if (Array.from(prev).every((c) => (ASCII_FAST(c) ?? decimalValue(c)) !== null)) {
      const n = decimalPrefix(prev);
      if (n !== null && n > 0) return n;
    }
    if (prev in WORDS) return WORDS[/** @type {keyof typeof WORDS} */ (prev)];
  }
  return null;
}

/** @typedef {{index: number, title: string, total: number | null, text: string}} ProgressSnapshot */

/**
 * Progress of a long draft from its headings: ATX and setext headings outside fenced
 * code; a first unnumbered level-1 heading is the title; the first other heading sets
 * the clause level; index = the heading's number or the ordinal; total = the app's
 * count, a stated count ("has 9 clauses") or the outline's largest list number.
 */
export class DraftProgress {
  /** @param {{expectedTotal?: number | null, noun?: string}} [options] */
  constructor(options = {}) {
    this.expectedTotal = options.expectedTotal ?? null;
    this.noun = options.noun ?? 'clause';
    /** @type {{level: number, title: string, number: number | null}[]} */
    this.headings = [];
    this._scanner = new MarkdownLineScanner();
    /** @type {string | null} */ this._previousLine = null;
    /** @type {number | null} */ this._clauseLevel = null;
    this._clauseCount = 0;
    /** @type {number | null} */ this._currentIndex = null;
    this._currentTitle = '';
    /** @type {number | null} */ this._statedTotal = null;
    this._outlineMax = 0;
  }

  /** The total, when known. */
  get total() {
    const t = this.expectedTotal ?? this._statedTotal ?? (this._outlineMax >= 2 ? this._outlineMax : null);
    return t === null ? null : Math.max(t, this._currentIndex ?? 0);
  }

  /** @param {string} delta */
  append(delta) { for (const l of this._scanner.feed(delta)) this._consume(l); }

  finish() { const l = this._scanner.finish(); if (l) this._consume(l); }

  /** What to show after `tokensReceived` tokens (null for ≤ 1,000 or before the first clause). @param {number} tokensReceived @returns {ProgressSnapshot | null} */
  snapshot(tokensReceived) {
    if (tokensReceived <= LONG_ANSWER_TOKENS || this._currentIndex === null) return null;
    const t = this.total;
    const index = this._currentIndex;
    const text = t !== null ? `Drafting ${this.noun} ${index} of ${t}…` : `Drafting ${this.noun} ${index}…`;
    return { index, title: this._currentTitle, total: t, text };
  }

  /** @param {import('./markdownLines.js').MarkdownLine} line */
  _consume(line) {
    const prev = this._previousLine;
    this._previousLine = line.insideFence || line.isFence ? null : line.text;
    if (line.insideFence || line.isFence) return;
    const h = atxHeading(line.text);
    if (h) { this._found(h.level, h.title); this._previousLine = null; return; }
    const level = prev !== null && isParagraphText(prev) ? setextUnderline(line.text) : null;
    if (level !== null && prev !== null) { this._found(level, prev.replace(/^[ \t]+|[ \t]+$/g, '')); return; }
    if (this._clauseLevel !== null) return;
    if (this._statedTotal === null) { const n = statedCount(line.text); if (n !== null) this._statedTotal = n; }
    const n = orderedListNumber(line.text);
    if (n !== null) this._outlineMax = Math.max(this._outlineMax, n);
  }

  /** @param {number} level @param {string} rawTitle */
  _found(level, rawTitle) {
    const title = rawTitle.replace(/^[*_ \t]+|[*_ \t]+$/g, '');
    const number = headingNumber(title);
    this.headings.push({ level, title, number });
    if (this._clauseLevel === null) {
      if (this.headings.length === 1 && level === 1 && number === null) return;
      this._clauseLevel = level;
    }
    if (level > this._clauseLevel) return;
    this._clauseCount += 1;
    this._currentIndex = number ?? this._clauseCount;
    this._currentTitle = title;
  }
}
