import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RelayChatClient } from '../src/relayClient.js';
import { VirtualClock, Body, scriptedFetch, delta, done, frame, settle } from './support.js';
import { BudgetState } from '../src/uiState.js';

const request = { messages: [{ role: 'user', content: 'Draft an NDA' }], model: 'simulated' };

function collect(stream) {
  const updates = [];
  stream.subscribe((u) => updates.push(u));
  return updates;
}
const rendered = (updates) => updates.filter((u) => u.kind === 'render').map((u) => u.update.appended).join('');

test('a dropped stream resumes on the next base URL with Last-Event-ID and ends byte-identical', async () => {
  const clock = new VirtualClock(1_000_000);
  const bodies = [new Body(), new Body()];
  const { fetch, calls } = scriptedFetch((call, i) => ({ body: bodies[i] }));
  const tokens = [];
  const telemetry = [];
  const client = new RelayChatClient({ baseURLs: ['http://a', 'http://b/'], fetch, clock, random: () => 0.5,
    token: (info) => { tokens.push(info); return `t${tokens.length}`; }, telemetry: (r) => telemetry.push(r) });
  const s = client.startChat(request, { requestId: 'req1' });
  const updates = collect(s);
  await clock.advance(10);
  bodies[0].write(delta(1, 'The parties agree ') + delta(2, 'to keep all information confidential '));
  await clock.advance(100);
  bodies[0].write(delta(3, 'for five ye'));
  bodies[0].end();                                     // cut mid-answer
  await clock.advance(499);
  assert.equal(calls.length, 1, 'the first reconnection after a drop waits the full jitter: floor(0.5 × 1001) = 500 ms');
  await clock.advance(1);
  assert.equal(calls.length, 2);
  assert.equal(calls[1].url, 'http://b/api/chat/stream/req1');
  assert.equal(calls[1].method, 'GET');
  assert.equal(calls[1].headers['Last-Event-ID'], '3');
  assert.equal(calls[1].headers['X-Request-Id'], 'req1');
  assert.equal(calls[1].headers.Authorization, 'Bearer t2');
  assert.equal(calls[0].method, 'POST');
  assert.deepEqual(JSON.parse(calls[0].body), request);
  bodies[1].write(delta(3, 'for five ye') + delta(4, 'ars.') + done(5));
  await clock.advance(10);
  assert.equal(rendered(updates), 'The parties agree to keep all information confidential for five years.');
  assert.deepEqual(tokens, [{ refresh: false }, { refresh: false }], 'token asked on every connection');
  assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'stop' });
  assert.equal(telemetry.length, 1);
  assert.deepEqual(Object.keys(telemetry[0]).sort(), ['latencyMs', 'reconnections', 'requestId', 'tokensReceived']);
  assert.deepEqual(telemetry[0], { requestId: 'req1', tokensReceived: 4, latencyMs: 10, reconnections: 1 });
  assert.equal(updates.at(-1).kind, 'telemetry');
});

test('the layout update comes before the first text, and Arabic is rtl', async () => {
  const clock = new VirtualClock();
  const body = new Body();
  const { fetch } = scriptedFetch(() => ({ body }));
  const client = new RelayChatClient({ baseURLs: ['http://a'], fetch, clock, token: () => 't' });
  const s = client.startChat(request);
  const updates = collect(s);
  await clock.advance(5);
  body.write(delta(1, '---\n') + delta(2, '\n') + delta(3, 'يلتزم الطرف المتلقي بحماية المعلومات السرية وعدم إفشائها '));
  await clock.advance(100);
  const kinds = updates.filter((u) => u.kind === 'layout' || u.kind === 'render').map((u) => u.kind);
  assert.equal(kinds[0], 'layout');
  assert.equal(updates.find((u) => u.kind === 'layout').layout.direction, 'rtl');
  assert.ok(rendered(updates).startsWith('---\n\nيلتزم'));
});

test('Stop: stopped at once, DELETE retried across base URLs 1 s apart', async () => {
  const clock = new VirtualClock();
  const body = new Body();
  const deletes = [];
  const { fetch, calls } = scriptedFetch((call) => {
    if (call.method === 'DELETE') {
      deletes.push(call.url);
      if (deletes.length < 3) throw new TypeError('connection refused');
      return { status: 202, headers: { 'content-type': 'application/json' }, body: '{"status":"cancelling"}' };
    }
    return { body };
  });
  const client = new RelayChatClient({ baseURLs: ['http://a', 'http://b'], fetch, clock, token: () => 't' });
  const s = client.startChat(request, { requestId: 'r9' });
  const updates = collect(s);
  await clock.advance(5);
  body.write(delta(1, 'Some text that is long enough to be decided by the sample. '));
  await clock.advance(60);
  s.stop();
  assert.deepEqual(s.completion, { kind: 'stopped' }, 'stopped at once');
  await settle();
  assert.equal(deletes.length, 1);
  await clock.advance(1000);
  assert.equal(deletes.length, 2);
  await clock.advance(1000);
  assert.deepEqual(deletes, ['http://a/api/chat/stream/r9', 'http://b/api/chat/stream/r9', 'http://a/api/chat/stream/r9']);
  assert.equal(updates.find((u) => u.kind === 'cancelled').status, 202);
  assert.equal(calls.filter((c) => c.method === 'DELETE').length, 3);
});

