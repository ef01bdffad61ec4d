// Typed answer parts (docs/PROTOCOL.md §5.5): the shapes the kit accepts, the assembled tool calls,
// the render rules kept for the text, and parts through the stream in the background and over long-poll.
// Resumes that land inside a part are the vectors of conformance/parts.json (test/conformance.test.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePart, countsAsToken, AnswerParts, PART_TYPES } from '../src/answerParts.js';
import { ResponseRenderer } from '../src/responseRenderer.js';
import { RelayChatClient } from '../src/relayClient.js';
import { VirtualClock, Body, scriptedFetch, frame } from './support.js';

const request = { messages: [{ role: 'user', content: 'Weather in Riyadh?' }] };

test('parsePart keeps exactly the fields of each part type; null title and data id count as absent', () => {
  const riyadh = { city: 'Riyadh' };
  const cases = [
    [{ type: 'reasoning', content: '' }, { type: 'reasoning', content: '' }],
    [{ type: 'reasoning_redacted', data: 'RW5j', extra: 1 }, { type: 'reasoning_redacted', data: 'RW5j' }],
    [{ type: 'tool_call_start', id: 'call_1', name: 'get_weather' }, { type: 'tool_call_start', id: 'call_1', name: 'get_weather' }],
    [{ type: 'tool_call_delta', id: 'call_1', arguments: '' }, { type: 'tool_call_delta', id: 'call_1', arguments: '' }],
    [{ type: 'tool_call_end', id: 'call_1', name: 'get_weather', input: riyadh }, { type: 'tool_call_end', id: 'call_1', name: 'get_weather', input: riyadh }],
    [{ type: 'tool_call_end', id: 'c', name: 'f', input: null }, { type: 'tool_call_end', id: 'c', name: 'f', input: null }],
    [{ type: 'tool_result', id: 'call_1', output: { temp_c: 41 }, ms: 3 }, { type: 'tool_result', id: 'call_1', output: { temp_c: 41 } }],
    [{ type: 'source', id: 's1', url: 'https://e.com', title: 'T', favicon: 'x' }, { type: 'source', id: 's1', url: 'https://e.com', title: 'T' }],
    [{ type: 'source', id: 's1', url: 'https://e.com', title: null }, { type: 'source', id: 's1', url: 'https://e.com' }],
    [{ type: 'data', name: 'weather_v-2', id: 'w1', data: [1, null] }, { type: 'data', name: 'weather_v-2', id: 'w1', data: [1, null] }],
    [{ type: 'data', name: 'x', id: null, data: null }, { type: 'data', name: 'x', data: null }],
    [{ type: 'data', name: 'x'.repeat(64), data: 0 }, { type: 'data', name: 'x'.repeat(64), data: 0 }],
  ];
  for (const [event, part] of cases) assert.deepEqual(parsePart(event), part, JSON.stringify(event));
  assert.deepEqual(new Set(cases.map(([e]) => e.type)), new Set(PART_TYPES));
});

test('parsePart refuses a malformed part: missing or mistyped fields, empty ids, names and urls, a bad data name', () => {
  for (const event of [
    null, 7, [], { type: 'delta', content: 'x' }, { type: 'citation_v9' },
    { type: 'reasoning' }, { type: 'reasoning', content: 7 }, { type: 'reasoning_redacted', data: null },
    { type: 'tool_call_start', id: '', name: 'f' }, { type: 'tool_call_start', id: 'c' },
    { type: 'tool_call_delta', id: 'c', arguments: 1 }, { type: 'tool_call_delta', arguments: '{}' },
    { type: 'tool_call_end', id: 'c', name: 'f' }, { type: 'tool_call_end', id: 'c', name: '', input: {} },
    { type: 'tool_result', id: 'c' }, { type: 'tool_result', id: '', output: 1 },
    { type: 'source', id: 's1', url: '' }, { type: 'source', id: 's1', url: 'https://e.com', title: 5 },
    { type: 'data', name: 'bad name', data: 1 }, { type: 'data', name: '', data: 1 }, { type: 'data', name: 'x'.repeat(65), data: 1 },
    { type: 'data', name: 'ä', data: 1 }, { type: 'data', name: 'x' }, { type: 'data', name: 'x', id: 3, data: 1 },
  ]) assert.equal(parsePart(event), null, JSON.stringify(event));
});

