// The XMLHttpRequest transport (bare React Native) against a fake XHR that the test drives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RelayChatClient } from '../src/relayClient.js';
import { xhrFetch } from '../src/xhrTransport.js';
import { VirtualClock, delta, done, settle } from './support.js';

/** A fake XMLHttpRequest: records requests; the test answers with respond / progress / finish / fail. */
class FakeXHR {
  static all = [];
  constructor() {
    FakeXHR.all.push(this);
    this.readyState = 0; this.status = 0; this.responseText = ''; this.responseType = '';
    this.requestHeaders = {}; this.responseHeaders = {}; this.aborted = false;
    this.onreadystatechange = null; this.onprogress = null; this.onload = null; this.onerror = null; this.onabort = null; this.ontimeout = null;
  }
  open(method, url) { this.method = method; this.url = url; this.readyState = 1; }
  setRequestHeader(k, v) { this.requestHeaders[k] = v; }
  getResponseHeader(n) { return this.responseHeaders[n.toLowerCase()] ?? null; }
  send(body) { this.body = body; }
  abort() { this.aborted = true; this.readyState = 4; this.status = 0; this.onabort?.(); }
  respond(status, headers = {}) {
    this.status = status;
    this.responseHeaders = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    this.readyState = 2; this.onreadystatechange?.();
  }
  progress(text) { this.responseText += text; this.readyState = 3; this.onreadystatechange?.(); this.onprogress?.(); }
  finish(text = '') { this.responseText += text; this.readyState = 4; this.onreadystatechange?.(); this.onload?.(); }
  fail() { this.readyState = 4; this.status = 0; this.onreadystatechange?.(); this.onerror?.(); }
}
const reset = () => { FakeXHR.all = []; };
const rendered = (updates) => updates.filter((u) => u.kind === 'render').map((u) => u.update.appended).join('');
const request = { messages: [{ role: 'user', content: 'Draft an NDA' }] };

test('xhrFetch: resolves at the head; the reader yields each progress slice of responseText; text() at load', async () => {
  reset();
  const f = xhrFetch(FakeXHR);
  const p = f('http://a/x', { method: 'POST', headers: { 'X-A': '1' }, body: '{}' });
  const x = FakeXHR.all[0];
  assert.equal(x.method, 'POST');
  assert.equal(x.requestHeaders['X-A'], '1');
  assert.equal(x.body, '{}');
  x.respond(200, { 'Content-Type': 'text/event-stream' });
  const res = await p;
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/event-stream');
  const reader = res.body.getReader();
  x.progress('ab');
  x.progress('cdé');
  assert.deepEqual(await reader.read(), { value: 'ab', done: false });
  assert.deepEqual(await reader.read(), { value: 'cdé', done: false });
  const next = reader.read();
  x.finish('f');
  assert.deepEqual(await next, { value: 'f', done: false });
  assert.deepEqual(await reader.read(), { value: undefined, done: true });
  assert.equal(await res.text(), 'abcdéf');
});

test('xhrFetch: a failure before the head rejects with a TypeError (as fetch); after it, the read rejects; the signal aborts', async () => {
  reset();
  const f = xhrFetch(FakeXHR);
  const p = f('http://a/x');
  FakeXHR.all[0].fail();
  await assert.rejects(p, TypeError);
  const p2 = f('http://a/y');
  FakeXHR.all[1].respond(200);
  const r = (await p2).body.getReader();
  const pending = r.read();
  FakeXHR.all[1].fail();
  await assert.rejects(pending, TypeError);
  const ac = new AbortController();
  const p3 = f('http://a/z', { signal: ac.signal });
  ac.abort();
  assert.equal(FakeXHR.all[2].aborted, true);
  await assert.rejects(p3, { name: 'AbortError' });
});

test('an answer over XHR: SSE through progress events, a drop resumes on the next base URL, chosen by transport: "xhr"', async () => {
  reset();
  const clock = new VirtualClock();
  const client = new RelayChatClient({ baseURLs: ['http://a', 'http://b'], transport: 'xhr', XMLHttpRequest: FakeXHR, clock, random: () => 0, token: () => 't' });
  assert.equal(client.transport, 'xhr');
  const s = client.startChat(request, { requestId: 'req-xhr-0000000001' });
  const updates = [];
  s.subscribe((u) => updates.push(u));
  await settle();
  const x = FakeXHR.all[0];
  assert.equal(x.method, 'POST');
  assert.equal(x.url, 'http://a/api/chat/stream');
  assert.equal(x.requestHeaders.Authorization, 'Bearer t');
  x.respond(200, { 'content-type': 'text/event-stream' });
  await settle();
  const text = 'retry: 1000\n\n' + delta(1, 'Mutual ') + delta(2, 'non-disclosure ');
  x.progress(text.slice(0, 20));          // split inside an event
  x.progress(text.slice(20));
  await clock.advance(100);
  assert.equal(s.policy.lastEventId, 2, 'both events parsed from the progress slices');
  x.fail();
  await clock.advance(1000);
  const y = FakeXHR.all[1];
  assert.equal(y.url, 'http://b/api/chat/stream/req-xhr-0000000001');
  assert.equal(y.requestHeaders['Last-Event-ID'], '2');
  y.respond(200, { 'content-type': 'text/event-stream' });
  await settle();
  y.progress(delta(3, 'agreement.') + done(4));
  y.finish();
  await clock.advance(100);
  assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'stop' });
  assert.equal(rendered(updates), 'Mutual non-disclosure agreement.');
});