test('Stop: a 404 DELETE (relay has not seen the POST yet) is retried; 202 pending ends it', async () => {
  const clock = new VirtualClock();
  const deletes = [];
  const { fetch } = scriptedFetch((call) => {
    if (call.method === 'DELETE') {
      deletes.push(call.url);
      if (deletes.length === 1) return { status: 404, headers: { 'content-type': 'application/json' }, body: '{"error":{"code":"stream_not_found","message":"no such stream"}}' };
      return { status: 202, headers: { 'content-type': 'application/json' }, body: '{"requestId":"r10abcdefghijklmnop","state":"pending"}' };
    }
    throw new TypeError('not used');
  });
  const client = new RelayChatClient({ baseURLs: ['http://a', 'http://b'], fetch, clock, token: () => 't' });
  const done = client.cancel('r10abcdefghijklmnop');
  await settle();
  assert.equal(deletes.length, 1);
  await clock.advance(1000);
  assert.equal(await done, 202);
  assert.deepEqual(deletes, ['http://a/api/chat/stream/r10abcdefghijklmnop', 'http://b/api/chat/stream/r10abcdefghijklmnop']);
});

test('Stop: a DELETE answered 404 on every attempt resolves to 404 after the bounded attempts', async () => {
  const clock = new VirtualClock();
  let deletes = 0;
  const { fetch } = scriptedFetch((call) => {
    if (call.method !== 'DELETE') throw new TypeError('not used');
    deletes += 1;
    return { status: 404, headers: { 'content-type': 'application/json' }, body: '{"error":{"code":"stream_not_found","message":"no such stream"}}' };
  });
  const client = new RelayChatClient({ baseURLs: ['http://a'], fetch, clock, token: () => 't' });
  const done = client.cancel('r11abcdefghijklmnop');
  await settle();
  await clock.advance(1000);
  await clock.advance(1000);
  assert.equal(await done, 404);
  assert.equal(deletes, 3);
});

test('503 with Retry-After waits R seconds and rotates; token_expired asks for a fresh token', async () => {
  const clock = new VirtualClock();
  const bodies = [new Body(), null, new Body(), new Body()];
  const tokens = [];
  const { fetch, calls } = scriptedFetch((call, i) => {
    if (i === 1) return { status: 503, headers: { 'content-type': 'application/json', 'retry-after': '4' }, body: '{"error":{"code":"not_ready","message":"draining"}}' };
    return { body: bodies[i] };
  });
  const client = new RelayChatClient({ baseURLs: ['http://a', 'http://b'], fetch, clock, random: () => 0, token: (info) => { tokens.push(info.refresh); return 't'; } });
  const s = client.startChat(request, { requestId: 'x' });
  await clock.advance(5);
  bodies[0].write(delta(1, 'Hello '));
  bodies[0].fail();
  await clock.advance(1);
  assert.equal(calls.length, 2, 'the first reconnection after the drop: the full jitter, 0 ms for r = 0');
  await clock.advance(3998);
  assert.equal(calls.length, 2, 'Retry-After 4 s');
  await clock.advance(1);
  assert.equal(calls.length, 3);
  assert.equal(calls[2].url, 'http://a/api/chat/stream/x');
  bodies[2].write(frame(1, { type: 'error', status: 401, code: 'token_expired', message: 'expired' }));
  await clock.advance(1);
  assert.equal(calls.length, 4);
  assert.equal(calls[3].headers['Last-Event-ID'], '1');
  assert.deepEqual(tokens, [false, false, false, true]);
  assert.equal(s.completion, null);
});

test('three failed reconnections → needsResume; resume re-sends the whole request with a new id', async () => {
  const clock = new VirtualClock();
  const { fetch, calls } = scriptedFetch((call, i) => { if (i === 0) return { body: delta(1, 'Hi ') }; throw new TypeError('refused'); });
  const client = new RelayChatClient({ baseURLs: ['http://a', 'http://b'], fetch, clock, random: () => 0.5, token: () => 't' });
  const s = client.startChat(request, { requestId: 'first' });
  await clock.advance(5000);
  assert.equal(calls.length, 4);
  assert.deepEqual(s.completion, { kind: 'needsResume' });
  const r = s.resume();
  await clock.advance(1);
  assert.equal(calls.length, 5);
  assert.equal(calls[4].method, 'POST');
  assert.notEqual(calls[4].headers['X-Request-Id'], 'first');
  assert.equal(r.requestId, calls[4].headers['X-Request-Id']);
});

test('a non-200 answer fails with the relay error code, without reconnecting', async () => {
  const clock = new VirtualClock();
  const { fetch, calls } = scriptedFetch(() => ({ status: 429, headers: { 'content-type': 'application/json' }, body: '{"error":{"code":"token_budget_exhausted","message":"no tokens"}}' }));
  const client = new RelayChatClient({ baseURLs: ['http://a'], fetch, clock, token: () => 't' });
  const s = client.startChat(request);
  await clock.advance(3000);
  assert.equal(calls.length, 1);
  assert.deepEqual(s.completion, { kind: 'failed', status: 429, code: 'token_budget_exhausted', message: 'no tokens' });
});

