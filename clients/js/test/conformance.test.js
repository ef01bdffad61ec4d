// Runs the language-neutral vectors in /conformance against the JS kit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SSEParser } from '../src/sseParser.js';
import { DirectionDecider } from '../src/textDirection.js';
import { ResponseRenderer } from '../src/responseRenderer.js';
import { ReconnectPolicy } from '../src/reconnectPolicy.js';
import { networkAdvice, BudgetState } from '../src/uiState.js';
import { ProxyBufferingDetector } from '../src/proxyBuffering.js';
import { RelayChatClient } from '../src/relayClient.js';
import { VirtualClock, Body, scriptedFetch } from './support.js';

const dir = fileURLToPath(new URL('../../../conformance/', import.meta.url));
const load = (name) => JSON.parse(readFileSync(dir + name, 'utf8'));

/** The byte input of an SSE case. */
function bytesOf(c) {
  return c.inputHex !== undefined ? Uint8Array.from(c.inputHex.match(/../g) ?? [], (h) => parseInt(h, 16)) : new TextEncoder().encode(c.input);
}

function runSSE(chunks) {
  const p = new SSEParser();
  const items = [];
  for (const ch of chunks) items.push(...p.feed(ch));
  assert.deepEqual(p.finish(), []);
  return {
    items: items.map((i) => (i.kind === 'event' ? { event: { type: i.type, data: i.data, id: i.lastEventId } } : { comment: i.text })),
    lastEventId: p.lastEventId,
    retry: p.retry,
  };
}

for (const c of load('sse.json').cases) {
  test(`sse: ${c.name}`, () => {
    const b = bytesOf(c);
    const plans = [['whole', [b]], ['byte by byte', Array.from(b, (_, i) => b.subarray(i, i + 1))]];
    for (let k = 0; k <= b.length; k++) plans.push([`split at ${k}`, [b.subarray(0, k), b.subarray(k)]]);
    for (const [name, chunks] of plans) assert.deepEqual(runSSE(chunks), c.expect, name);
  });
}

for (const c of load('budget.json').cases) {
  test(`budget pill: ${c.name}`, () => {
    const b = new BudgetState({ limit: Math.max(c.remaining, 1) * 2, used: Math.max(c.remaining, 1) * 2 - c.remaining, period: c.period });
    assert.equal(b.remaining, c.remaining);
    assert.equal(b.pillText, c.pill);
  });
}

for (const c of load('rtl.json').cases) {
  test(`rtl: ${c.name}`, () => {
    const d = new DirectionDecider();
    let decidedAt = null;
    c.deltas.forEach((x, i) => { if (d.append(x) && decidedAt === null) decidedAt = i; });
    const layout = d.finish();
    assert.equal(decidedAt, c.expect.decidedAfterDelta, 'decidedAfterDelta');
    assert.deepEqual(layout, { direction: c.expect.direction, isArabic: c.expect.isArabic, lineHeight: c.expect.lineHeight });
  });
}

for (const c of load('render.json').cases) {
  test(`render: ${c.name}`, () => {
    const r = new ResponseRenderer(0);
    const flushes = [];
    let direction = null;
    let last = null;
    const record = (at, u) => {
      if (u) last = u;
      if (!u || u.appended === '') return;
      assert.ok(u.layout, 'text released before the direction was decided');
      direction ??= u.layout.direction;
      flushes.push({ at, text: u.appended, reason: u.reason });
    };
    for (const s of c.steps) {
      if ('delta' in s) record(s.at, r.receive({ type: 'delta', content: s.delta }, s.at));
      else if (s.tick) record(s.at, r.tick(s.at));
      else if (s.background) r.enterBackground();
      else if (s.foreground) record(s.at, r.enterForeground(s.at));
      else if ('done' in s) record(s.at, r.receive({ type: 'done', finish_reason: s.done, usage: {} }, s.at));
      else if ('event' in s) record(s.at, r.receive(JSON.parse(s.event), s.at));
    }
    assert.deepEqual(flushes, c.expect.flushes);
    assert.equal(direction, c.expect.direction);
    if ('completion' in c.expect) assert.deepEqual(last && completionShape(last.completion), c.expect.completion, 'completion');
    if ('budgetLimited' in c.expect) assert.equal(last?.budgetLimited, c.expect.budgetLimited, 'budgetLimited');
  });
}

/** A completion in the vectors' shape (the message is not compared). */
function completionShape(c) {
  if (!c) return null;
  return c.kind === 'finished' ? { kind: c.kind, finishReason: c.finishReason }
    : c.kind === 'failed' ? { kind: c.kind, status: c.status, code: c.code } : { kind: c.kind };
}

/** The JS action in the vectors' shape. */
function actionOf(a, expect) {
  switch (a.type) {
    case 'wait': return { action: 'wait', until: a.until };
    case 'reconnect': return 'refreshToken' in expect ? { action: 'reconnect', lastEventId: a.lastEventId, refreshToken: a.refreshToken } : { action: 'reconnect', lastEventId: a.lastEventId };
    case 'finish': return { action: 'finish', completion: completionShape(a.completion) };
    default: return { action: a.type };
  }
}

