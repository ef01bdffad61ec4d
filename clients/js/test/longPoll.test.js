// Buffering proxies and the long-poll read (conformance/CLIENT_RULES.md "Buffering proxies";
// the relay's catch-up / long-poll read at GET /api/chat/stream/{id}?offset=…&live=long-poll).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RelayChatClient } from '../src/relayClient.js';
import { VirtualClock, Body, scriptedFetch, delta, done } from './support.js';

const request = { messages: [{ role: 'user', content: 'Draft an NDA' }] };
const rendered = (updates) => updates.filter((u) => u.kind === 'render').map((u) => u.update.appended).join('');
const dlt = (content) => ({ type: 'delta', content });
const fin = (n) => ({ type: 'done', finish_reason: 'stop', usage: { prompt_tokens: 3, completion_tokens: n, total_tokens: 3 + n } });
/** A long-poll 200: events, with Stream-Next-Offset = the seq of the last one (zero-padded, as the relay emits). */
const poll = (events, next, extra = {}) => ({ status: 200, headers: { 'content-type': 'application/json; charset=utf-8', 'stream-next-offset': String(next).padStart(20, '0'), 'stream-cursor': `c${next}`, ...extra }, body: JSON.stringify(events) });
const timeout204 = (next) => ({ status: 204, headers: { 'stream-next-offset': String(next).padStart(20, '0'), 'stream-up-to-date': 'true' } });

function client(handler, extra = {}) {
  const clock = new VirtualClock();
  const { fetch, calls } = scriptedFetch(handler);
  const tokens = [];
  const c = new RelayChatClient({ baseURLs: ['http://a', 'http://b'], fetch, clock, random: () => 0,
    token: (info) => { tokens.push(info); return `t${tokens.length}`; }, ...extra });
  return { clock, calls, tokens, c };
}

test('head, then no byte for 20 s: the answer goes on over long-poll from the last event id, and the client stays on long-poll', async () => {
  const sse = new Body();
  const polls = [poll([dlt('keep '), dlt('it ')], 3), timeout204(3), poll([dlt('secret.'), fin(4)], 5, { 'stream-closed': 'true' })];
  const post2 = new Body();
  const { clock, calls, c } = client((call) => {
    if (call.url.includes('live=long-poll')) return polls.shift();
    if (call.method === 'POST' && calls.length > 1) return { body: post2 };
    return { body: sse };
  });
  const s = c.startChat(request, { requestId: 'req-proxy-000000001' });
  const updates = [];
  s.subscribe((u) => updates.push(u));
  await clock.advance(100);
  sse.write(delta(1, 'Parties ')); // a proxy let one write through, then holds the rest
  // From now on nothing: the read above was the first byte, so the first-byte bound does not apply …
  await clock.advance(30_000);
  assert.equal(calls.length, 1, 'bytes arrived: SSE is kept ' + calls.map((x) => x.url).join());
  s.stop();

  // … a fresh answer whose head comes but no byte follows.
  const sse2 = new Body();
  const { clock: k, calls: cs, c: c2, tokens } = client((call) => {
    if (call.url.includes('live=long-poll')) return polls.shift();
    if (call.method === 'POST' && cs.filter((x) => x.method === 'POST').length > 1) return { body: post2 };
    return { body: sse2 };
  });
  const s2 = c2.startChat(request, { requestId: 'req-proxy-000000002' });
  const u2 = [];
  s2.subscribe((u) => u2.push(u));
  await k.advance(19_999);                       // the head came at 0
  assert.equal(cs.length, 1, 'waits 20 s after the head');
  await k.advance(1);
  assert.ok(cs.length >= 2);
  assert.equal(cs[1].url, 'http://a/api/chat/stream/req-proxy-000000002?offset=-1&live=long-poll', 'same base URL, before any event: -1');
  assert.equal(cs[1].method, 'GET');
  assert.equal(cs[1].headers.Authorization, 'Bearer t2');
  assert.equal(cs[1].headers['X-Request-Id'], 'req-proxy-000000002');
  assert.equal(c2.longPoll, true);
  assert.equal(c2.bufferingDetected, 'silentAfterHeaders');
  assert.ok(u2.some((u) => u.kind === 'connection' && u.status === 'longPoll' && u.reason === 'silentAfterHeaders'));
  assert.equal(cs[2].url, 'http://a/api/chat/stream/req-proxy-000000002?offset=3&live=long-poll&cursor=c3', 'next read from Stream-Next-Offset, cursor echoed');
  await k.advance(999);
  assert.equal(cs.length, 3, 'an immediate 204 is not repeated sooner than 1 s after it was sent');
  await k.advance(1);
  assert.equal(cs[3].url, 'http://a/api/chat/stream/req-proxy-000000002?offset=3&live=long-poll&cursor=c3', 'a 204 polls again from the same offset');
  await k.advance(10);
  assert.deepEqual(s2.completion, { kind: 'finished', finishReason: 'stop' });
  assert.equal(rendered(u2), 'keep it secret.');
  assert.equal(cs.length, 4);
  assert.equal(u2.at(-1).record.reconnections, 0, 'a switch and polls are not reconnections');
  assert.deepEqual(tokens.map((t) => t.refresh), [false, false, false, false], 'the token asked for every read');

  // The next answer of the same client: the POST starts it, its events come over long-poll.
  polls.push(poll([dlt('Second.'), fin(2)], 2, { 'stream-closed': 'true' }));
  const s3 = c2.startChat(request, { requestId: 'req-proxy-000000003' });
  const u3 = [];
  s3.subscribe((u) => u3.push(u));
  await k.advance(10);
  assert.equal(cs[4].method, 'POST');
  assert.equal(cs[5].url, 'http://a/api/chat/stream/req-proxy-000000003?offset=-1&live=long-poll');
  await k.advance(10);
  assert.deepEqual(s3.completion, { kind: 'finished', finishReason: 'stop' });
  assert.equal(rendered(u3), 'Second.');
});

