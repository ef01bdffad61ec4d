// The right-to-left decision (conformance/CLIENT_RULES.md "Right-to-left decision").

/** Markdown syntax characters that never count toward the sample. */
export const MARKDOWN_SYNTAX = new Set(['#', '*', '_', '`', '~', '>', '-', '|', '=', '+', '[', ']', '(', ')', '!']);
/** Scalars in the sample. */
export const SAMPLE_SCALARS = 30;
/** Line-height multipliers (× font size). */
export const ARABIC_LINE_HEIGHT = 1.8;
export const DEFAULT_LINE_HEIGHT = 1.4;

const WHITE_SPACE = /^\p{White_Space}$/u;

/** `true` for a scalar (code point) in an Arabic block: U+0600–06FF, 0750–077F, 0870–089F, 08A0–08FF, FB50–FDFF, FE70–FEFF. @param {number} cp */
export function isArabicScalar(cp) {
  return (cp >= 0x0600 && cp <= 0x06ff) || (cp >= 0x0750 && cp <= 0x077f) || (cp >= 0x0870 && cp <= 0x08ff)
    || (cp >= 0xfb50 && cp <= 0xfdff) || (cp >= 0xfe70 && cp <= 0xfeff);
}

/**
 * @typedef {{direction: 'ltr' | 'rtl', isArabic: boolean, lineHeight: number}} TextLayout
 * `direction` is the HTML `dir` value; `lineHeight` a multiplier of the font size.
 */

/** The layout for a sample (an array of scalars). @param {string[]} sample @returns {TextLayout} */
export function layoutForSample(sample) {
  const arabic = sample.some((s) => isArabicScalar(/** @type {number} */ (s.codePointAt(0))));
  return arabic
    ? { direction: 'rtl', isArabic: true, lineHeight: ARABIC_LINE_HEIGHT }
    : { direction: 'ltr', isArabic: false, lineHeight: DEFAULT_LINE_HEIGHT };
}

/**
 * Decides an answer's direction from its text as it arrives. The sample is the first 30
 * Unicode scalars of the concatenated deltas that are neither White_Space nor Markdown
 * syntax characters. The decision is made when the sample is full, or at `finish()` with
 * whatever it holds (empty → left-to-right); it never changes afterwards.
 */
export class DirectionDecider {
  constructor() {
    /** @type {string[]} */
    this.sample = [];
    /** @type {TextLayout | null} */
    this.layout = null;
  }

  /** `true` once decided. */
  get isDecided() { return this.layout !== null; }

  /** Adds a delta; returns the layout when this delta decided it, else null. @param {string} delta */
  append(delta) {
    if (this.layout) return null;
    for (const s of delta) {
      if (WHITE_SPACE.test(s) || MARKDOWN_SYNTAX.has(s)) continue;
      this.sample.push(s);
      if (this.sample.length >= SAMPLE_SCALARS) {
        this.layout = layoutForSample(this.sample);
        return this.layout;
      }
    }
    return null;
  }

  /** The stream ended: decides with whatever the sample holds. @returns {TextLayout} */
  finish() {
    if (!this.layout) this.layout = layoutForSample(this.sample);
    return this.layout;
  }
}

/** The layout for a whole text given as deltas (a convenience for tests and servers). @param {string[]} deltas */
export function decideDirection(deltas) {
  const d = new DirectionDecider();
  for (const x of deltas) if (d.append(x)) break;
  return d.finish();
}
