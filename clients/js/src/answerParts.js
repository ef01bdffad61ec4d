// Typed answer parts (docs/PROTOCOL.md §5.5): reasoning, tool calls, sources, app data. Each
// is one numbered event beside `delta`/`done`/`error`; the kit validates its shape and hands it
// to the app in the order received, with each tool call assembled. Never part of the text.

/** The `type`s of part events. */
export const PART_TYPES = Object.freeze(['reasoning', 'reasoning_redacted', 'tool_call_start', 'tool_call_delta', 'tool_call_end', 'tool_result', 'source', 'data']);

const DATA_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const has = (/** @type {object} */ o, /** @type {string} */ k) => Object.prototype.hasOwnProperty.call(o, k);
const isString = (/** @type {unknown} */ v) => typeof v === 'string';
const isName = (/** @type {unknown} */ v) => typeof v === 'string' && v !== '';
/** An optional string field: absent or null → undefined; a string → itself; anything else → false (malformed). */
const optional = (/** @type {any} */ o, /** @type {string} */ k) => (o[k] === undefined || o[k] === null ? undefined : isString(o[k]) ? o[k] : false);

/**
 * A part event's object with exactly its fields, or null when `event` is not a well-formed part
 * (another type, or a required field missing or of the wrong JSON type, an empty id, name or url,
 * a data part's name not `[A-Za-z0-9_-]{1,64}`): such an event is ignored, like any event the
 * kit cannot read. The shapes, as the relay writes them:
 * `{type:'reasoning', content}`, `{type:'reasoning_redacted', data}`, `{type:'tool_call_start', id, name}`,
 * `{type:'tool_call_delta', id, arguments}`, `{type:'tool_call_end', id, name, input}`, `{type:'tool_result', id, output}`,
 * `{type:'source', id, url, title?}`, `{type:'data', name, id?, data}` (`input`, `output`, `data`: any JSON value).
 * @param {any} event a decoded stream event
 * @returns {import('../index').AnswerPart | null}
 */
export function parsePart(event) {
  if (!event || typeof event !== 'object' || Array.isArray(event)) return null;
  const o = event;
  switch (o.type) {
    case 'reasoning': return isString(o.content) ? { type: 'reasoning', content: o.content } : null;
    case 'reasoning_redacted': return isString(o.data) ? { type: 'reasoning_redacted', data: o.data } : null;
    case 'tool_call_start': return isName(o.id) && isName(o.name) ? { type: 'tool_call_start', id: o.id, name: o.name } : null;
    case 'tool_call_delta': return isName(o.id) && isString(o.arguments) ? { type: 'tool_call_delta', id: o.id, arguments: o.arguments } : null;
    case 'tool_call_end': return isName(o.id) && isName(o.name) && has(o, 'input') ? { type: 'tool_call_end', id: o.id, name: o.name, input: o.input } : null;
    case 'tool_result': return isName(o.id) && has(o, 'output') ? { type: 'tool_result', id: o.id, output: o.output } : null;
    case 'source': {
      const title = optional(o, 'title');
      if (!isName(o.id) || !isName(o.url) || title === false) return null;
      return title === undefined ? { type: 'source', id: o.id, url: o.url } : { type: 'source', id: o.id, url: o.url, title };
    }
    case 'data': {
      const id = optional(o, 'id');
      if (!isString(o.name) || !DATA_NAME.test(o.name) || !has(o, 'data') || id === false) return null;
      return id === undefined ? { type: 'data', name: o.name, data: o.data } : { type: 'data', name: o.name, id, data: o.data };
    }
    default: return null;
  }
}

/**
 * Whether a part is a generated token that is not text (reasoning and tool-call argument pieces):
 * one completion token each when the upstream reports no usage (docs/PROTOCOL.md §5.5, §9.2).
 * @param {{type: string}} part
 */
export function countsAsToken(part) {
  return part.type === 'reasoning' || part.type === 'tool_call_delta';
}

/**
 * The typed parts of one answer received so far, in the order they arrived, with each tool call
 * assembled and the reasoning joined. The stream hands it each part event once (events whose seq
 * was already received are skipped first), so a resume that lands inside a part adds nothing twice.
 *
 * Tool calls: `tool_call_start` opens a call (a second start for an id already seen changes
 * nothing); `tool_call_delta` appends to its open call's `arguments`; `tool_call_end` sets its
 * `name` and `input` and closes it (`ended: true`); `tool_result` (an agent backend ran the tool) sets
 * the `output` of its ended call. A piece or end for a call that never started or already ended, and a
 * result for a call not ended or already given one, is listed in `parts` but changes no call. The
 * Swift kit's `AnswerParts` keeps the same rules. Every update's arrays and call objects are fresh: an update an app keeps never changes.
 */
export class AnswerParts {
  constructor() {
    /** @type {import('../index').AnswerPart[]} every part so far, in order */
    this.parts = [];
    /** @type {import('../index').ToolCall[]} the tool calls so far, in the order they started */
    this.toolCalls = [];
    /** The `reasoning` pieces' content concatenated in seq order. */
    this.reasoning = '';
    /** Reasoning and argument pieces received, one token each. */
    this.tokens = 0;
    /** @type {Map<string, number>} index into toolCalls by call id */
    this._index = new Map();
  }

  /**
   * Adds one part (as `parsePart` returns it) and returns the update an app sees for it.
   * @param {import('../index').AnswerPart} part
   * @returns {import('../index').PartsUpdate}
   */
  receive(part) {
    this.parts = [...this.parts, part];
    if (countsAsToken(part)) this.tokens += 1;
    /** @type {import('../index').ToolCall | null} */
    let changed = null;
    const replace = (/** @type {number} */ i, /** @type {import('../index').ToolCall} */ call) => {
      this.toolCalls = this.toolCalls.map((c, k) => (k === i ? call : c));
      changed = call;
    };
    switch (part.type) {
      case 'reasoning': this.reasoning += part.content; break;
      case 'tool_call_start':
        if (!this._index.has(part.id)) {
          this._index.set(part.id, this.toolCalls.length);
          changed = { id: part.id, name: part.name, arguments: '', ended: false };
          this.toolCalls = [...this.toolCalls, changed];
        }
        break;
      case 'tool_call_delta': {
        const i = this._index.get(part.id);
        const c = i === undefined ? null : this.toolCalls[i];
        if (i !== undefined && c && !c.ended) replace(i, { ...c, arguments: c.arguments + part.arguments });
        break;
      }
      case 'tool_call_end': {
        const i = this._index.get(part.id);
        const c = i === undefined ? null : this.toolCalls[i];
        if (i !== undefined && c && !c.ended) replace(i, { id: c.id, name: part.name, arguments: c.arguments, ended: true, input: part.input });
        break;
      }
      case 'tool_result': {
        const i = this._index.get(part.id);
        const c = i === undefined ? null : this.toolCalls[i];
        if (i !== undefined && c && c.ended && !('output' in c)) replace(i, { ...c, output: part.output });
        break;
      }
      default: break;
    }
    return { part, parts: this.parts, toolCalls: this.toolCalls, toolCall: changed, reasoning: this.reasoning, tokens: this.tokens };
  }
}
