// SSE parsing (WHATWG HTML §9.2.5 "Parsing an event stream", §9.2.6 "Interpreting an
// event stream") over bytes from fetch + ReadableStream, decoded by a streaming TextDecoder.

/**
 * One parsed item: a dispatched event, or a comment line (`: text`).
 * @typedef {{kind: 'event', type: string, data: string, lastEventId: string} | {kind: 'comment', text: string}} SSEItem
 */

/** Thrown when one line exceeds `maxLineChars` (a stream that never ends its line). */
export class SSELineTooLongError extends Error {
  /** @param {number} limit */
  constructor(limit) {
    super(`SSE line longer than ${limit} characters`);
    this.name = 'SSELineTooLongError';
    this.limit = limit;
  }
}

/**
 * Incremental SSE parser. Feed it byte chunks (`Uint8Array`) split anywhere: inside a
 * UTF-8 sequence, between CR and LF, inside the BOM. Decoding is the WHATWG "UTF-8
 * decode" (a leading BOM stripped, invalid sequences → U+FFFD per maximal subpart).
 * Lines end at CRLF, LF or CR. `finish()` ends one connection's stream: an incomplete
 * event (no blank line after it) is discarded with its id, and the next `feed` starts a
 * new stream (its BOM is stripped again) while `lastEventId` is kept, as on reconnection.
 */
export class SSEParser {
  /** @param {{maxLineChars?: number}} [options] maxLineChars: longest accepted line (default 1 MiB of characters). */
  constructor(options = {}) {
    /** Longest line accepted, characters. */
    this.maxLineChars = options.maxLineChars ?? 1 << 20;
    /** The committed last event ID string (moves only when a block is dispatched). */
    this.lastEventId = '';
    /** The reconnection time the stream asked for (`retry:`), ms, or null. */
    this.retry = null;
    this._newStream();
  }

  _newStream() {
    /** @type {TextDecoder | null} made on the first byte chunk (text fed by XMLHttpRequest needs none: React Native has no TextDecoder) */
    this._decoder = null;
    this._line = '';
    this._pendingCR = false;
    this._data = [];
    this._hasData = false;
    this._type = '';
    this._idBuffer = this.lastEventId;
  }

  /**
   * Feeds bytes (or already decoded text). Returns the items completed by them.
   * @param {Uint8Array | string} chunk
   * @returns {SSEItem[]}
   * @throws {SSELineTooLongError}
   */
  feed(chunk) {
    const text = typeof chunk === 'string' ? chunk
      : (this._decoder ??= new TextDecoder('utf-8', { fatal: false, ignoreBOM: false })).decode(chunk, { stream: true });
    return this._feedText(text);
  }

  /**
   * Ends the current connection's stream. Dispatches nothing (§9.2.5: the end of the
   * stream does not dispatch the last event); the next `feed` starts a new stream.
   * @returns {SSEItem[]} always empty
   */
  finish() {
    if (this._decoder) this._decoder.decode();
    this._newStream();
    return [];
  }

  /** @param {string} text */
  _feedText(text) {
    /** @type {SSEItem[]} */
    const out = [];
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (this._pendingCR) {
        this._pendingCR = false;
        if (c === 0x0a) { start = i + 1; continue; }   // CRLF split or not: one terminator
      }
      if (c === 0x0a || c === 0x0d) {
        const line = this._line + text.slice(start, i);
        this._line = '';
        this._checkLength(line.length);
        this._processLine(line, out);
        if (c === 0x0d) this._pendingCR = true;
        start = i + 1;
      }
    }
    if (start < text.length) {
      this._line += text.slice(start);
      this._checkLength(this._line.length);
    }
    return out;
  }

  /** @param {number} n */
  _checkLength(n) {
    if (n > this.maxLineChars) {
      this._line = '';
      throw new SSELineTooLongError(this.maxLineChars);
    }
  }

  /** @param {string} line @param {SSEItem[]} out */
  _processLine(line, out) {
    if (line === '') { this._dispatch(out); return; }
    if (line.charCodeAt(0) === 0x3a) {
      let t = line.slice(1);
      if (t.startsWith(' ')) t = t.slice(1);
      out.push({ kind: 'comment', text: t });
      return;
    }
    const colon = line.indexOf(':');
    let field, value;
    if (colon < 0) { field = line; value = ''; } else {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
    }
    switch (field) {
      case 'event': this._type = value; break;
      case 'data': this._data.push(value); this._hasData = true; break;
      case 'id': if (!value.includes('\u0000')) this._idBuffer = value; break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) {
          const n = Number(value);
          if (Number.isSafeInteger(n)) this.retry = n;
        }
        break;
      default: break;
    }
  }

  /** @param {SSEItem[]} out */
  _dispatch(out) {
    this.lastEventId = this._idBuffer;
    const hasData = this._hasData;
    const data = this._data.join('\n');
    const type = this._type === '' ? 'message' : this._type;
    this._data = [];
    this._hasData = false;
    this._type = '';
    if (!hasData) return;
    out.push({ kind: 'event', type, data, lastEventId: this.lastEventId });
  }
}
