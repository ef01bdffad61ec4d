// Type declarations of @streamrelay/client (hand-written; the implementation is src/*.js).
// Units: times in ms, budgets in tokens, RTT in ms, downlink in Mbit/s.

// ---- SSE (WHATWG HTML §9.2.5–9.2.6) ----
export type SSEItem =
  | { kind: 'event'; type: string; data: string; lastEventId: string }
  | { kind: 'comment'; text: string };
export class SSELineTooLongError extends Error { readonly limit: number; }
/** Incremental SSE parser over bytes split anywhere; `finish()` ends one connection's stream. */
export class SSEParser {
  constructor(options?: { maxLineChars?: number });
  readonly maxLineChars: number;
  /** Committed last event ID string. */
  readonly lastEventId: string;
  /** `retry:` in ms, or null when never set. */
  readonly retry: number | null;
  /** @throws SSELineTooLongError */
  feed(chunk: Uint8Array | string): SSEItem[];
  finish(): SSEItem[];
}

// ---- Render buffer ----
export type FlushReason = 'interval' | 'paragraphBreak' | 'thematicBreak' | 'longRun' | 'done' | 'foreground';
export interface Flush { text: string; reason: FlushReason; }
export const RENDER_INTERVAL_MS: 50;
export const LONG_RUN_CHARACTERS: 64;
export const FIRST_RENDER_CHARACTERS: 30;
export function graphemes(s: string): string[];
/** Grapheme clusters without Intl.Segmenter (a UAX #29 subset). */
export function graphemesFallback(s: string): string[];
export function safeCut(s: string): { cut: number; longRun: boolean };
export class RenderBuffer {
  constructor(now: number);
  readonly pending: string;
  readonly isBackground: boolean;
  readonly isFinished: boolean;
  readonly hasFlushed: boolean;
  append(delta: string, now: number): Flush | null;
  tick(now: number): Flush | null;
  finish(now: number): Flush | null;
  enterBackground(): void;
  enterForeground(now: number): Flush | null;
}

// ---- Direction (CLIENT_RULES.md) ----
export interface TextLayout { direction: 'ltr' | 'rtl'; isArabic: boolean; lineHeight: number; }
export const SAMPLE_SCALARS: 30;
export const MARKDOWN_SYNTAX: ReadonlySet<string>;
export const ARABIC_LINE_HEIGHT: 1.8;
export const DEFAULT_LINE_HEIGHT: 1.4;
export function isArabicScalar(codePoint: number): boolean;
export function layoutForSample(sample: string[]): TextLayout;
export function decideDirection(deltas: string[]): TextLayout;
export class DirectionDecider {
  readonly sample: string[];
  readonly layout: TextLayout | null;
  readonly isDecided: boolean;
  /** Returns the layout when this delta completed the 30-scalar sample, else null. */
  append(delta: string): TextLayout | null;
  finish(): TextLayout;
}

// ---- Draft progress ----
export interface ProgressSnapshot { index: number; title: string; total: number | null; text: string; }
export const LONG_ANSWER_TOKENS: 1000;
export function headingNumber(title: string): number | null;
export function statedCount(line: string): number | null;
export class DraftProgress {
  constructor(options?: { expectedTotal?: number | null; noun?: string });
  readonly headings: { level: number; title: string; number: number | null }[];
  readonly total: number | null;
  append(delta: string): void;
  finish(): void;
  snapshot(tokensReceived: number): ProgressSnapshot | null;
}
export interface MarkdownLine { text: string; insideFence: boolean; isFence: boolean; }
export class MarkdownLineScanner {
  readonly inFence: boolean;
  feed(text: string): MarkdownLine[];
  finish(): MarkdownLine | null;
}

// ---- Reconnect policy (CLIENT_RULES.md) ----
export type Completion =
  | { kind: 'finished'; finishReason: string }
  | { kind: 'stopped' }
  | { kind: 'timedOut' }
  | { kind: 'needsResume' }
  | { kind: 'failed'; status: number; code: string; message: string };
