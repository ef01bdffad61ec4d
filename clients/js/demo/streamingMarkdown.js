// Streaming-safe Markdown: which prefix of a growing answer can be rendered now without a
// half-received marker (`**`, `##`, `` ` ``, `---`, `- `, `[text](`) flashing as literal text or
// a paragraph briefly turning into a heading. Pure (strings in, a length out); the page renders
// the prefix with markdown-it (markdownRenderer.js). Block and inline rules are those of
// CommonMark 0.31.2: fenced code §4.5, setext underlines §4.3, list items §5.2, code spans §6.1,
// emphasis and its left-/right-flanking delimiter runs §6.2, links §6.3.
import { MarkdownLineScanner, isBlank, atxHeading, isThematicBreak } from '../src/markdownLines.js';

/**
 * A line made only of block markers and spaces: `#`, `##`, `-`, `- `, `1.`, `>`, `---`, `===`,
 * `` ``` ``, `|`, `:`. While it is the last line of the shown text it may still become a heading,
 * a list item, a thematic break, a setext underline or a fence: it is held back.
 */
const MARKER_CHARS = /^[ \t#>*+\-=_~`|:]*$/;
/** A line opening a fenced code block (§4.5): its info string may still be arriving. */
const FENCE_START = /^ {0,3}(?:`{3,}|~{3,})/;
/** A line that could close the open fence (§4.5) once complete. */
const FENCE_CLOSE_PREFIX = /^ {0,3}(?:`+|~+)[ \t]*$/;
/** A line that starts a new block whose inline content is separate from the line before. */
const BLOCK_START = /^ {0,3}(?:[-*+][ \t]|\d{1,9}[.)][ \t]|#{1,6}(?:[ \t]|$)|>|\|)/;
/** A table row (GFM tables, which markdown-it's default preset renders). */
const TABLE_ROW = /^ {0,3}\|/;

/** `true` for a line of markers only (see MARKER_CHARS); ordered-list numbers count as markers. @param {string} line */
export function isMarkerOnly(line) {
  return MARKER_CHARS.test(line.replace(/\d{1,9}[.)]/g, ''));
}

/** @param {string | undefined} c */
function isSpace(c) { return c === undefined || /^\s$/u.test(c); }
/** Unicode punctuation or symbol (§2.1 "Unicode punctuation character"). @param {string | undefined} c */
function isPunct(c) { return c !== undefined && /^[\p{P}\p{S}]$/u.test(c); }
/** The code point before index `i` (a whole surrogate pair). @param {string} s @param {number} i */
function charBefore(s, i) {
  if (i <= 0) return undefined;
  const lo = s.charCodeAt(i - 1);
  if (lo >= 0xdc00 && lo <= 0xdfff && i >= 2) return s.slice(i - 2, i);
  return s[i - 1];
}
/** The code point at index `i`. @param {string} s @param {number} i */
function charAt(s, i) {
  if (i >= s.length) return undefined;
  const cp = /** @type {number} */ (s.codePointAt(i));
  return String.fromCodePoint(cp);
}

/**
 * The index of the first delimiter in `s` (one block's inline text) that opens something not
 * closed yet — an emphasis or strikethrough run (`*`, `_`, `~~`), a code span's backticks, or the
 * `[` of a link whose `](destination)` is incomplete — or -1. A delimiter run or a `]` at the very
 * end of `s` also counts: the character that follows decides whether it opens (or links). Approximates §6.2's process: a
 * closer matches the nearest opener of the same character (openers in between are dropped).
 * @param {string} s @returns {number}
 */
export function firstUnclosedOpener(s) {
  /** @type {{ch: string, left: number, pos: number}[]} */
  const open = [];
  /** @type {number[]} */
  const brackets = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (c === '\\') { i += 2; continue; }
    if (c === '`') {
      let j = i;
      while (s[j] === '`') j++;
      const run = s.slice(i, j);
      const close = new RegExp(`(?<!\`)${run}(?!\`)`, 'g');
      close.lastIndex = j;
      const m = close.exec(s);
      if (!m) return i;          // an unclosed code span: everything after it may be code
      i = m.index + run.length;
      continue;
    }
    if (c === '*' || c === '_' || c === '~') {
      let j = i;
      while (s[j] === c) j++;
      if (j >= s.length) return Math.min(i, ...open.map((o) => o.pos), ...brackets);
      if (c === '~' && j - i < 2) { i = j; continue; }
      const before = charBefore(s, i);
      const after = charAt(s, j);
      const leftFlanking = !isSpace(after) && (!isPunct(after) || isSpace(before) || isPunct(before));
      const rightFlanking = !isSpace(before) && (!isPunct(before) || isSpace(after) || isPunct(after));
      const canOpen = c === '_' ? leftFlanking && (!rightFlanking || isPunct(before)) : leftFlanking;
      const canClose = c === '_' ? rightFlanking && (!leftFlanking || isPunct(after)) : rightFlanking;
      let left = j - i;
      if (canClose) {
        for (let k = open.length - 1; k >= 0 && left > 0; k--) {
          if (open[k].ch !== c) continue;
          const used = Math.min(open[k].left, left);
          open[k].left -= used;
          left -= used;
          open.length = open[k].left === 0 ? k : k + 1;
        }
      }
      if (canOpen && left > 0) open.push({ ch: c, left, pos: i });
      i = j;
      continue;
    }
    if (c === '[') { brackets.push(i); i++; continue; }
    if (c === ']' && brackets.length) {
      const start = /** @type {number} */ (brackets.pop());
      if (i + 1 >= s.length) return Math.min(start, ...open.map((o) => o.pos), ...brackets);   // `(destination)` may follow
      if (s[i + 1] === '(') {
        const close = s.indexOf(')', i + 2);
        if (close < 0) return Math.min(start, ...open.map((o) => o.pos), ...brackets);
        i = close + 1;
        continue;
      }
    }
    i++;
  }
  return open.length ? open[0].pos : -1;
}

