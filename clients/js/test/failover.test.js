// Load balancers and refused connections: the next attempt goes to the next base URL
// (conformance/CLIENT_RULES.md "Reconnect decisions").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RelayChatClient } from '../src/relayClient.js';
import { VirtualClock, Body, scriptedFetch, delta, done } from './support.js';

const request = { messages: [{ role: 'user', content: 'Draft an NDA' }] };
const lbError = (status) => ({ status, headers: { 'content-type': 'text/html' }, body: `<html><body><h1>${status} Bad Gateway</h1></body></html>` });
const rendered = (updates) => updates.filter((u) => u.kind === 'render').map((u) => u.update.appended).join('');

for (const status of [502, 503, 504]) {
  test(`${status} from the load balancer on the first request: the POST is re-sent to the next base URL with the same X-Request-Id`, async () => {
    const clock = new VirtualClock();
    const body = new Body();
    const { fetch, calls } = scriptedFetch((call, i) => (i === 0 ? lbError(status) : { body }));
    const client = new RelayChatClient({ baseURLs: ['http://a', 'http://b'], fetch, clock, random: () => 0, token: () => 't' });
    const s = client.startChat(request, { requestId: 'req-lb-0000000001' });
    const updates = [];
    s.subscribe((u) => updates.push(u));
    await clock.advance(999);
    assert.equal(calls.length, 1, 'waits the 1 s backoff');
    await clock.advance(1);
    assert.equal(calls.length, 2);
    assert.equal(calls[1].url, 'http://b/api/chat/stream');
    assert.equal(calls[1].method, 'POST');
    assert.equal(calls[1].headers['X-Request-Id'], 'req-lb-0000000001');
    body.write(delta(1, 'Mutual ') + delta(2, 'NDA.') + done(3));
    await clock.advance(100);
    assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'stop' });
    assert.equal(rendered(updates), 'Mutual NDA.');
  });
}

test('502 on a resume: the next base URL, resumed with Last-Event-ID, nothing lost', async () => {
  const clock = new VirtualClock();
  const bodies = [new Body(), null, new Body()];
  const { fetch, calls } = scriptedFetch((call, i) => (i === 1 ? lbError(502) : { body: bodies[i] }));
  const client = new RelayChatClient({ baseURLs: ['http://a', 'http://b', 'http://c'], fetch, clock, random: () => 0, token: () => 't' });
  const s = client.startChat(request, { requestId: 'req-lb-0000000002' });
  const updates = [];
  s.subscribe((u) => updates.push(u));
  await clock.advance(10);
  bodies[0].write(delta(1, 'One ') + delta(2, 'two '));
  bodies[0].fail();
  await clock.advance(1000);
  assert.equal(calls[1].url, 'http://b/api/chat/stream/req-lb-0000000002');
  assert.equal(calls[1].headers['Last-Event-ID'], '2');
  await clock.advance(1000);
  assert.equal(calls.length, 3);
  assert.equal(calls[2].url, 'http://c/api/chat/stream/req-lb-0000000002', 'after the 502, the next base URL');
  assert.equal(calls[2].headers['Last-Event-ID'], '2');
  bodies[2].write(delta(3, 'three.') + done(4));
  await clock.advance(100);
  assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'stop' });
  assert.equal(rendered(updates), 'One two three.');
});

test('a refused connection (fetch TypeError) moves to the next base URL; 500 stays terminal', async () => {
  const clock = new VirtualClock();
  const body = new Body();
  const { fetch, calls } = scriptedFetch((call) => {
    if (call.url.startsWith('http://a')) throw new TypeError('fetch failed: ECONNREFUSED');
    return { body };
  });
  const client = new RelayChatClient({ baseURLs: ['http://a', 'http://b'], fetch, clock, random: () => 0, token: () => 't' });
  const s = client.startChat(request, { requestId: 'req-lb-0000000003' });
  await clock.advance(1000);
  assert.equal(calls.length, 2);
  assert.equal(calls[1].url, 'http://b/api/chat/stream');
  body.write(delta(1, 'ok') + done(2));
  await clock.advance(10);
  assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'stop' });

  const { fetch: f2, calls: c2 } = scriptedFetch(() => ({ status: 500, headers: { 'content-type': 'application/json' }, body: '{"error":{"code":"internal_error","message":"x"}}' }));
  const s2 = new RelayChatClient({ baseURLs: ['http://a', 'http://b'], fetch: f2, clock, token: () => 't' }).startChat(request);
  await clock.advance(5000);
  assert.equal(c2.length, 1);
  assert.equal(s2.completion.code, 'internal_error');
});