export type Action =
  | { type: 'none' }
  | { type: 'sendRequest' }
  | { type: 'reconnect'; lastEventId: number; refreshToken: boolean }
  | { type: 'wait'; until: number }
  | { type: 'stop' }
  | { type: 'finish'; completion: Completion };
export interface StreamEventJSON { type: 'delta' | 'done' | 'error' | string; [field: string]: unknown; }
export const MAX_ATTEMPTS: 3;
export const IDLE_LIMIT_MS: 300000;
export const HARD_TIMEOUT_MS: 60000;
export const MAX_JITTER_MS: 250;
/** The jitter added to a wait, ms: `floor(r × 251)`, 0–250, for a draw `r` in [0, 1). */
export function jitterMs(r: number): number;
/** The wait before the reconnection after a drop, ms: the first of a streak (`reconnectionsInARow` 0) waits a full
 *  jitter `floor(r × (backoffMs + 1))`, later ones `backoffMs + jitterMs(r)` (conformance/CLIENT_RULES.md). */
export function dropWaitMs(backoffMs: number, reconnectionsInARow: number, r: number): number;
export function offersRetry(c: Completion): boolean;
export function isEventStream(contentType: string | null | undefined): boolean;
/** `application/json`, parameters and case ignored. */
export function isJSON(contentType: string | null | undefined): boolean;
/** 502, 503, 504: retryable drops that rotate the base URL (the relay sends 502/504 only as in-stream events: a gateway's). */
export function isGatewayRetryable(status: number): boolean;
/** The late-resume rule (CLIENT_RULES.md "Late resume"): what an unfinished answer does once > 5 min passed since its last event. */
export function lateResumeDecision(s: { idleMs: number; backgroundSinceLastEvent: boolean; lateResumeMade: boolean; foreground: boolean }):
  'proceed' | 'needsResume' | 'waitForForeground' | 'lateResume';
/** 404 and 204 to a late resume: the relay no longer has the answer (→ needsResume). */
export function lateResumeExpired(status: number): boolean;
export class ReconnectPolicy {
  constructor(options?: { backoffMs?: number; random?: () => number });
  backoffMs: number;
  readonly state: 'idle' | 'connecting' | 'streaming' | 'waiting' | 'suspended' | 'ended';
  readonly attempt: number;
  readonly completion: Completion | null;
  readonly lastEventId: number;
  readonly reconnections: number;
  readonly isBackground: boolean;
  /** The late resume was made and no event has come since. */
  readonly lateResumed: boolean;
  readonly isEnded: boolean;
  /** Reads go over long-poll: a 401 to any read is treated as on a resume. */
  readonly polling: boolean;
  readonly nextDeadline: number | null;
  jitterMs(): number;
  start(now: number): Action;
  resume(now: number): Action;
  responseOpened(status: number, contentType: string | null, info: { code?: string; message?: string; retryAfterSec?: number | null }, now: number): Action;
  eventReceived(seq: number | null, event: StreamEventJSON | null, now: number): Action;
  connectionLost(now: number): Action;
  /** The next long-poll read is sent (not a reconnection: no wait, not counted). */
  pollSent(now: number): void;
  /** A long-poll head: 200 application/json or 204 → reading; 204 with `closed` → failed 204 `stream_closed`; others as `responseOpened`. */
  pollOpened(status: number, contentType: string | null, closed: boolean, info: { code?: string; message?: string; retryAfterSec?: number | null }, now: number): Action;
  /** `Stream-Closed: true` without the terminal event → failed 204 `stream_closed`. */
  streamClosed(now: number): Action;
  tick(now: number): Action;
  enterBackground(now: number): void;
  enterForeground(now: number): Action;
  stop(): Action;
}

