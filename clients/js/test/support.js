// Test support: a virtual clock and a scripted fetch with streaming bodies.

/** A clock whose time moves only when the test advances it; timers fire in time order. */
export class VirtualClock {
  constructor(start = 0) { this.t = start; this.timers = new Map(); this.nextId = 1; }
  now() { return this.t; }
  setTimeout(fn, ms) { const id = this.nextId++; this.timers.set(id, { at: this.t + Math.max(0, ms), fn, id }); return id; }
  clearTimeout(id) { this.timers.delete(id); }
  /** Advances by `ms`, firing due timers in order and letting promises settle after each. */
  async advance(ms) {
    const end = this.t + ms;
    for (;;) {
      await settle();
      let next = null;
      for (const x of this.timers.values()) if (x.at <= end && (!next || x.at < next.at || (x.at === next.at && x.id < next.id))) next = x;
      if (!next) break;
      this.timers.delete(next.id);
      this.t = next.at;
      next.fn();
    }
    this.t = end;
    await settle();
  }
}

/** Lets pending promise chains run (several macrotask turns). */
export async function settle() { for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r)); }

/** One SSE frame as the relay writes it. */
export const frame = (seq, obj) => `id: ${seq}\ndata: ${JSON.stringify(obj)}\n\n`;
export const delta = (seq, content) => frame(seq, { type: 'delta', content });
export const done = (seq, reason = 'stop') => frame(seq, { type: 'done', finish_reason: reason, usage: { prompt_tokens: 3, completion_tokens: seq, total_tokens: 3 + seq } });

/** A response body the test writes to and closes or errors. */
export class Body {
  constructor() {
    this.stream = new ReadableStream({ start: (c) => { this.c = c; } });
  }
  /** @param {string | Uint8Array} s text (sent as UTF-8) or bytes */
  write(s) { this.c.enqueue(typeof s === 'string' ? new TextEncoder().encode(s) : s); }
  end() { this.c.close(); }
  fail() { this.c.error(new TypeError('network error')); }
}

/**
 * A fetch that records each call and answers from `handler(call)`, which returns
 * `{status, headers, body: Body | string}` or throws (a network error).
 */
export function scriptedFetch(handler) {
  const calls = [];
  const fetch = async (url, init = {}) => {
    const call = { url, method: init.method ?? 'GET', headers: { ...(init.headers ?? {}) }, body: init.body, signal: init.signal };
    calls.push(call);
    const r = await handler(call, calls.length - 1);
    const headers = new Headers(r.headers ?? { 'content-type': 'text/event-stream' });
    const body = r.body instanceof Body ? r.body.stream : (r.status === 204 ? null : (r.body ?? ''));
    return new Response(body, { status: r.status ?? 200, headers });
  };
  return { fetch, calls };
}