/**
 * The length of the prefix of `text` (an answer's Markdown received so far) that may be rendered
 * now. All of it once `finished`. Otherwise the tail is held back from:
 * * a last line of markers only (`##`, `- `, `1. `, `---`, `==`, `` `` ``, `> `): it may become a
 *   heading, list item, thematic break, setext underline or fence;
 * * a last line opening a fence (its info string may be incomplete) or one that could close the
 *   open fence; inside an open fence everything else is shown (code is literal);
 * * a table whose delimiter row has not arrived, and an incomplete last table row;
 * * the first unclosed inline opener of the block being written (`firstUnclosedOpener`);
 * and, after such a cut, from a line left with markers only.
 * @param {string} text @param {boolean} finished @returns {number}
 */
export function renderableLength(text, finished) {
  if (finished) return text.length;
  const tailStart = text.lastIndexOf('\n') + 1;
  const scanner = new MarkdownLineScanner();
  const lines = scanner.feed(text.slice(0, tailStart));
  const tail = text.slice(tailStart);
  if (scanner.inFence) return FENCE_CLOSE_PREFIX.test(tail) ? tailStart : text.length;

  // Where the block being written starts (its inline text is scanned for unclosed openers), and
  // where the current table starts, if the block is one.
  let offset = 0;
  let blockStart = 0;
  let previousEndsBlock = true;
  /** @type {number | null} */
  let tableStart = null;
  let tableLines = 0;
  for (const line of lines) {
    const t = line.text;
    if (line.insideFence || line.isFence || isBlank(t)) {
      previousEndsBlock = true;
      tableStart = null;
    } else {
      if (previousEndsBlock || BLOCK_START.test(t)) blockStart = offset;
      if (TABLE_ROW.test(t)) {
        if (tableStart === null) { tableStart = offset; tableLines = 0; }
        tableLines++;
      } else tableStart = null;
      previousEndsBlock = atxHeading(t) !== null || isThematicBreak(t);
    }
    offset += t.length + 1;
  }
  // `offset` counts LF only; a CR before an LF was dropped by the scanner: recount on the source.
  blockStart = realign(text, lines, blockStart);
  if (tableStart !== null) tableStart = realign(text, lines, tableStart);
  if (!isBlank(tail) && (previousEndsBlock || BLOCK_START.test(tail))) blockStart = tailStart;

  let cut = text.length;
  if (isMarkerOnly(tail) || FENCE_START.test(tail)) cut = tailStart;
  if (tableStart !== null && tableLines < 2) cut = Math.min(cut, tableStart);   // no delimiter row yet
  if (TABLE_ROW.test(tail)) cut = Math.min(cut, tailStart);                     // a row being written
  if (blockStart < cut) {
    const opener = firstUnclosedOpener(text.slice(blockStart, cut));
    if (opener >= 0) cut = blockStart + opener;
  }
  // A line cut down to its markers (`- ` of `- **Term`): hold it whole.
  for (;;) {
    const lineStart = text.lastIndexOf('\n', cut - 1) + 1;
    if (lineStart < cut && isMarkerOnly(text.slice(lineStart, cut))) cut = lineStart;
    else break;
  }
  return cut;
}

/**
 * The source offset of the line that starts at `lfOffset` when every line ending is one
 * character (the scanner drops a CR before an LF). @param {string} text
 * @param {import('../src/markdownLines.js').MarkdownLine[]} lines @param {number} lfOffset
 */
function realign(text, lines, lfOffset) {
  let lf = 0;
  let real = 0;
  for (const line of lines) {
    if (lf >= lfOffset) break;
    lf += line.text.length + 1;
    const nl = text.indexOf('\n', real + line.text.length);
    real = nl + 1;
  }
  return real;
}

/** The prefix itself: `text.slice(0, renderableLength(text, finished))`. @param {string} text @param {boolean} finished */
export function renderablePrefix(text, finished) {
  return text.slice(0, renderableLength(text, finished));
}