test('the whole body in one read at the end: the answer is shown, and the next answer uses long-poll', async () => {
  const sse = new Body();
  const post2 = new Body();
  const { clock, calls, c } = client((call, i) => {
    if (call.url.includes('live=long-poll')) return poll([dlt('B'), fin(1)], 2, { 'stream-closed': 'true' });
    return { body: i === 0 ? sse : post2 };
  });
  const s = c.startChat(request, { requestId: 'req-proxy-000000004' });
  const updates = [];
  s.subscribe((u) => updates.push(u));
  await clock.advance(100);
  sse.write('retry: 1000\n\n');
  await clock.advance(8000);
  sse.write(delta(1, 'All ') + delta(2, 'at ') + delta(3, 'once.') + done(4));
  sse.end();
  await clock.advance(10);
  assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'stop' });
  assert.equal(rendered(updates), 'All at once.');
  assert.equal(c.longPoll, true);
  assert.equal(c.bufferingDetected, 'wholeBodyAtEnd');
  const s2 = c.startChat(request, { requestId: 'req-proxy-000000005' });
  await clock.advance(10);
  assert.equal(calls[1].method, 'POST');
  assert.match(calls[2].url, /\?offset=-1&live=long-poll$/);
  await clock.advance(10);
  assert.deepEqual(s2.completion, { kind: 'finished', finishReason: 'stop' });
});

test('a burst cut without done: the answer is finished over long-poll from the last id', async () => {
  const sse = new Body();
  const { clock, calls, c } = client((call) => (call.url.includes('live=long-poll') ? poll([dlt('four.'), fin(4)], 5, { 'stream-closed': 'true' }) : { body: sse }));
  const s = c.startChat(request, { requestId: 'req-proxy-000000006' });
  const updates = [];
  s.subscribe((u) => updates.push(u));
  await clock.advance(6000);
  sse.write(delta(1, 'one ') + delta(2, 'two ') + delta(3, 'three '));
  await clock.advance(300);
  sse.end();
  await clock.advance(10);
  assert.equal(calls.length, 2, 'no backoff wait');
  assert.equal(calls[1].url, 'http://a/api/chat/stream/req-proxy-000000006?offset=3&live=long-poll');
  await clock.advance(10);
  assert.equal(rendered(updates), 'one two three four.');
  assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'stop' });
});

