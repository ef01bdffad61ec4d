import { test } from 'node:test';
import assert from 'node:assert/strict';
import { relayChatTransportOptions, sseIdsIn, relayMessageOf, relayMessagesOf } from '../src/aiSdkTransport.js';

test('SSE ids are read across chunk boundaries, as the WHATWG parser reads them', () => {
  const state = { carry: '' };
  assert.deepEqual(sseIdsIn('data: {"type":"start"}\nid: 0\n\ndata: x\ni', state), ['0']);
  assert.deepEqual(sseIdsIn('d: 7\n\nid:8\r\nid\n\nidx: 9\n\n', state), ['7', ''],
    'the line cut after "i" is "id: 7"; in one block the last id line wins; "idx" is another field');
  assert.deepEqual(sseIdsIn('id: 1\u00002\n\n', state), [], 'an id with NUL is ignored');
});

test('an id counts only once its event has arrived whole (its blank line)', () => {
  const state = { carry: '' };
  assert.deepEqual(sseIdsIn('data: {"type":"text-delta","id":"text-1","delta":"a"}\nid: 1\n\ndata: {"type":"text-delta","id":"text-1","delta":"b"}\nid: 2\n', state),
    ['1'], 'event 2 is cut before its blank line: a resume from it would skip it');
  assert.deepEqual(sseIdsIn('\n', state), ['2'], 'its blank line arrives');
});

test('a reconnect with no answer sent through the transport is a 204, without a request', async () => {
  const { f, calls } = fakeFetch([]);
  const t = relayChatTransportOptions({ baseURL: 'https://relay.example', token: () => 'tok', fetch: f });
  const r = await t.prepareReconnectToStreamRequest({ id: 'chat-after-a-reload' });
  const res = await t.fetch(r.api, { method: 'GET', headers: r.headers });
  assert.equal(res.status, 204, 'the AI SDK takes a 204 as "nothing to resume" and any other failure as an error');
  assert.equal(calls.length, 0);
});

test('a response still arriving for an earlier answer does not move the next answer\'s last id', async () => {
  let release;
  const gate = new Promise((r) => { release = r; });
  const calls = [];
  const f = async (url, init) => {
    calls.push(String(url));
    const first = calls.length === 1;
    const stream = new ReadableStream({ async start(c) {
      const e = new TextEncoder();
      if (first) { c.enqueue(e.encode('data: {"type":"start"}\nid: 0\n\n')); await gate; c.enqueue(e.encode('data: {"type":"text-delta","id":"t","delta":"x"}\nid: 90\n\ndata: [DONE]\nid: 90\n\n')); }
      else c.enqueue(e.encode('data: {"type":"start"}\nid: 0\n\ndata: {"type":"text-delta","id":"t","delta":"y"}\nid: 3\n\ndata: [DONE]\nid: 3\n\n'));
      c.close();
    } });
    return new Response(stream, { status: 200 });
  };
  let n = 0;
  const t = relayChatTransportOptions({ baseURL: 'https://relay.example', token: () => 'tok', fetch: f, newRequestId: () => `req-000000000000000${n++}` });
  const one = await t.prepareSendMessagesRequest({ id: 'chat-1', messages: [] });
  const r1 = await t.fetch(one.api, { method: 'POST', headers: one.headers, body: '{}' });
  const two = await t.prepareSendMessagesRequest({ id: 'chat-1', messages: [] });
  const r2 = await t.fetch(two.api, { method: 'POST', headers: two.headers, body: '{}' });
  await r2.text();
  for (let i = 0; i < 50 && t.answerOf('chat-1').lastEventId !== '3'; i++) await new Promise((r) => setTimeout(r, 1));
  release();
  await r1.text();
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(t.answerOf('chat-1').requestId, 'req-0000000000000001');
  assert.equal(t.answerOf('chat-1').lastEventId, '3', 'the first answer\'s id 90 is not the second answer\'s');
});

test('message parts become the relay message content', () => {
  assert.deepEqual(relayMessageOf({ role: 'user', parts: [{ type: 'text', text: 'Draft ' }, { type: 'file' }, { type: 'text', text: 'an NDA' }] }),
    { role: 'user', content: 'Draft an NDA' });
});