test('background: updates pause and replay on foreground; a drop reconnects at once on foreground', async () => {
  const clock = new VirtualClock();
  const bodies = [new Body(), new Body()];
  const { fetch, calls } = scriptedFetch((c, i) => ({ body: bodies[i] }));
  const client = new RelayChatClient({ baseURLs: ['http://a'], fetch, clock, random: () => 0, token: () => 't' });
  const s = client.startChat(request);
  const updates = collect(s);
  await clock.advance(5);
  s.enterBackground();
  bodies[0].write(delta(1, 'While the app sleeps the text keeps arriving here. '));
  bodies[0].end();
  await clock.advance(60_000);
  assert.equal(rendered(updates), '');
  assert.equal(calls.length, 1, 'no reconnect in the background');
  s.enterForeground();
  await settle();
  assert.equal(rendered(updates), 'While the app sleeps the text keeps arriving here.');
  assert.equal(calls.length, 2);
  assert.equal(calls[1].headers['Last-Event-ID'], '1');
});

test('late resume: back after 10 min in the background, the rest of a finished answer arrives as streamed, then the done', async () => {
  const clock = new VirtualClock();
  const bodies = [new Body(), new Body()];
  const { fetch, calls } = scriptedFetch((c, i) => ({ body: bodies[i] }));
  const client = new RelayChatClient({ baseURLs: ['http://a'], fetch, clock, random: () => 0, token: () => 't' });
  const s = client.startChat(request);
  const updates = collect(s);
  await clock.advance(5);
  bodies[0].write(delta(1, 'The parties agree ') + delta(2, 'to keep '));
  await clock.advance(10);
  s.enterBackground();
  bodies[0].end();
  await clock.advance(600_000);
  assert.equal(calls.length, 1, 'nothing in the background, and not ended by the idle rule');
  assert.equal(s.completion, null);
  s.enterForeground();
  await settle();
  assert.equal(calls.length, 2, 'one late resume at once');
  assert.equal(calls[1].headers['Last-Event-ID'], '2');
  bodies[1].write(delta(3, 'all information ') + delta(4, 'confidential.') + done(5));   // PROTOCOL.md §6.5: the deltas as streamed, then done
  bodies[1].end();
  await clock.advance(10);
  assert.equal(rendered(updates), 'The parties agree to keep all information confidential.');
  assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'stop' });
});

test('late resume answered 404 (not retained): needsResume, not a failure', async () => {
  const clock = new VirtualClock();
  const body = new Body();
  const { fetch, calls } = scriptedFetch((c, i) => (i === 0 ? { body }
    : { status: 404, headers: { 'content-type': 'application/json' }, body: '{"error":{"code":"stream_not_found","message":"no such stream"}}' }));
  const client = new RelayChatClient({ baseURLs: ['http://a'], fetch, clock, random: () => 0, token: () => 't' });
  const s = client.startChat(request);
  collect(s);
  await clock.advance(5);
  body.write(delta(1, 'The parties '));
  s.enterBackground();
  body.end();
  await clock.advance(300_001);
  s.enterForeground();
  await settle();
  await clock.advance(10);
  assert.equal(calls.length, 2);
  assert.deepEqual(s.completion, { kind: 'needsResume' });
});

test('a done with budget_limited: the flag on the final render only, and the pill says nothing remains', async () => {
  const clock = new VirtualClock();
  const body = new Body();
  const { fetch } = scriptedFetch(() => ({ body }));
  const client = new RelayChatClient({ baseURLs: ['http://a'], fetch, clock, random: () => 0, token: () => 't' });
  client.budget = new BudgetState({ tier: 'free', limit: 500, used: 200, reserved: 0, remaining: 300, period: '2026-12' });
  const s = client.startChat(request);
  const updates = collect(s);
  await clock.advance(5);
  body.write(delta(1, 'The tenant shall pay the monthly rent on the ') + delta(2, 'fir'));
  await clock.advance(60);
  body.write(frame(3, { type: 'done', finish_reason: 'length', usage: { prompt_tokens: 9, completion_tokens: 41, total_tokens: 50 }, budget_limited: true }));
  body.end();
  await clock.advance(10);
  const renders = updates.filter((u) => u.kind === 'render').map((u) => u.update);
  assert.deepEqual(renders.at(-1).completion, { kind: 'finished', finishReason: 'length' });
  assert.equal(renders.at(-1).budgetLimited, true);
  assert.equal(renders.slice(0, -1).some((r) => r.budgetLimited), false);
  assert.equal(rendered(updates), 'The tenant shall pay the monthly rent on the fir');
  const pill = updates.filter((u) => u.kind === 'budget').at(-1).budget;
  assert.equal(pill.used, 250);
  assert.equal(pill.remaining, 0, 'usage alone would say 250');
  assert.equal(pill.pillText, 'No tokens remaining this month');
});