for (const c of load('reconnect.json').cases) {
  test(`reconnect: ${c.name}`, () => {
    const p = new ReconnectPolicy({ backoffMs: 1000, random: () => c.random ?? 0 });
    c.steps.forEach((s, i) => {
      let a;
      switch (s.input) {
        case 'start': a = p.start(s.at); break;
        case 'rtt': p.backoffMs = networkAdvice({ rtt: s.rttMs }).reconnectBackoffMs; a = { type: 'none' }; break;
        case 'response': a = p.responseOpened(s.status, s.contentType, { code: s.code, message: '', retryAfterSec: s.retryAfter ?? null }, s.at); break;
        case 'event': a = p.eventReceived(s.seq, s.event, s.at); break;
        case 'pollSent': p.pollSent(s.at); a = { type: 'none' }; break;
        case 'pollResponse': a = p.pollOpened(s.status, s.contentType, s.closed ?? false, { code: s.code, message: '', retryAfterSec: s.retryAfter ?? null }, s.at); break;
        case 'drop': a = p.connectionLost(s.at); break;
        case 'tick': a = p.tick(s.at); break;
        case 'background': p.enterBackground(s.at); a = { type: 'none' }; break;
        case 'foreground': a = p.enterForeground(s.at); break;
        case 'stop': a = p.stop(); break;
        case 'resume': a = p.resume(s.at); break;
        default: throw new Error(`unknown input ${s.input}`);
      }
      assert.deepEqual(actionOf(a, s.expect), s.expect, `step ${i} (${s.input} at ${s.at})`);
    });
  });
}

for (const c of load('buffering.json').cases) {
  test(`buffering: ${c.name}`, () => {
    const d = new ProxyBufferingDetector(c.sent);
    /** @type {{decision: string, at: number | null, reason: string | null}} */
    let got = { decision: 'sse', at: null, reason: null };
    const note = (v, at) => { if (got.decision === 'sse' && v.decision === 'longPoll') got = { decision: 'longPoll', at, reason: v.reason }; };
    const due = (t) => { const dl = d.deadline; if (dl !== null && (t === null || dl <= t)) note(d.tick(dl), dl); };
    d.headers(c.headers);
    for (const r of c.reads) { due(r.at); note(d.read(r.at, r.bytes, r.events, r.terminal ?? false), r.at); }
    if (c.end !== null) { due(c.end); note(d.ended(c.end), c.end); }
    due(null);
    assert.deepEqual(got, c.expect);
  });
}

/**
 * One parts.json case through a whole stream: each connection's body is written `whole` or one byte per read,
 * then ended; the virtual clock runs in 50 ms steps until the kit makes the next request.
 */
async function runParts(c, plan) {
  const clock = new VirtualClock();
  const bodies = c.connections.map(() => new Body());
  const { fetch, calls } = scriptedFetch((call, i) => ({ body: bodies[i] ?? new Body() }));
  const client = new RelayChatClient({ baseURLs: ['http://a', 'http://b'], fetch, clock, random: () => 0, token: () => 't' });
  const s = client.startChat({ messages: [{ role: 'user', content: 'Weather in Riyadh?' }] });
  const updates = [];
  s.subscribe((u) => updates.push(u));
  for (const [i, conn] of c.connections.entries()) {
    for (let k = 0; calls.length <= i && k < 200; k++) await clock.advance(50);
    assert.equal(calls.length, i + 1, `connection ${i} was not requested`);
    if (conn.lastEventId === 0) assert.equal(calls[i].method, 'POST', `connection ${i}`);
    else assert.deepEqual([calls[i].method, calls[i].headers['Last-Event-ID']], ['GET', String(conn.lastEventId)], `connection ${i}`);
    const bytes = new TextEncoder().encode(conn.body);
    if (plan === 'whole') bodies[i].write(bytes);
    else for (let k = 0; k < bytes.length; k++) bodies[i].write(bytes.subarray(k, k + 1));
    bodies[i].end();
    await clock.advance(0);
  }
  await clock.advance(100);
  assert.equal(calls.length, c.connections.length, 'no request after the last connection');
  const renders = updates.filter((u) => u.kind === 'render').map((u) => u.update);
  const partUpdates = updates.filter((u) => u.kind === 'parts').map((u) => u.update);
  const last = partUpdates.at(-1);
  const telemetry = updates.at(-1);
  assert.equal(telemetry?.kind, 'telemetry', 'the stream ended');
  for (const [k, u] of partUpdates.entries()) assert.deepEqual(u.parts, partUpdates.slice(0, k + 1).map((x) => x.part), 'each update lists the parts so far');
  return {
    text: renders.at(-1)?.text ?? '',
    parts: partUpdates.map((u) => u.part),
    toolCallUpdates: partUpdates.filter((u) => u.toolCall !== null).map((u) => u.toolCall),
    toolCalls: last?.toolCalls ?? [],
    reasoning: last?.reasoning ?? '',
    tokens: last?.tokens ?? 0,
    tokensReceived: telemetry.record.tokensReceived,
    direction: renders.find((u) => u.layout)?.layout.direction ?? null,
    completion: completionShape(s.completion),
  };
}

for (const c of load('parts.json').cases) {
  for (const plan of ['whole', 'byte by byte']) {
    test(`parts: ${c.name} (${plan})`, async () => {
      assert.deepEqual(await runParts(c, plan), c.expect);
    });
  }
}