test('tool calls the app answered go to the relay as tool_calls and tool messages, in the order of the steps', async () => {
  const history = [
    { role: 'user', parts: [{ type: 'text', text: 'Weather in Riyadh?' }] },
    { role: 'assistant', parts: [
      { type: 'step-start' }, { type: 'text', text: 'Checking.' },
      { type: 'tool-get_weather', toolCallId: 'call_1', state: 'output-available', input: { city: 'Riyadh' }, output: { temp_c: 31 } },
      { type: 'dynamic-tool', toolName: 'now', toolCallId: 'call_2', state: 'output-error', input: {}, errorText: 'no clock' },
      { type: 'tool-later', toolCallId: 'call_3', state: 'input-available', input: {} },
      { type: 'step-start' }, { type: 'text', text: 'It is 31 °C.' }] },
  ];
  const want = [
    { role: 'user', content: 'Weather in Riyadh?' },
    { role: 'assistant', content: 'Checking.', tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Riyadh"}' } },
      { id: 'call_2', type: 'function', function: { name: 'now', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c":31}' },
    { role: 'tool', tool_call_id: 'call_2', content: '{"error":"no clock"}' },
    { role: 'assistant', content: 'It is 31 °C.' },
  ];
  assert.deepEqual(history.flatMap(relayMessagesOf), want, 'a call without its result (call_3) is left out');
  const t = relayChatTransportOptions({ baseURL: 'https://relay.example', token: () => 'tok', newRequestId: () => 'req-0123456789abcdef' });
  const send = await t.prepareSendMessagesRequest({ id: 'chat-1', messages: history });
  assert.deepEqual(send.body.messages, want, 'the send carries them: the model sees what the tools returned');
  assert.deepEqual(relayMessagesOf({ role: 'assistant', parts: [{ type: 'tool-f', toolCallId: 'c', state: 'output-available', input: {}, output: 'plain' }] }),
    [{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c', content: 'plain' }]);
});

/** A fetch that answers every call with `body` (SSE text in chunks) and records the requests. */
function fakeFetch(chunks) {
  const calls = [];
  const f = async (url, init) => {
    calls.push({ url: String(url), headers: new Headers(init?.headers), body: init?.body });
    const stream = new ReadableStream({ start(c) { for (const s of chunks) c.enqueue(new TextEncoder().encode(s)); c.close(); } });
    return new Response(stream, { status: 200, headers: { 'content-type': 'text/event-stream', 'x-vercel-ai-ui-message-stream': 'v1' } });
  };
  return { f, calls };
}

test('the send goes to the relay in the AI SDK dialect and the reconnect resumes from the last id seen', async () => {
  const { f, calls } = fakeFetch(['data: {"type":"start","messageId":"r1"}\nid: 0\n\n', 'data: {"type":"text-start","id":"text-1"}\nid: 0\n\ndata: {"type":"text-delta","id":"text-1","delta":"Hi"}\nid: 1\n\n',
    'data: {"type":"text-delta","id":"text-1","delta":" there"}\nid: 2\n\n', 'data: [DONE]\nid: 2\n\n']);
  const t = relayChatTransportOptions({ baseURL: 'https://relay.example/', token: () => 'tok', model: 'simulated-tools', fetch: f,
    newRequestId: () => 'req-0123456789abcdef' });
  const send = await t.prepareSendMessagesRequest({ id: 'chat-1', messages: [{ role: 'user', parts: [{ type: 'text', text: 'Hello' }] }] });
  assert.equal(send.api, 'https://relay.example/api/chat/stream?format=ai-sdk');
  assert.equal(send.headers.Authorization, 'Bearer tok');
  assert.equal(send.headers['X-Request-Id'], 'req-0123456789abcdef');
  assert.deepEqual(send.body, { model: 'simulated-tools', messages: [{ role: 'user', content: 'Hello' }] });
  const res = await t.fetch(send.api, { method: 'POST', headers: send.headers, body: JSON.stringify(send.body) });
  assert.equal(calls[0].headers.get('X-Chat-Id'), null, 'the transport header stays on this side');
  const text = await res.text();
  assert.match(text, /" there"/, 'the body passes through whole');
  for (let i = 0; i < 50 && t.answerOf('chat-1').lastEventId !== '2'; i++) await new Promise((r) => setTimeout(r, 1));
  assert.equal(t.answerOf('chat-1').lastEventId, '2');
  const again = await t.prepareReconnectToStreamRequest({ id: 'chat-1' });
  assert.equal(again.api, 'https://relay.example/api/chat/stream/req-0123456789abcdef?format=ai-sdk');
  assert.equal(again.headers['Last-Event-ID'], '2');
});

/** A fetch whose n-th call answers `responses[n]`: a status and SSE chunks (or a thrown error). */
function scriptedFetch(responses) {
  const calls = [];
  const f = async (url, init) => {
    calls.push({ url: String(url), method: init?.method ?? 'GET', headers: new Headers(init?.headers) });
    const r = responses[calls.length - 1] ?? { status: 500, chunks: [] };
    if (r.throws) throw r.throws;
    if (r.status === 204) return new Response(null, { status: 204 });
    const stream = new ReadableStream({ start(c) { for (const x of r.chunks) c.enqueue(new TextEncoder().encode(x)); c.close(); } });
    return new Response(stream, { status: r.status, headers: { 'content-type': 'text/event-stream' } });
  };
  return { f, calls };
}

test('a response that ends before [DONE] (a drained relay) is resumed from the last id and goes on as the same body', async () => {
  const { f, calls } = scriptedFetch([
    { status: 200, chunks: ['data: {"type":"start","messageId":"r"}\nid: 0\n\n', 'data: {"type":"text-start","id":"text-1"}\nid: 0\n\ndata: {"type":"text-delta","id":"text-1","delta":"Hel"}\nid: 1\n\n',
      'data: {"type":"text-delta","id":"text-1","delta":"lo"}\nid: 2\n'] },   // cut before event 2's blank line
    { status: 503, chunks: ['{"error":{"code":"not_ready"}}'] },
    { status: 200, chunks: ['data: {"type":"start","messageId":"r"}\nid: 1\n\ndata: {"type":"text-start","id":"text-2"}\nid: 1\n\ndata: {"type":"text-delta","id":"text-2","delta":"lo"}\nid: 2\n\n',
      'data: {"type":"finish"}\nid: 3\n\ndata: [DONE]\nid: 3\n\n'] },
  ]);
  const t = relayChatTransportOptions({ baseURL: 'https://relay.example', token: () => 'tok', fetch: f, reconnectDelayMs: 1,
    newRequestId: () => 'req-0123456789abcdef' });
  const send = await t.prepareSendMessagesRequest({ id: 'chat-1', messages: [] });
  const res = await t.fetch(send.api, { method: 'POST', headers: send.headers, body: '{}' });
  const text = await res.text();
  assert.match(text, /"delta":"Hel"/);
  assert.match(text, /"type":"finish"/, 'the rest of the answer arrives on the same body');
  assert.equal(calls.length, 3, 'the send, a refused resume (503), the resume');
  assert.equal(calls[2].url, 'https://relay.example/api/chat/stream/req-0123456789abcdef?format=ai-sdk');
  assert.equal(calls[2].headers.get('Last-Event-ID'), '1', 'from the last event that arrived whole');
  assert.equal(calls[2].headers.get('Authorization'), 'Bearer tok');
  assert.equal(t.answerOf('chat-1').lastEventId, '3');
});

test('a response with its [DONE], or a resume answered 204, is not resumed again; a stopped request is not resumed', async () => {
  const whole = scriptedFetch([{ status: 200, chunks: ['data: {"type":"finish"}\nid: 4\n\ndata: [DONE]\nid: 4\n\n'] }]);
  const t1 = relayChatTransportOptions({ baseURL: 'https://relay.example', token: () => 'tok', fetch: whole.f, reconnectDelayMs: 1 });
  const s1 = await t1.prepareSendMessagesRequest({ id: 'c', messages: [] });
  await (await t1.fetch(s1.api, { method: 'POST', headers: s1.headers, body: '{}' })).text();
  assert.equal(whole.calls.length, 1);

  const ended = scriptedFetch([{ status: 200, chunks: ['data: {"type":"start"}\nid: 0\n\n'] }, { status: 204 }]);
  const t2 = relayChatTransportOptions({ baseURL: 'https://relay.example', token: () => 'tok', fetch: ended.f, reconnectDelayMs: 1 });
  const s2 = await t2.prepareSendMessagesRequest({ id: 'c', messages: [] });
  await (await t2.fetch(s2.api, { method: 'POST', headers: s2.headers, body: '{}' })).text();
  assert.equal(ended.calls.length, 2);

  const stopped = scriptedFetch([{ status: 200, chunks: ['data: {"type":"start"}\nid: 0\n\n'] }]);
  const t3 = relayChatTransportOptions({ baseURL: 'https://relay.example', token: () => 'tok', fetch: stopped.f, reconnectDelayMs: 1 });
  const s3 = await t3.prepareSendMessagesRequest({ id: 'c', messages: [] });
  const abort = new AbortController();
  const r3 = await t3.fetch(s3.api, { method: 'POST', headers: s3.headers, body: '{}', signal: abort.signal });
  abort.abort();
  await assert.rejects(r3.text());
  assert.equal(stopped.calls.length, 1, 'useChat\'s Stop is not undone by a resume');
});
