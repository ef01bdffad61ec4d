// The AI SDK's `useChat` against StreamRelay (docs/AGENTS.md, docs/PROTOCOL.md §4.6): the
// options of its `DefaultChatTransport` that send through the relay in the UI Message Stream
// dialect (`format=ai-sdk`) and resume from the last event id the transport saw, so a
// reconnect continues inside the message instead of replaying it.
//
//   import { DefaultChatTransport } from 'ai';
//   const transport = new DefaultChatTransport(relayChatTransportOptions({
//     baseURL: 'https://relay.example.com', token: () => session.accessToken, model: 'simulated-tools' }));
//   const { messages, sendMessage, resumeStream } = useChat({ transport, resume: true });
//
// No dependency on the AI SDK: these are plain objects and functions of the shapes its
// transport takes (`api`, `headers`, `prepareSendMessagesRequest`,
// `prepareReconnectToStreamRequest`, `fetch`).

import { randomRequestId } from './requestId.js';

/** The reconnect URL of a chat with no answer to resume, answered 204 by the transport's fetch. */
const NOTHING_TO_RESUME = 'streamrelay:nothing-to-resume';

/** The last event id after each event dispatched in SSE text, in order (WHATWG HTML §9.2.6: an
 * `id` line sets the id buffer, a value with U+0000 is ignored, and the last event ID takes the
 * buffer's value only when the blank line that ends the block dispatches it). An event cut before
 * its blank line has not arrived, so its id is not counted: a resume from it would skip it.
 * `state.carry` is the unfinished last line of the previous chunk, `state.pending` an id read in
 * a block not yet ended. @param {string} text @param {{ carry: string, pending?: string }} state
 * @returns {string[]} */