test('a tool call is assembled piece by piece and its input handed over whole at the end', () => {
  const a = new AnswerParts();
  assert.deepEqual(a.receive(parsePart({ type: 'tool_call_start', id: 'call_1', name: 'get_weather' })).toolCall,
    { id: 'call_1', name: 'get_weather', arguments: '', ended: false });
  assert.equal(a.receive({ type: 'tool_call_delta', id: 'call_1', arguments: '{"city":' }).toolCall.arguments, '{"city":');
  const piece = a.receive({ type: 'tool_call_delta', id: 'call_1', arguments: '"Riyadh"}' });
  assert.deepEqual(piece.toolCall, { id: 'call_1', name: 'get_weather', arguments: '{"city":"Riyadh"}', ended: false }, 'no input before the end');
  const end = a.receive({ type: 'tool_call_end', id: 'call_1', name: 'get_weather', input: { city: 'Riyadh' } });
  assert.deepEqual(end.toolCall, { id: 'call_1', name: 'get_weather', arguments: '{"city":"Riyadh"}', ended: true, input: { city: 'Riyadh' } });
  assert.deepEqual(end.toolCalls, [end.toolCall]);
  assert.equal(end.parts.length, 4);
  assert.equal(end.tokens, 2, 'each argument piece is a token');
});

test('parts of a call never started or already ended are listed but change no call', () => {
  const a = new AnswerParts();
  assert.equal(a.receive({ type: 'tool_call_delta', id: 'ghost', arguments: '{}' }).toolCall, null);
  assert.equal(a.receive({ type: 'tool_call_end', id: 'ghost', name: 'f', input: {} }).toolCall, null);
  a.receive({ type: 'tool_call_start', id: 'c', name: 'f' });
  a.receive({ type: 'tool_call_end', id: 'c', name: 'f', input: null });
  assert.equal(a.receive({ type: 'tool_call_delta', id: 'c', arguments: 'late' }).toolCall, null);
  const again = a.receive({ type: 'tool_call_start', id: 'c', name: 'g' });
  assert.equal(again.toolCall, null, 'a second start for a known id changes nothing');
  assert.deepEqual(again.toolCalls, [{ id: 'c', name: 'f', arguments: '', ended: true, input: null }]);
  assert.equal(again.parts.length, 6);
  assert.equal(again.tokens, 2);
});

test("an agent backend's tool_result gives its ended call an output; too early, twice or for no call it changes nothing", () => {
  const a = new AnswerParts();
  a.receive({ type: 'tool_call_start', id: 'call_1', name: 'get_weather' });
  assert.equal(a.receive({ type: 'tool_result', id: 'call_1', output: 'too early' }).toolCall, null);
  a.receive({ type: 'tool_call_end', id: 'call_1', name: 'get_weather', input: {} });
  const result = a.receive({ type: 'tool_result', id: 'call_1', output: null });
  assert.deepEqual(result.toolCall, { id: 'call_1', name: 'get_weather', arguments: '', ended: true, input: {}, output: null });
  assert.equal(a.receive({ type: 'tool_result', id: 'call_1', output: 'again' }).toolCall, null);
  const ghost = a.receive({ type: 'tool_result', id: 'call_9', output: 1 });
  assert.equal(ghost.toolCall, null);
  assert.deepEqual(ghost.toolCalls, [result.toolCall]);
  assert.equal(ghost.parts.length, 6);
  assert.equal(ghost.tokens, 0, 'a result is not a generated token');
});

test('reasoning is joined; redacted reasoning, sources and data are listed but are neither reasoning nor tokens', () => {
  const a = new AnswerParts();
  a.receive({ type: 'reasoning', content: 'The user wants ' });
  a.receive({ type: 'reasoning_redacted', data: 'RW5j' });
  a.receive({ type: 'source', id: 's1', url: 'https://e.com' });
  const u = a.receive({ type: 'reasoning', content: 'the weather.' });
  assert.equal(u.reasoning, 'The user wants the weather.');
  assert.equal(u.tokens, 2);
  assert.deepEqual(u.parts.map((p) => p.type), ['reasoning', 'reasoning_redacted', 'source', 'reasoning']);
  assert.deepEqual(['reasoning', 'tool_call_delta', 'reasoning_redacted', 'tool_call_start', 'tool_call_end', 'tool_result', 'source', 'data']
    .map((type) => countsAsToken({ type })), [true, true, false, false, false, false, false, false]);
});

test('an update an app keeps never changes afterwards', () => {
  const a = new AnswerParts();
  const first = a.receive({ type: 'tool_call_start', id: 'c', name: 'f' });
  const second = a.receive({ type: 'tool_call_delta', id: 'c', arguments: '{}' });
  assert.equal(first.parts.length, 1);
  assert.equal(first.toolCalls[0].arguments, '');
  assert.equal(second.toolCalls[0].arguments, '{}');
});