// ---- Renderer ----
export interface RenderUpdate {
  appended: string;
  text: string;
  layout: TextLayout | null;
  progress: ProgressSnapshot | null;
  showsTypingIndicator: boolean;
  completion: Completion | null;
  reason: FlushReason | null;
  /** `true` only on the last update of an answer the relay cut at the caller's token budget
   *  (`done` with `finish_reason: "length"` and `"budget_limited": true`;
   *  conformance/CLIENT_RULES.md "Budget-limited answers"). */
  budgetLimited: boolean;
}
/** `true` when `event` is a `done` whose `budget_limited` is JSON `true`. */
export function isBudgetLimited(event: StreamEventJSON | null | undefined): boolean;
export class ResponseRenderer {
  constructor(now: number, options?: { expectedSections?: number | null });
  readonly text: string;
  /** Delta events received: text only. */
  readonly tokensReceived: number;
  /** Reasoning and argument pieces received (tokens that are not text; left out of the progress). */
  readonly partTokensReceived: number;
  readonly firstTokenAt: number | null;
  readonly completion: Completion | null;
  /** `true` once a `done` said the answer was cut by the token budget. */
  readonly budgetLimited: boolean;
  readonly layout: TextLayout | null;
  readonly isBackground: boolean;
  readonly typing: TypingIndicator;
  receive(event: StreamEventJSON, now: number): RenderUpdate | null;
  tick(now: number): RenderUpdate | null;
  finish(c: Completion, now: number): RenderUpdate | null;
  enterBackground(): void;
  enterForeground(now: number): RenderUpdate | null;
  progress(): ProgressSnapshot | null;
}

// ---- Answer parts (docs/PROTOCOL.md §5.5) ----
/** Any JSON value. */
export type JSONValue = null | boolean | number | string | JSONValue[] | { [key: string]: JSONValue };
/** A piece of the model's reasoning; the pieces in order are the reasoning. One generated token. */
export interface ReasoningPart { type: 'reasoning'; content: string; }
/** Reasoning the upstream sent only encrypted (Anthropic `redacted_thinking`): opaque, passed through, never shown. */
export interface ReasoningRedactedPart { type: 'reasoning_redacted'; data: string; }
/** A tool call begins; `id` is unique within the answer. */
export interface ToolCallStartPart { type: 'tool_call_start'; id: string; name: string; }
/** A piece of the call's arguments as JSON text (not valid JSON until the call ends). One generated token. */
export interface ToolCallDeltaPart { type: 'tool_call_delta'; id: string; arguments: string; }
/** The arguments are complete: `input` is their parsed JSON value (`{}` when the upstream sent none). */
export interface ToolCallEndPart { type: 'tool_call_end'; id: string; name: string; input: JSONValue; }
/** The output of a call the upstream ran itself (an agent backend's tool), after its `tool_call_end`. */
export interface ToolResultPart { type: 'tool_result'; id: string; output: JSONValue; }
/** A source the answer cites; `title` is absent when unknown. */
export interface SourcePart { type: 'source'; id: string; url: string; title?: string; }
/** An app-defined part: `name` is 1–64 of `A–Z a–z 0–9 _ -`; `id` is absent when none. */
export interface DataPart { type: 'data'; name: string; id?: string; data: JSONValue; }
/** A typed part of an answer other than its text: one numbered event, with exactly these fields. */
export type AnswerPart = ReasoningPart | ReasoningRedactedPart | ToolCallStartPart | ToolCallDeltaPart | ToolCallEndPart | ToolResultPart | SourcePart | DataPart;
/** One tool call assembled from its parts: `arguments` is the pieces so far (JSON text, for display); `input`, once
 *  `ended`, is the whole arguments to run the tool with; `output` is present once an agent backend that ran the tool
 *  itself sent its `tool_result` (`'output' in call`; it may be JSON null). */
export type ToolCall =
  | { id: string; name: string; arguments: string; ended: false }
  | { id: string; name: string; arguments: string; ended: true; input: JSONValue; output?: JSONValue };