export function sseIdsIn(text, state) {
  const lines = (state.carry + text).split(/\r\n|\r|\n/);
  state.carry = lines.pop() ?? '';
  const ids = [];
  for (const line of lines) {
    if (line === '') {
      if (state.pending !== undefined) ids.push(state.pending);
      state.pending = undefined;
      continue;
    }
    if (!line.startsWith('id')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    if (field !== 'id') continue;
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (!value.includes('\u0000')) state.pending = value;
  }
  return ids;
}

/** Notes in `state.seen` whether SSE text has shown the UI Message Stream's last line,
 * `data: [DONE]` (`state.carry`: the unfinished line of the previous chunk).
 * @param {string} text @param {{ carry: string, seen: boolean }} state */
function sawDone(text, state) {
  const lines = (state.carry + text).split(/\r\n|\r|\n/);
  state.carry = lines.pop() ?? '';
  if (lines.some((l) => l === 'data: [DONE]' || l === 'data:[DONE]')) state.seen = true;
}

/** The AI SDK's message parts as the relay's message content: the text parts joined.
 * @param {{ role: string, parts?: Array<{ type: string, text?: string }>, content?: string }} m */
export function relayMessageOf(m) {
  const text = typeof m.content === 'string' ? m.content
    : (m.parts ?? []).filter((p) => p.type === 'text').map((p) => p.text ?? '').join('');
  return { role: m.role, content: text };
}

/** The tool name of an AI SDK tool part (`tool-<name>`, or a `dynamic-tool`'s `toolName`);
 * `undefined` for another part. @param {any} p */
function toolNameOf(p) {
  if (p.type === 'dynamic-tool') return typeof p.toolName === 'string' ? p.toolName : undefined;
  return typeof p.type === 'string' && p.type.startsWith('tool-') ? p.type.slice(5) : undefined;
}

/** One AI SDK UI message as the relay's messages (docs/PROTOCOL.md §3.1): its text parts
 * joined; for an assistant, each tool call that has its result (`output-available`, or
 * `output-error`) as a `tool_calls` entry (the input as the arguments' JSON text) followed by a
 * `tool` message with the result (a string as is, any other value as JSON, an error as
 * `{"error": …}`), so the model sees the results of the tools the app ran. Text after a call's
 * result starts a new assistant message, keeping the order of the steps. A call still waiting
 * for its result is left out (an upstream refuses a call no tool message answers).
 * @param {{ role: string, parts?: any[], content?: string }} m
 * @returns {Array<Record<string, unknown>>} */
export function relayMessagesOf(m) {
  if (m.role !== 'assistant' || typeof m.content === 'string') return [relayMessageOf(m)];
  const out = [];
  let text = '';
  let calls = [];
  let results = [];
  const flush = () => {
    if (calls.length) out.push({ role: 'assistant', content: text === '' ? null : text, tool_calls: calls }, ...results);
    else if (text !== '') out.push({ role: 'assistant', content: text });
    text = '';
    calls = [];
    results = [];
  };
  for (const p of m.parts ?? []) {
    if (p.type === 'text') {
      if (calls.length) flush();
      text += p.text ?? '';
      continue;
    }
    const name = toolNameOf(p);
    if (name === undefined || typeof p.toolCallId !== 'string') continue;
    if (p.state !== 'output-available' && p.state !== 'output-error') continue;
    calls.push({ id: p.toolCallId, type: 'function', function: { name, arguments: JSON.stringify(p.input ?? {}) } });
    const content = p.state === 'output-error' ? JSON.stringify({ error: p.errorText ?? '' })
      : typeof p.output === 'string' ? p.output : JSON.stringify(p.output ?? null);
    results.push({ role: 'tool', tool_call_id: p.toolCallId, content });
  }
  flush();
  return out.length ? out : [{ role: 'assistant', content: '' }];
}

/**
 * Options for the AI SDK's `DefaultChatTransport` that point `useChat` at the relay.
 * @param {{
 *   baseURL: string,                       // the relay's origin, e.g. https://relay.example.com
 *   token: () => string | Promise<string>, // the bearer token (docs/PROTOCOL.md §2)
 *   model?: string,                        // the request's `model`
 *   body?: Record<string, unknown>,        // more request fields (`max_tokens`, `mode`, …)
 *   fetch?: typeof fetch,                  // the fetch to wrap (default: globalThis.fetch)
 *   newRequestId?: () => string,           // the X-Request-Id of each new answer
 *   reconnects?: number,                   // resumes of one response cut before its end (5)
 *   reconnectDelayMs?: number,             // wait before resume n: n × this (1000 ms)
 * }} options
 */
export function relayChatTransportOptions(options) {
  const base = options.baseURL.replace(/\/+$/, '');
  const innerFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const newRequestId = options.newRequestId ?? (() => randomRequestId());
  /** chat id → { requestId, lastEventId } of its answer in progress */
  const answers = new Map();
  const auth = async () => ({ Authorization: `Bearer ${await options.token()}` });

  const reconnects = options.reconnects ?? 5;
  const reconnectDelayMs = options.reconnectDelayMs ?? 1000;

  /** The body of a response for `answer`, passed through as the AI SDK reads it, noting the last
   * SSE id of each event it takes. A body that ends (or fails) before the stream's `[DONE]` (a
   * relay draining for a deploy, a slow link cut, a network drop) is resumed from that id on a
   * new connection, up to `reconnects` times, and goes on as the same body: `useChat` reconnects
   * only when a page loads, and takes a body that merely ends as a whole answer. */
  function tracked(answer, response, signal) {
    if (!response.body || !response.ok) return response;
    let reader = response.body.getReader();
    let decoder = new TextDecoder();
    let state = { carry: '' };
    const end = { carry: '', seen: false };
    let attempts = 0;
    const body = new ReadableStream({
      async pull(controller) {
        for (;;) {
          let read;
          try {
            read = await reader.read();
          } catch (error) {
            read = { done: true, error };
          }
          if (!read.done) {
            const text = decoder.decode(read.value, { stream: true });
            const ids = sseIdsIn(text, state);
            if (ids.length) answer.lastEventId = ids[ids.length - 1];
            sawDone(text, end);
            controller.enqueue(read.value);
            return;
          }
          if (end.seen) return controller.close();
          if (signal?.aborted || attempts >= reconnects) {
            return controller.error(read.error ?? new Error('the answer\'s stream ended before its end'));
          }
          attempts += 1;
          await new Promise((r) => setTimeout(r, reconnectDelayMs * attempts));
          let next;
          try {
            next = await innerFetch(`${base}/api/chat/stream/${encodeURIComponent(answer.requestId)}?format=ai-sdk`,
              { method: 'GET', headers: { ...(await auth()), 'Last-Event-ID': answer.lastEventId }, signal });
          } catch (error) {
            if (signal?.aborted) return controller.error(error);
            continue;   // the next attempt
          }
          if (next.status === 204) return controller.close();   // it had ended: nothing after the last id
          if (next.status === 503) continue;
          if (!next.ok || !next.body) return controller.error(new Error(`resuming the answer: ${next.status} ${await next.text()}`));
          reader = next.body.getReader();
          decoder = new TextDecoder();
          state = { carry: '' };
          end.carry = '';
        }
      },
      cancel(reason) { return reader.cancel(reason); },
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  }

  return {
    api: `${base}/api/chat/stream?format=ai-sdk`,
    /** @param {{ id: string, messages: any[], body?: Record<string, unknown> }} r */
    async prepareSendMessagesRequest(r) {
      const requestId = newRequestId();
      answers.set(r.id, { requestId, lastEventId: '0' });
      return {
        api: `${base}/api/chat/stream?format=ai-sdk`,
        headers: { ...(await auth()), 'X-Request-Id': requestId, 'X-Chat-Id': r.id },
        body: { ...(options.body ?? {}), ...(options.model ? { model: options.model } : {}), messages: r.messages.flatMap(relayMessagesOf) },
      };
    },
    /** @param {{ id: string }} r */
    async prepareReconnectToStreamRequest(r) {
      const a = answers.get(r.id);
      // No answer of this chat was sent through this transport (a page loaded anew): nothing to
      // resume. The AI SDK takes a 204 for that, and any other status as an error; `fetch`
      // answers it without asking the relay.
      if (!a) return { api: NOTHING_TO_RESUME, headers: {} };
      return {
        api: `${base}/api/chat/stream/${encodeURIComponent(a.requestId)}?format=ai-sdk`,
        headers: { ...(await auth()), 'X-Chat-Id': r.id, 'Last-Event-ID': a.lastEventId },
      };
    },
    /** @param {RequestInfo | URL} input @param {RequestInit} [init] */
    async fetch(input, init) {
      if (String(input) === NOTHING_TO_RESUME) return new Response(null, { status: 204 });
      const headers = new Headers(init?.headers);
      const chatId = headers.get('X-Chat-Id');
      headers.delete('X-Chat-Id');
      const answer = chatId ? answers.get(chatId) : undefined;
      const response = await innerFetch(input, { ...init, headers });
      return answer ? tracked(answer, response, init?.signal) : response;
    },
    /** The answer in progress of `chatId`: its X-Request-Id and the last event id seen. */
    answerOf(chatId) { return answers.get(chatId); },
  };
}