test('a streaming path stays on SSE; readMode "sse" never switches', async () => {
  for (const readMode of ['auto', 'sse']) {
    const sse = new Body();
    const { clock, calls, c } = client(() => ({ body: sse }), { readMode });
    const s = c.startChat(request);
    await clock.advance(100);
    if (readMode === 'auto') sse.write('retry: 1000\n\n');
    await clock.advance(25_000);
    if (readMode === 'auto') { sse.write(': ping\n\n'); await clock.advance(1000); }
    sse.write(delta(1, 'a') + done(2));
    await clock.advance(10);
    assert.equal(calls.length, 1, readMode);
    assert.equal(c.longPoll, false, readMode);
    assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'stop' });
  }
});

test('long-poll reads fail over like resumes: 502 → next base URL with the same offset; a refused read too; 401 token_expired → fresh token', async () => {
  const answers = [
    poll([dlt('a ')], 1),
    { status: 502, headers: { 'content-type': 'text/html' }, body: 'Bad Gateway' },
    'refused',
    { status: 401, headers: { 'content-type': 'application/json' }, body: '{"error":{"code":"unauthorized","message":"expired"}}' },
    poll([dlt('b'), fin(2)], 3, { 'stream-closed': 'true' }),
  ];
  const { clock, calls, c, tokens } = client((call) => {
    if (call.method === 'POST') return { body: new Body() };
    const a = answers.shift();
    if (a === 'refused') throw new TypeError('fetch failed');
    return a;
  }, { readMode: 'longPoll' });
  const s = c.startChat(request, { requestId: 'req-proxy-000000007' });
  const updates = [];
  s.subscribe((u) => updates.push(u));
  await clock.advance(10);
  assert.equal(calls[1].url, 'http://a/api/chat/stream/req-proxy-000000007?offset=-1&live=long-poll');
  assert.equal(calls[2].url, 'http://a/api/chat/stream/req-proxy-000000007?offset=1&live=long-poll&cursor=c1');
  await clock.advance(1000);
  assert.equal(calls[3].url, 'http://b/api/chat/stream/req-proxy-000000007?offset=1&live=long-poll&cursor=c1', 'after the 502, the next base URL');
  await clock.advance(1000);
  assert.equal(calls[4].url, 'http://a/api/chat/stream/req-proxy-000000007?offset=1&live=long-poll&cursor=c1', 'after the refused read, the next one');
  await clock.advance(10);
  assert.deepEqual(tokens.at(-1), { refresh: true }, 'a 401 to a read asks for a fresh token');
  assert.equal(calls[5].url, 'http://b/api/chat/stream/req-proxy-000000007?offset=1&live=long-poll&cursor=c1');
  await clock.advance(10);
  assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'stop' });
  assert.equal(rendered(updates), 'a b');
});

test('long-poll: 204 Stream-Closed without the terminal event fails; an empty read is not repeated sooner than 1 s; 404 is terminal', async () => {
  const answers = [timeout204(0), { status: 204, headers: { 'stream-closed': 'true', 'stream-next-offset': '0'.repeat(20) } }];
  const { clock, calls, c } = client((call) => (call.method === 'POST' ? { body: new Body() } : answers.shift()), { readMode: 'longPoll' });
  const s = c.startChat(request);
  await clock.advance(10);
  assert.equal(calls.length, 2);
  await clock.advance(980);
  assert.equal(calls.length, 2, 'an immediate 204 waits out the 1 s');
  await clock.advance(20);
  assert.equal(calls.length, 3);
  assert.equal(s.completion.kind, 'failed');
  assert.equal(s.completion.code, 'stream_closed');

  const { clock: k2, calls: c2, c: client2 } = client((call) => (call.method === 'POST' ? { body: new Body() }
    : { status: 404, headers: { 'content-type': 'application/json' }, body: '{"error":{"code":"stream_not_found","message":"gone"}}' }), { readMode: 'longPoll' });
  const s2 = client2.startChat(request);
  await k2.advance(5000);
  assert.equal(c2.length, 2);
  assert.equal(s2.completion.code, 'stream_not_found');
});