/** What one part event changed (`{kind: 'parts', update}`): the part, and the answer's parts as they stand with it. */
export interface PartsUpdate {
  /** The part that arrived. */
  part: AnswerPart;
  /** Every part so far, in the order received (`part` last). */
  parts: readonly AnswerPart[];
  /** The tool calls so far, in the order they started. */
  toolCalls: readonly ToolCall[];
  /** The call `part` changed (started, extended, ended or given its result), or null (another type; a piece or end
   *  of a call never started or already ended; a result of a call not ended or already given one). */
  toolCall: ToolCall | null;
  /** The reasoning so far (the `reasoning` pieces concatenated; redacted reasoning is never part of it). */
  reasoning: string;
  /** Reasoning and argument pieces so far, one token each (docs/PROTOCOL.md §5.5, §9.2). */
  tokens: number;
}
export const PART_TYPES: readonly ['reasoning', 'reasoning_redacted', 'tool_call_start', 'tool_call_delta', 'tool_call_end', 'tool_result', 'source', 'data'];
/** The part with exactly its fields, or null when `event` is not a well-formed part (ignored like any unreadable event). */
export function parsePart(event: unknown): AnswerPart | null;
/** `true` for reasoning and argument pieces: one completion token each when the upstream reports no usage. */
export function countsAsToken(part: { type: string }): boolean;
/** The typed parts of one answer so far, with each tool call assembled (the stream keeps one per answer). */
export class AnswerParts {
  readonly parts: readonly AnswerPart[];
  readonly toolCalls: readonly ToolCall[];
  readonly reasoning: string;
  readonly tokens: number;
  receive(part: AnswerPart): PartsUpdate;
}

// ---- UI state ----
export const EXPECTED_FIRST_TOKEN_MS: 500;
export class TypingIndicator {
  constructor(startedAt: number);
  readonly startedAt: number;
  readonly firstRenderAt: number | null;
  readonly isVisible: boolean;
  textRendered(now: number): void;
  isOverdue(now: number): boolean;
}
export class AutoScroll {
  constructor(bottomTolerance?: number);
  readonly isFollowing: boolean;
  readonly shouldScrollOnUpdate: boolean;
  readonly showsJumpToLatest: boolean;
  userScrolled(distanceFromBottom: number): void;
  jumpToLatest(): void;
}
/** `GET /api/budget`: `remaining = max(0, limit − used − reserved)`; `reserved` is held by running answers. */
export interface BudgetJSON { tier?: string; limit: number; used?: number; reserved?: number; remaining?: number; period?: string; }
export class BudgetState {
  constructor(b: BudgetJSON);
  static fromJSON(obj: unknown): BudgetState;
  tier: string; limit: number; used: number; reserved: number; remaining: number; period: string;
  /** Counts a `done`'s `total_tokens`; `budgetLimited` (the `done`'s flag) sets `remaining` to 0. */
  apply(usage: { total_tokens?: number }, budgetLimited?: boolean): void;
  /** `Answer shortened: this month's token budget is used up`. */
  readonly budgetLimitedNote: string;
  readonly canSend: boolean;
  readonly isWarning: boolean;
  /** `~2,400 tokens remaining this month`. */
  readonly pillText: string;
}
/** The Network Information API shape (`navigator.connection`); map React Native NetInfo to it. */
export interface NetworkConditions { effectiveType?: string | null; type?: string | null; rtt?: number | null; downlink?: number | null; }
export interface NetworkAdvice { warning: string | null; reconnectBackoffMs: number; suggestsSummaryMode: boolean; }
export const SLOW_CONNECTION_WARNING: string;
export const NORMAL_BACKOFF_MS: 1000;
export const SLOW_BACKOFF_MS: 3000;
/** `Answer shortened: this month's token budget is used up` (`today's`, `this week's`). */
export function budgetLimitedNote(period?: string): string;
export function networkAdvice(c: NetworkConditions | null | undefined): NetworkAdvice;
export function browserNetworkConditions(): NetworkConditions | null;
export interface TelemetryRecord { requestId: string; tokensReceived: number; latencyMs: number; reconnections: number; }
export function telemetryRecord(requestId: string, tokensReceived: number, latencyMs: number, reconnections: number): TelemetryRecord;