test('parts release no text, are not sampled for the direction and do not count as the first token', () => {
  const r = new ResponseRenderer(0);
  assert.equal(r.receive({ type: 'reasoning', content: 'يسأل المستخدم عن الطقس في الرياض اليوم بالتفصيل.\n\n' }, 10), null, 'a paragraph break in reasoning flushes nothing');
  assert.equal(r.receive({ type: 'tool_call_start', id: 'c', name: 'get_weather' }, 20), null);
  assert.equal(r.receive({ type: 'tool_call_delta', id: 'c', arguments: '{\n\n"city": "Riyadh"}' }, 30), null);
  assert.equal(r.receive({ type: 'tool_call_delta', id: '', arguments: 'malformed: not a token' }, 31), null);
  assert.equal(r.tick(100), null);
  assert.equal(r.typing.isVisible, true, 'parts do not hide the typing indicator');
  assert.equal(r.firstTokenAt, null);
  r.receive({ type: 'delta', content: 'The weather ' }, 110);
  r.receive({ type: 'source', id: 's1', url: 'https://e.com' }, 120);
  const u = r.receive({ type: 'done', finish_reason: 'stop', usage: { completion_tokens: 4 } }, 130);
  assert.equal(u.text, 'The weather ');
  assert.equal(u.layout.direction, 'ltr', 'the Arabic reasoning is not in the sample');
  assert.equal(r.firstTokenAt, 110);
  assert.equal(r.tokensReceived, 1, 'deltas only');
  assert.equal(r.partTokensReceived, 2, 'the reasoning piece and the well-formed argument piece');
});

test('part tokens are left out of the draft progress a done reads from its usage', () => {
  const doc = `# NDA\n\nThis draft has 7 clauses.\n\n## Clause 1 — Definitions\n${'word '.repeat(300)}`;
  const deltas = doc.split(' ').map((w) => `${w} `);
  const render = (reasoningPieces) => {
    const r = new ResponseRenderer(0);
    for (let i = 0; i < reasoningPieces; i++) r.receive({ type: 'reasoning', content: 'thinking ' }, 1);
    for (const d of deltas) r.receive({ type: 'delta', content: d }, 2);
    return r.receive({ type: 'done', finish_reason: 'stop', usage: { completion_tokens: deltas.length + reasoningPieces } }, 3);
  };
  assert.equal(render(1500).progress, null, 'about 320 text tokens: no progress');
  const coalesced = new ResponseRenderer(0);
  coalesced.receive({ type: 'delta', content: doc }, 1);
  assert.equal(coalesced.receive({ type: 'done', finish_reason: 'stop', usage: { completion_tokens: 1200 } }, 2).progress.text,
    'Drafting clause 1 of 7…', "a coalesced delta's tokens are read from the usage");
});

test('in the background a part is sent at once while the paragraph before it waits for the foreground', async () => {
  const clock = new VirtualClock();
  const body = new Body();
  const { fetch } = scriptedFetch(() => ({ body }));
  const client = new RelayChatClient({ baseURLs: ['http://a'], fetch, clock, random: () => 0, token: () => 't' });
  const s = client.startChat(request);
  const updates = [];
  s.subscribe((u) => updates.push(u));
  await clock.advance(5);
  const paragraph = 'It is sunny in Riyadh today, with clear skies.\n\n';
  const source = { type: 'source', id: 's1', url: 'https://example.com/weather', title: 'Weather' };
  s.enterBackground();
  body.write(frame(1, { type: 'delta', content: paragraph }) + frame(2, source));
  await clock.advance(1000);
  assert.deepEqual(updates.filter((u) => u.kind === 'parts').map((u) => u.update.part), [source]);
  assert.equal(updates.filter((u) => u.kind === 'render').length, 0, 'the text waits for the foreground');
  s.enterForeground();
  assert.equal(updates.filter((u) => u.kind === 'render').at(-1).update.text, paragraph);
  body.write(frame(3, { type: 'done', finish_reason: 'stop', usage: {} }));
  body.end();
  await clock.advance(10);
  assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'stop' });
  assert.deepEqual(s.parts.parts, [source]);
});

test('parts read over long-poll are the parts an SSE response carries', async () => {
  const clock = new VirtualClock();
  const sse = new Body();
  const events = [{ type: 'tool_call_start', id: 'call_1', name: 'plot' }, { type: 'tool_call_delta', id: 'call_1', arguments: '{"z":1}' },
    { type: 'tool_call_end', id: 'call_1', name: 'plot', input: { z: 1, a: ['\ufeffx'] } },
    { type: 'done', finish_reason: 'tool_calls', usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }];
  const { fetch } = scriptedFetch((call) => (call.url.includes('live=long-poll')
    ? { status: 200, headers: { 'content-type': 'application/json', 'stream-next-offset': '00000000000000000004', 'stream-closed': 'true' }, body: JSON.stringify(events) }
    : { body: sse }));
  const client = new RelayChatClient({ baseURLs: ['http://a'], fetch, clock, random: () => 0, token: () => 't', readMode: 'longPoll' });
  const s = client.startChat(request);
  const updates = [];
  s.subscribe((u) => updates.push(u));
  await clock.advance(10);
  const parts = updates.filter((u) => u.kind === 'parts').map((u) => u.update);
  assert.deepEqual(parts.map((u) => u.part), events.slice(0, 3));
  assert.deepEqual(parts.at(-1).toolCall, { id: 'call_1', name: 'plot', arguments: '{"z":1}', ended: true, input: { z: 1, a: ['\ufeffx'] } });
  assert.deepEqual(s.completion, { kind: 'finished', finishReason: 'tool_calls' });
});