test('long-poll over XHR: plain requests, the JSON read at load', async () => {
  reset();
  const clock = new VirtualClock();
  const client = new RelayChatClient({ baseURLs: ['http://a'], transport: 'xhr', XMLHttpRequest: FakeXHR, readMode: 'longPoll', clock, random: () => 0, token: () => 't' });
  const s = client.startChat(request, { requestId: 'req-xhr-0000000002' });
  const updates = [];
  s.subscribe((u) => updates.push(u));
  await settle();
  FakeXHR.all[0].respond(200, { 'content-type': 'text/event-stream' });
  await settle();
  assert.equal(FakeXHR.all[0].aborted, true, 'the POST is left once the answer exists');
  const g = FakeXHR.all[1];
  assert.equal(g.url, 'http://a/api/chat/stream/req-xhr-0000000002?offset=-1&live=long-poll');
  assert.equal(g.requestHeaders.Accept, 'application/json');
  g.respond(200, { 'content-type': 'application/json', 'stream-next-offset': '00000000000000000002', 'stream-closed': 'true' });
  g.finish(JSON.stringify([{ type: 'delta', content: 'Done.' }, { type: 'done', finish_reason: 'stop', usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }]));
  await clock.advance(100);
  assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'stop' });
  assert.equal(rendered(updates), 'Done.');
});

test('without a streaming fetch, the client picks XHR by itself', async () => {
  const saved = globalThis.Response;
  globalThis.Response = class { };        // React Native's whatwg-fetch Response: no body stream
  globalThis.XMLHttpRequest = FakeXHR;
  try {
    const client = new RelayChatClient({ baseURLs: ['http://a'], token: () => 't' });
    assert.equal(client.transport, 'xhr');
  } finally {
    globalThis.Response = saved;
    delete globalThis.XMLHttpRequest;
  }
  assert.equal(new RelayChatClient({ baseURLs: ['http://a'], token: () => 't' }).transport, 'fetch');
});

test('the SSE parser needs no TextDecoder for text (React Native has none)', async () => {
  const { SSEParser } = await import('../src/sseParser.js');
  const saved = globalThis.TextDecoder;
  delete globalThis.TextDecoder;
  try {
    const p = new SSEParser();
    const items = [...p.feed('retry: 1000\n\nid: 1\ndata: {"type":"delta","content":"مر'), ...p.feed('حبا"}\n\n')];
    p.finish();
    assert.deepEqual(items.map((i) => i.kind === 'event' && [i.data, i.lastEventId]).filter(Boolean), [['{"type":"delta","content":"مرحبا"}', '1']]);
  } finally {
    globalThis.TextDecoder = saved;
  }
});

test('SSE over XHR in odd progress splits (one character, between CR and LF, inside a field name, empty progress): the text exactly once', async () => {
  reset();
  const clock = new VirtualClock();
  const client = new RelayChatClient({ baseURLs: ['http://a'], transport: 'xhr', XMLHttpRequest: FakeXHR, clock, random: () => 0, token: () => 't' });
  const s = client.startChat(request, { requestId: 'req-xhr-0000000009' });
  const updates = [];
  s.subscribe((u) => updates.push(u));
  await settle();
  const x = FakeXHR.all[0];
  x.respond(200, { 'content-type': 'text/event-stream' });
  await settle();
  const parts = ['Mutual ', 'اتفاقية ', 'عدم ', 'إفشاء\n', '— “NDA” ', '😀 done.'];
  let body = 'retry: 1000\r\n\r\n: ping\r\n\r\n';
  parts.forEach((p, i) => { body += delta(i + 1, p).replace(/\n/g, '\r\n'); });
  body += done(parts.length + 1).replace(/\n/g, '\r\n');
  // Split points: every CR|LF, inside "data", inside "id:", and single characters at the start.
  let at = 0;
  const cuts = [];
  for (let i = 1; i < body.length; i++) if (body[i - 1] === '\r' || body.slice(i - 2, i) === 'da' || body.slice(i - 1, i) === 'i' || i < 12) cuts.push(i);
  for (const c of [...cuts, body.length]) {
    x.progress(body.slice(at, c));
    if (c % 7 === 0) x.progress('');             // a progress event with nothing new
    at = c;
    await clock.advance(1);
  }
  x.finish();
  await clock.advance(200);
  assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'stop' });
  assert.equal(rendered(updates), parts.join(''));
  assert.equal(s.policy.lastEventId, parts.length + 1);
  assert.equal(FakeXHR.all.length, 1, 'no reconnection, no long-poll switch');
});