// ---- Client ----
export interface Clock {
  /** ms on a clock that keeps advancing while the device sleeps (Date.now()). */
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}
export const systemClock: Clock;
export const STOP_ATTEMPTS: 3;
export const STOP_RETRY_MS: 1000;
export const STOP_TIMEOUT_MS: 10000;
/** Shortest time between the sends of two long-poll reads when the first brought no event, ms. */
export const LONG_POLL_MIN_INTERVAL_MS: 1000;

// ---- Buffering proxies (conformance/CLIENT_RULES.md "Buffering proxies") ----
export type BufferingReason = 'silentAfterHeaders' | 'wholeBodyAtEnd';
export type BufferingVerdict = { decision: 'undecided' } | { decision: 'stream' } | { decision: 'longPoll'; reason: BufferingReason };
/** Head → first body byte bound on a streaming path, ms (RELAY_HEARTBEAT 15 s + 1 s check + 4 s margin). */
export const FIRST_BYTE_BOUND_MS: 20000;
export const BURST_MIN_EVENTS: 3;
export const BURST_MIN_WAIT_MS: 5000;
export const BURST_END_WINDOW_MS: 1000;
/** The buffering decision for one text/event-stream response; times in ms on one clock. */
export class ProxyBufferingDetector {
  /** @param sentAt when the request was sent, ms */
  constructor(sentAt: number);
  readonly verdict: BufferingVerdict;
  /** When `tick` must be called, ms, or null. */
  readonly deadline: number | null;
  headers(at: number): void;
  tick(now: number): BufferingVerdict;
  /** A body read of `bytes` that completed `events` events; `terminal` when one is done/error. */
  read(at: number, bytes: number, events: number, terminal?: boolean): BufferingVerdict;
  ended(at: number): BufferingVerdict;
}

// ---- XMLHttpRequest transport ----
/** The part of XMLHttpRequest the kit uses (React Native's XMLHttpRequest has it). */
export interface XHRLike {
  open(method: string, url: string, async?: boolean): void;
  setRequestHeader(name: string, value: string): void;
  send(body?: any): void;
  abort(): void;
  getResponseHeader(name: string): string | null;
  readyState: number; status: number; responseText: string; responseType: any;
  onreadystatechange: any; onprogress: any; onload: any; onerror: any; onabort: any; ontimeout: any;
}
/** A fetch-shaped function over XMLHttpRequest: resolves at the head; `body.getReader()` yields text slices from `progress` events. */
export function xhrFetch(XHR?: new () => XHRLike): (url: string, init?: { method?: string; headers?: Record<string, string>; body?: any; signal?: AbortSignal | null }) => Promise<{
  readonly status: number;
  headers: { get(name: string): string | null };
  body: { getReader(): { read(): Promise<{ value: string | undefined; done: boolean }>; cancel(): Promise<void> } };
  text(): Promise<string>;
}>;
/** `true` when this runtime's fetch streams response bodies (`Response.prototype.body`). */
export function fetchStreamsBodies(): boolean;
export function randomRequestId(random?: () => number): string;
export class RelayAPIError extends Error { readonly status: number; readonly code: string; readonly detail: string; }
export function decodeAPIError(status: number, body: string): RelayAPIError;
export function parseRetryAfter(value: string | null): number | null;
/** One part of a message sent as an array (docs/PROTOCOL.md §3.1): text, or in a user message an image the upstream fetches by `https://` URL. */
export type ContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string; detail?: 'auto' | 'low' | 'high' } };
/** A function the model may call (docs/PROTOCOL.md §3.1): `name` is 1–64 of `A–Z a–z 0–9 _ -`, unique; `parameters` a JSON Schema object. */
export type ChatTool = { type: 'function'; function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean } };
/** A call an assistant message made; `arguments` is the arguments' JSON text. */
export type ChatToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } };
/** One message (`system`, `user`, `assistant`); an assistant message may carry its tool calls, and a `tool` message answers one by its id. */
export type ChatMessage =
  | { role: string; content: string | ContentPart[] }
  | { role: 'assistant'; content?: string | ContentPart[] | null; tool_calls: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };
/** The body of `POST /api/chat/stream` (docs/PROTOCOL.md §3.1); the sampling fields and `tools` are sent only when set, and only those the relay's `RELAY_CLIENT_PARAMETERS` lists are accepted. */
export interface ChatRequest {
  messages: ChatMessage[]; model?: string; max_tokens?: number; mode?: 'full' | 'summary';
  /** 0–2. */ temperature?: number; /** 0–1. */ top_p?: number; /** 1–4 sequences of 1–200 bytes. */ stop?: string | string[];
  /** Integer, magnitude ≤ 2^53. */ seed?: number; /** −2–2. */ presence_penalty?: number; /** −2–2. */ frequency_penalty?: number;
  /** At most 128 tools, 256 KiB of JSON. */ tools?: ChatTool[];
  tool_choice?: 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };
}
export interface ClientOptions {
  /** Relay base URLs; reconnections rotate through them. */
  baseURLs: string[];
  /** Bearer token provider, called on every connection; `refresh: true` after `token_expired`. */
  token: (info: { refresh: boolean }) => string | Promise<string>;
  /** A fetch whose responses have a streaming `body` (React Native: `fetch` from `expo/fetch`); implies `transport: 'fetch'`. */
  fetch?: typeof fetch;
  /** `fetch` (streamed bodies) or `xhr` (XMLHttpRequest progress events: bare React Native, no polyfill).
   *  Default: `fetch` when `fetch` is given or this runtime's fetch streams bodies, else `xhr`. */
  transport?: 'fetch' | 'xhr';
  /** The XMLHttpRequest constructor for `transport: 'xhr'` (default `globalThis.XMLHttpRequest`). */
  XMLHttpRequest?: new () => XHRLike;
  /** `auto` (default): SSE, and long-poll for the rest of this client's life once a response looks buffered by a proxy
   *  (conformance/CLIENT_RULES.md "Buffering proxies"); `sse`: never switch; `longPoll`: from the start. */
  readMode?: 'auto' | 'sse' | 'longPoll';
  clock?: Clock;
  /** [0, 1) source of the reconnection waits (full jitter, then backoff + 0–250 ms) and request ids; `Math.random` by default. */
  random?: () => number;
  telemetry?: (record: TelemetryRecord) => void;
}
export type ChatUpdate =
  | { kind: 'layout'; layout: TextLayout }
  | { kind: 'render'; update: RenderUpdate }
  /** A typed part arrived (reasoning, a tool call's start, piece or end, a source, app data), in seq order, once each. */
  | { kind: 'parts'; update: PartsUpdate }
  | { kind: 'connection'; status: 'connecting'; url: string }
  | { kind: 'connection'; status: 'streaming' }
  | { kind: 'connection'; status: 'waitingToReconnect'; attempt: number; delayMs: number }
  | { kind: 'connection'; status: 'reconnecting'; attempt: number; url: string; lastEventId: number }
  /** This client reads over long-poll from now on (a buffering proxy was detected); this answer goes on from `lastEventId`. */
  | { kind: 'connection'; status: 'longPoll'; reason: BufferingReason | null; lastEventId: number }
  | { kind: 'advice'; advice: NetworkAdvice }
  | { kind: 'budget'; budget: BudgetState }
  | { kind: 'cancelled'; status: number | null }
  | { kind: 'telemetry'; record: TelemetryRecord };
