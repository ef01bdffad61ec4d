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
      if (first) { c.enqueue(e.encode('data: {"type":"start"}\nid: 0\n\n')); await gate; c.enqueue(e.encode('data: {"type":"text-delta","id":"t","delta":"x"}\nid: 90\n\n')); }
      else c.enqueue(e.encode('data: {"type":"start"}\nid: 0\n\ndata: {"type":"text-delta","id":"t","delta":"y"}\nid: 3\n\n'));
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
    'data: {"type":"text-delta","id":"text-1","delta":" there"}\nid: 2\n\n']);
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
