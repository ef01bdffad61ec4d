// A fetch-shaped function over XMLHttpRequest, for bare React Native: it has XMLHttpRequest but
// no streaming fetch body, and this needs no polyfill. The body of a text/event-stream response
// arrives through `progress` events (XHR standard §3.6.7), as the new part of `responseText`;
// a long-poll read is a plain request whose whole text is read at `load`.

/**
 * The part of XMLHttpRequest the transport uses (XHR standard §3; React Native's `XMLHttpRequest`).
 * @typedef {{open(method: string, url: string, async?: boolean): void, setRequestHeader(name: string, value: string): void,
 *   send(body?: any): void, abort(): void, getResponseHeader(name: string): string | null,
 *   readyState: number, status: number, responseText: string, responseType: string,
 *   onreadystatechange: any, onprogress: any, onload: any, onerror: any, onabort: any, ontimeout: any}} XHRLike
 */

/** `HEADERS_RECEIVED` (XHR standard §3.2): the response head arrived. */
const HEADERS_RECEIVED = 2;

/**
 * A fetch-shaped function over `XMLHttpRequest`. The promise resolves when the response head
 * arrives, with `{status, headers.get(name), body.getReader(), text()}`: the reader yields the
 * body as strings (each the text added since the last `progress` event) and ends at `load`;
 * `text()` resolves with the whole text at `load`. It rejects with a `TypeError` when the
 * request fails before a head (refused, unreachable: XHR's `error` with status 0), as `fetch`
 * does; after the head, a failure rejects the pending `read()` (or `text()`). `init.signal`
 * aborts the request (an `AbortError`).
 *
 * The text of a response is kept by the XHR until its end (the standard has no chunked
 * text response); an answer of the relay is tens of kilobytes.
 * @param {new () => XHRLike} [XHR] the constructor (`globalThis.XMLHttpRequest`)
 * @returns {(url: string, init?: {method?: string, headers?: Record<string, string>, body?: any, signal?: AbortSignal | null}) => Promise<any>}
 */
export function xhrFetch(XHR = /** @type {any} */ (globalThis).XMLHttpRequest) {
  if (typeof XHR !== 'function') throw new TypeError('xhrFetch needs XMLHttpRequest');
  return (url, init = {}) => new Promise((resolve, reject) => {
    const xhr = new XHR();
    /** @type {string[]} */
    const chunks = [];
    /** @type {{resolve: (v: any) => void, reject: (e: any) => void} | null} */
    let waiting = null;
    /** @type {((v: string) => void)[]} */
    const textWaiters = [];
    /** @type {((e: any) => void)[]} */
    const textFailures = [];
    let seen = 0;
    let headed = false;
    let ended = false;
    /** @type {any} */
    let failure = null;

    const pull = () => {
      const t = xhr.responseText ?? '';
      if (t.length > seen) {
        chunks.push(t.slice(seen));
        seen = t.length;
      }
      wake();
    };
    const wake = () => {
      if (!waiting) return;
      const w = waiting;
      if (chunks.length) { waiting = null; w.resolve({ value: chunks.shift(), done: false }); } else if (failure) { waiting = null; w.reject(failure); } else if (ended) { waiting = null; w.resolve({ value: undefined, done: true }); }
    };
    const fail = (/** @type {any} */ e) => {
      if (ended || failure) return;
      failure = e;
      if (!headed) { headed = true; reject(e); return; }
      for (const f of textFailures) f(e);
      wake();
    };
    const response = {
      get status() { return xhr.status; },
      headers: { get: (/** @type {string} */ name) => xhr.getResponseHeader(name) },
      body: {
        getReader: () => ({
          read: () => new Promise((res, rej) => { waiting = { resolve: res, reject: rej }; wake(); }),
          cancel: async () => { xhr.abort(); },
        }),
      },
      text: () => new Promise((res, rej) => {
        if (ended) res(xhr.responseText ?? '');
        else if (failure) rej(failure);
        else { textWaiters.push(res); textFailures.push(rej); }
      }),
    };
    const head = () => { if (!headed) { headed = true; resolve(response); } };

    xhr.open(init.method ?? 'GET', url, true);
    xhr.responseType = 'text';
    for (const [k, v] of Object.entries(init.headers ?? {})) xhr.setRequestHeader(k, v);
    xhr.onreadystatechange = () => { if (xhr.readyState >= HEADERS_RECEIVED && xhr.status !== 0) head(); };
    xhr.onprogress = () => { if (xhr.status !== 0) { head(); pull(); } };
    xhr.onload = () => {
      head();
      pull();
      ended = true;
      const t = xhr.responseText ?? '';
      for (const w of textWaiters) w(t);
      wake();
    };
    xhr.onerror = () => fail(new TypeError('Network request failed'));
    xhr.ontimeout = () => fail(new TypeError('Network request timed out'));
    xhr.onabort = () => fail(Object.assign(new Error('Aborted'), { name: 'AbortError' }));
    const signal = init.signal;
    if (signal) {
      if (signal.aborted) { xhr.abort(); fail(Object.assign(new Error('Aborted'), { name: 'AbortError' })); return; }
      signal.addEventListener('abort', () => xhr.abort(), { once: true });
    }
    xhr.send(init.body ?? null);
  });
}

/**
 * `true` when this runtime's `fetch` can hand over a response body as it arrives
 * (`Response.prototype.body`, a `ReadableStream`): browsers, Node 18+, Expo's `expo/fetch`.
 * React Native's built-in fetch (whatwg-fetch on XMLHttpRequest) has no `body`.
 */
export function fetchStreamsBodies() {
  const g = /** @type {any} */ (globalThis);
  if (typeof g.fetch !== 'function' || typeof g.Response !== 'function' || typeof g.ReadableStream !== 'function') return false;
  return 'body' in g.Response.prototype;
}
