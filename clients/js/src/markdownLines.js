// Line-level Markdown recognisers (CommonMark 0.31.2) and a streaming line scanner that
// tracks fenced code blocks (§4.5). Shared by RenderBuffer (thematic breaks) and
// DraftProgress (headings). Mirrors Sources/RelayClient/MarkdownLines.swift.

/** @typedef {{text: string, insideFence: boolean, isFence: boolean}} MarkdownLine */

/** Leading indentation in columns (a tab counts to the next multiple of 4) and the rest. @param {string} line */
export function indent(line) {
  let cols = 0, i = 0;
  for (; i < line.length; i++) {
    const c = line[i];
    if (c === ' ') cols += 1; else if (c === '\t') cols += 4 - (cols % 4); else break;
  }
  return { columns: cols, rest: line.slice(i) };
}

/** `true` for an empty line or one of spaces and tabs only (a paragraph break). @param {string} line */
export function isBlank(line) { return /^[ \t]*$/.test(line); }

/** A code fence opener/closer (§4.5). @param {string} line @returns {{char: string, length: number, info: string} | null} */
export function fence(line) {
  const { columns, rest } = indent(line);
  if (columns > 3 || (rest[0] !== '`' && rest[0] !== '~')) return null;
  const ch = rest[0];
  let n = 0;
  while (rest[n] === ch) n++;
  if (n < 3) return null;
  return { char: ch, length: n, info: rest.slice(n) };
}

/** A thematic break (§4.1): `---`, `***`, `___`, `- - -`. @param {string} line */
export function isThematicBreak(line) {
  const { columns, rest } = indent(line);
  const c = rest[0];
  if (columns > 3 || (c !== '-' && c !== '*' && c !== '_')) return false;
  let count = 0;
  for (const s of rest) {
    if (s === c) count++; else if (s !== ' ' && s !== '\t') return false;
  }
  return count >= 3;
}

/** An ATX heading (§4.2). @param {string} line @returns {{level: number, title: string} | null} */
export function atxHeading(line) {
  const { columns, rest } = indent(line);
  if (columns > 3) return null;
  let hashes = 0;
  while (rest[hashes] === '#') hashes++;
  if (hashes < 1 || hashes > 6) return null;
  let body = rest.slice(hashes);
  if (body.length > 0 && body[0] !== ' ' && body[0] !== '\t') return null;
  body = body.replace(/^[ \t]+/, '');
  let title = body.replace(/[ \t]+$/, '');
  const m = /#+$/.exec(title);
  if (m) {
    const before = title.slice(0, title.length - m[0].length);
    if (before === '' || /[ \t]$/.test(before)) title = before.replace(/[ \t]+$/, '');
  }
  return { level: hashes, title };
}

/** A setext underline (§4.3): 1 for `===`, 2 for `---`, else null. @param {string} line */
export function setextUnderline(line) {
  const { columns, rest } = indent(line);
  if (columns > 3) return null;
  const m = /^(=+|-+)[ \t]*$/.exec(rest);
  if (!m) return null;
  return m[1][0] === '=' ? 1 : 2;
}

/** The number of an ordered list item (§5.2), or null. @param {string} line */
export function orderedListNumber(line) {
  const { columns, rest } = indent(line);
  if (columns > 3) return null;
  const m = /^([0-9]{1,9})[.)] /.exec(rest);
  return m ? Number(m[1]) : null;
}

/** A line that can be a setext heading's content line (a paragraph line). @param {string} line */
export function isParagraphText(line) {
  const { columns, rest } = indent(line);
  if (columns > 3 || isBlank(line)) return false;
  if (atxHeading(line) || fence(line) || isThematicBreak(line)) return false;
  if (rest[0] === '>') return false;
  if ('-*+'.includes(rest[0]) && rest[1] === ' ') return false;
  if (orderedListNumber(line) !== null) return false;
  return true;
}

/**
 * Splits streamed Markdown into complete lines however it was chunked, tracking fenced
 * code. Lines end at LF; a CR before the LF is dropped.
 */
export class MarkdownLineScanner {
  constructor() {
    this._partial = '';
    /** @type {{char: string, length: number} | null} */
    this._fence = null;
  }

  /** `true` while an opened fence has not been closed. */
  get inFence() { return this._fence !== null; }

  /** Feeds text; returns the lines it completed. @param {string} text @returns {MarkdownLine[]} */
  feed(text) {
    const out = [];
    const parts = (this._partial + text).split('\n');
    this._partial = parts.pop() ?? '';
    for (let p of parts) {
      if (p.endsWith('\r')) p = p.slice(0, -1);
      out.push(this._classify(p));
    }
    return out;
  }

  /** Ends the stream: the unterminated last line, if any. @returns {MarkdownLine | null} */
  finish() {
    if (this._partial === '') return null;
    const line = this._classify(this._partial);
    this._partial = '';
    return line;
  }

  /** @param {string} text @returns {MarkdownLine} */
  _classify(text) {
    const open = this._fence;
    if (open) {
      const f = fence(text);
      if (f && f.char === open.char && f.length >= open.length && /^[ \t]*$/.test(f.info)) {
        this._fence = null;
        return { text, insideFence: false, isFence: true };
      }
      return { text, insideFence: true, isFence: false };
    }
    const f = fence(text);
    if (f && !(f.char === '`' && f.info.includes('`'))) {
      this._fence = { char: f.char, length: f.length };
      return { text, insideFence: false, isFence: true };
    }
    return { text, insideFence: false, isFence: false };
  }
}
