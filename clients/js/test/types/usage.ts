// Compile-only check of index.d.ts (tsc --noEmit -p test/types): how an app uses the kit.
import { RelayChatClient, ProxyBufferingDetector, xhrFetch, ChatUpdate, ReconnectPolicy, DirectionDecider, BudgetState, networkAdvice, budgetLimitedNote, isBudgetLimited, dropWaitMs, jitterMs,
  AnswerPart, AnswerParts, JSONValue, PartsUpdate, ToolCall, parsePart, countsAsToken, PART_TYPES } from '../../index';

const client = new RelayChatClient({ baseURLs: ['https://relay.example'], token: async ({ refresh }) => (refresh ? 'new' : 'old') });
const stream = client.startChat({ messages: [{ role: 'user', content: 'Draft an NDA' }], model: 'simulated' }, { network: { effectiveType: '4g', rtt: 80, downlink: 10 } });
const off = stream.subscribe((u: ChatUpdate) => {
  if (u.kind === 'layout') { const dir: 'ltr' | 'rtl' = u.layout.direction; void dir; }
  if (u.kind === 'render') { const t: string = u.update.appended; const cut: boolean = u.update.budgetLimited; void t; void cut; }
  if (u.kind === 'budget') { const r: number = u.budget.reserved; const note: string = u.budget.budgetLimitedNote; void r; void note; }
  if (u.kind === 'telemetry') { const n: number = u.record.reconnections; void n; }
});
off();
// Sampling fields (docs/PROTOCOL.md §3.1): `stop` as one string or a list.
client.startChat({ messages: [{ role: 'user', content: 'Hi' }], temperature: 0.2, top_p: 0.9, stop: ['END'], seed: 7 }).subscribe(() => {});
client.startChat({ messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } }] }] }).subscribe(() => {});
client.startChat({
  messages: [
    { role: 'user', content: 'Weather in Riyadh?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Riyadh"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '31 °C' },
  ],
  tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
  tool_choice: 'auto',
}).subscribe(() => {});
const p = new ReconnectPolicy({ backoffMs: 1000, random: () => 0 });
const firstWait: number = dropWaitMs(1000, 0, Math.random()) + jitterMs(0.5);
void firstWait;
const a = p.start(0);
if (a.type === 'reconnect') { const id: number = a.lastEventId; void id; }
const d = new DirectionDecider();
d.append('مرحبا');
const l = d.finish();
const b = new BudgetState({ limit: 100, used: 10, reserved: 30, remaining: 60 });
b.apply({ total_tokens: 5 }, isBudgetLimited({ type: 'done', budget_limited: true }));
const note: string = budgetLimitedNote('day');
void note;
const s: string = b.pillText + networkAdvice(null).reconnectBackoffMs + l.lineHeight;
void s;
async function iterate() { for await (const u of stream) { void u; } }
void iterate;
const rn = new RelayChatClient({ baseURLs: ['https://relay.example'], token: () => 't', transport: 'xhr', readMode: 'auto' });
const via: 'fetch' | 'xhr' = rn.transport;
void via;
rn.startChat({ messages: [] }).subscribe((u) => {
  if (u.kind === 'connection' && u.status === 'longPoll') { const why: string | null = u.reason; const from: number = u.lastEventId; void why; void from; }
});
const det = new ProxyBufferingDetector(0);
det.headers(10);
const v = det.read(20, 13, 0);
if (v.decision === 'longPoll') { const r: 'silentAfterHeaders' | 'wholeBodyAtEnd' = v.reason; void r; }
const xf = xhrFetch();
void xf;

// useChat's transport options (docs/AGENTS.md).
import { relayChatTransportOptions } from '../../index';
const transportOptions = relayChatTransportOptions({ baseURL: 'https://relay.example.com', token: () => 'token', model: 'simulated-tools' });
const reconnect: Promise<{ api: string; headers: Record<string, string> }> = transportOptions.prepareReconnectToStreamRequest({ id: 'chat-1' });
void reconnect;

// Typed answer parts (docs/PROTOCOL.md §5.5): a discriminated union on `type`; a tool call's `input` once it ended.
client.startChat({ messages: [{ role: 'user', content: 'Weather in Riyadh?' }] }).subscribe((u) => {
  if (u.kind !== 'parts') return;
  const part = u.update.part;
  switch (part.type) {
    case 'reasoning': { const c: string = part.content; void c; break; }
    case 'reasoning_redacted': { const d: string = part.data; void d; break; }
    case 'tool_call_start': { const n: string = part.name; void n; break; }
    case 'tool_call_delta': { const a: string = part.arguments; void a; break; }
    case 'tool_call_end': { const i: JSONValue = part.input; void i; break; }
    case 'tool_result': { const o: JSONValue = part.output; void o; break; }
    case 'source': { const t: string | undefined = part.title; const url: string = part.url; void t; void url; break; }
    case 'data': { const id: string | undefined = part.id; const v: JSONValue = part.data; void id; void v; break; }
  }
  const call: ToolCall | null = u.update.toolCall;
  if (call && call.ended) { const input: JSONValue = call.input; const output: JSONValue | undefined = call.output; void input; void output; }
  if (call && !call.ended) { const shown: string = `calling ${call.name}… ${call.arguments}`; void shown; }
  const all: readonly AnswerPart[] = u.update.parts;
  const thinking: string = u.update.reasoning + u.update.tokens;
  void all; void thinking;
});
const parsed: AnswerPart | null = parsePart({ type: 'source', id: 's1', url: 'https://example.com' });
const assembled: PartsUpdate | null = parsed ? new AnswerParts().receive(parsed) : null;
const kinds: readonly string[] = PART_TYPES;
void assembled; void kinds; void countsAsToken;