export interface StreamOptions {
  requestId?: string;
  expectedSections?: number | null;
  network?: NetworkConditions | null;
  firstURLIndex?: number;
  onUpdate?: (update: ChatUpdate) => void;
}
export class RelayChatClient {
  constructor(options: ClientOptions);
  readonly baseURLs: string[];
  /** The HTTP stack in use. */
  readonly transport: 'fetch' | 'xhr';
  readonly readMode: 'auto' | 'sse' | 'longPoll';
  /** `true` once answers are read over long-poll (from the start, or since a buffered response). */
  readonly longPoll: boolean;
  /** Why this client switched to long-poll, or null. */
  readonly bufferingDetected: BufferingReason | null;
  budget: BudgetState | null;
  baseURL(index: number): string;
  startChat(request: ChatRequest, options?: StreamOptions): RelayStream;
  fetchBudget(): Promise<BudgetState>;
  cancel(requestId: string, preferredIndex?: number): Promise<number | null>;
}
export class RelayStream implements AsyncIterable<ChatUpdate> {
  readonly requestId: string;
  readonly request: ChatRequest;
  /** The answer's typed parts so far (also carried by every `parts` update). */
  readonly parts: AnswerParts;
  readonly completion: Completion | null;
  readonly finished: Promise<Completion>;
  subscribe(fn: (update: ChatUpdate) => void): () => void;
  [Symbol.asyncIterator](): AsyncIterator<ChatUpdate>;
  stop(): void;
  enterBackground(): void;
  enterForeground(): void;
  resume(): RelayStream;
}

// The AI SDK's useChat against the relay (docs/AGENTS.md, docs/PROTOCOL.md §4.6).
export interface RelayChatTransportOptions {
  /** The relay's origin, e.g. https://relay.example.com */
  baseURL: string;
  /** The bearer token (docs/PROTOCOL.md §2). */
  token: () => string | Promise<string>;
  /** The request's `model`. */
  model?: string;
  /** More request fields (`max_tokens`, `mode`, …). */
  body?: Record<string, unknown>;
  /** The fetch to wrap (default: globalThis.fetch). */
  fetch?: typeof fetch;
  /** The X-Request-Id of each new answer (default: 32 random hex digits). */
  newRequestId?: () => string;
  /** Resumes, from the last event id, of one response cut before its `[DONE]` (default 5). */
  reconnects?: number;
  /** Wait before resume n: n times this, ms (default 1000). */
  reconnectDelayMs?: number;
}
/** Options of the AI SDK's `DefaultChatTransport`: sends in the `format=ai-sdk` dialect and
 *  resumes from the last event id seen. */
export function relayChatTransportOptions(options: RelayChatTransportOptions): {
  api: string;
  prepareSendMessagesRequest(r: { id: string; messages: Array<{ role: string; parts?: Array<{ type: string; text?: string }> }> }):
    Promise<{ api: string; headers: Record<string, string>; body: Record<string, unknown> }>;
  prepareReconnectToStreamRequest(r: { id: string }): Promise<{ api: string; headers: Record<string, string> }>;
  fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
  answerOf(chatId: string): { requestId: string; lastEventId: string } | undefined;
};
/** A UI message's text parts joined, as the relay's `{role, content}`. */
export function relayMessageOf(m: { role: string; parts?: Array<{ type: string; text?: string }>; content?: string }): { role: string; content: string };
/** A UI message as the relay's messages: its text, and for an assistant each tool call that has
 *  its result as `tool_calls` plus a `tool` message with the result, in the order of its steps. */
export function relayMessagesOf(m: { role: string; parts?: Array<{ type: string; [k: string]: unknown }>; content?: string }): Array<Record<string, unknown>>;
/** The last event id after each event dispatched in SSE text (WHATWG HTML §9.2.6: an `id:` counts
 *  once its block's blank line arrived); `state.carry` holds an unfinished line, `state.pending` an
 *  id whose block has not ended. */
export function sseIdsIn(text: string, state: { carry: string; pending?: string }): string[];