test('a relay without the long-poll read answers it with an SSE resume from the start: read as SSE, seen events skipped, SSE from then on', async () => {
  const old = new Body();
  const answers = [poll([dlt('one '), dlt('two ')], 2), { body: old }];
  const { clock, calls, c } = client((call) => (call.method === 'POST' ? { body: new Body() } : answers.shift()), { readMode: 'longPoll' });
  const s = c.startChat(request, { requestId: 'req-proxy-000000008' });
  const updates = [];
  s.subscribe((u) => updates.push(u));
  await clock.advance(10);
  assert.equal(calls.length, 3);
  old.write(delta(1, 'one ') + delta(2, 'two ') + delta(3, 'three.') + done(4));
  await clock.advance(10);
  assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'stop' });
  assert.equal(rendered(updates), 'one two three.', 'nothing repeated');
  assert.equal(c.longPoll, false);
  assert.equal(c.readMode, 'sse');
});

test('a 502 storm on every base URL over long-poll: a bounded number of reads, each at least 1 s after the last, then needsResume', async () => {
  const clock = new VirtualClock();
  const lb = { status: 502, headers: { 'content-type': 'text/html' }, body: '<html>502 Bad Gateway</html>' };
  const sse = new Body();
  const times = [];
  const { fetch, calls } = scriptedFetch((call) => { times.push(clock.now()); return call.method === 'POST' ? { body: sse } : lb; });
  const c = new RelayChatClient({ baseURLs: ['http://a', 'http://b', 'http://c'], fetch, clock, random: () => 0, token: () => 't', readMode: 'longPoll' });
  const s = c.startChat(request, { requestId: 'req-storm-00000001' });
  await clock.advance(10 * 60_000);
  assert.ok(s.completion, 'the answer ended');
  assert.equal(s.completion.kind, 'needsResume');
  const reads = calls.filter((x) => x.url.includes('live=long-poll'));
  assert.ok(reads.length >= 2 && reads.length <= 6, `bounded reads: ${reads.length}`);
  assert.deepEqual(new Set(reads.map((x) => new URL(x.url).host)).size > 1, true, 'rotated base URLs');
  // Before any event each attempt re-sends the (idempotent, same X-Request-Id) POST, then reads.
  const readTimes = times.filter((_, i) => calls[i].url.includes('live=long-poll'));
  for (let i = 1; i < readTimes.length; i++) assert.ok(readTimes[i] - readTimes[i - 1] >= 1000, `no hot loop: ${readTimes.join(',')}`);
  assert.ok(calls.length <= 2 * reads.length, 'one POST at most per read');
});

test('a buffered body flushed late on the abandoned SSE connection after the switch to long-poll: nothing twice at the seam', async () => {
  const sse = new Body();
  const { clock, calls, c } = client((call) => (call.url.includes('live=long-poll')
    ? poll([dlt('one '), dlt('two '), dlt('three.'), fin(3)], 4, { 'stream-closed': 'true' }) : { body: sse }));
  const s = c.startChat(request, { requestId: 'req-seam-000000001' });
  const updates = [];
  s.subscribe((u) => updates.push(u));
  await clock.advance(20_000);                   // head at 0, no byte: switched
  assert.equal(calls.length, 2);
  // The proxy now releases what it held, on the connection the client gave up.
  try { sse.write(delta(1, 'one ') + delta(2, 'two ') + delta(3, 'three.') + done(4)); sse.end(); } catch { /* cancelled */ }
  await clock.advance(100);
  assert.equal(rendered(updates), 'one two three.');
  assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'stop' });
});
