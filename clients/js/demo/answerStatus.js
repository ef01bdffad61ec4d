// What the chat page says about an answer's connection and ending, in words, with the action
// the user can take. Error codes and what a client does about each: docs/PROTOCOL.md §8.2–8.3;
// completions: the kit's `stream.completion` (conformance/CLIENT_RULES.md).

/**
 * @typedef {'none' | 'resume' | 'retry' | 'resend'} StatusAction
 * `resume`: a Resume button (the kit re-sends the request after the connection was lost);
 * `retry`: a Try again button (a new request); `resend`: the page re-sends the request by
 * itself once (docs/PROTOCOL.md §8.3: `upstream_lost`, `stream_lost` → re-send), then offers `retry`.
 * @typedef {{text: string, tone: 'muted' | 'info' | 'warning' | 'error', action: StatusAction, label?: string}} AnswerStatus
 */

/** Sentences per relay error code (docs/PROTOCOL.md §8.2), with the action of §8.3. @type {Record<string, AnswerStatus>} */
export const ERROR_STATUS = {
  upstream_lost: { text: 'The relay restarted; continuing with a fresh answer…', tone: 'info', action: 'resend' },
  stream_lost: { text: 'The relay lost this answer; continuing with a fresh answer…', tone: 'info', action: 'resend' },
  stream_not_found: { text: 'The relay no longer has this answer.', tone: 'error', action: 'retry' },
  resume_gap: { text: 'Part of this answer is no longer stored on the relay.', tone: 'error', action: 'retry' },
  redis_unavailable: { text: 'The relay lost its storage for a while.', tone: 'error', action: 'retry' },
  upstream_error: { text: 'The model service failed to answer.', tone: 'error', action: 'retry' },
  upstream_timeout: { text: 'The model service stopped responding.', tone: 'error', action: 'retry' },
  internal_error: { text: 'The relay had an internal problem.', tone: 'error', action: 'retry' },
  not_ready: { text: 'The relay is busy or restarting.', tone: 'error', action: 'retry' },
  too_many_pending_requests: { text: 'The relay is busy.', tone: 'error', action: 'retry' },
  token_budget_exhausted: { text: 'Your token budget is used up. Sending is off until it renews.', tone: 'warning', action: 'none' },
  too_many_streams: { text: 'Another answer of this session is still being written. Wait for it to finish.', tone: 'warning', action: 'retry' },
  unauthorized: { text: 'You are signed out: the relay did not accept your sign-in. Sign in again to continue.', tone: 'error', action: 'none' },
  token_expired: { text: 'Your sign-in expired and could not be renewed. Sign in again to continue.', tone: 'error', action: 'none' },
  session_revoked: { text: 'This session was signed out. Sign in again to continue.', tone: 'error', action: 'none' },
  model_not_allowed: { text: 'Your plan does not include this model. Pick another one.', tone: 'error', action: 'none' },
  body_too_large: { text: 'This conversation is too long to send. Shorten the message or start a new chat.', tone: 'error', action: 'none' },
  bad_content_type: { text: 'Something on the network answered instead of the relay (a captive portal or proxy?). Check the connection.', tone: 'error', action: 'retry' },
};

/** Codes of a request the app built wrongly: nothing the user can do but report it. */
const CLIENT_BUG_CODES = new Set(['invalid_request', 'invalid_json', 'invalid_last_event_id', 'not_found', 'method_not_allowed',
  'request_timeout', 'uri_too_long', 'request_header_fields_too_large', 'not_implemented', 'http_version_not_supported']);

/** The button label of an action. @param {StatusAction} action */
export function actionLabel(action) {
  return action === 'resume' ? 'Resume' : action === 'retry' || action === 'resend' ? 'Try again' : '';
}

/**
 * The status of an answer that failed with relay error `code` (HTTP `status`).
 * @param {string} code @param {number} status @returns {AnswerStatus}
 */
export function failureStatus(code, status) {
  const known = ERROR_STATUS[code];
  if (known) return { ...known, label: actionLabel(known.action) };
  if (CLIENT_BUG_CODES.has(code)) return { text: `The app sent a request the relay could not accept (${code}).`, tone: 'error', action: 'none', label: '' };
  const retry = status === 0 || status >= 500;
  return { text: `The relay answered with an error (${code}, HTTP ${status}).`, tone: 'error', action: retry ? 'retry' : 'none', label: retry ? 'Try again' : '' };
}

/**
 * The status under an ended answer, or null when it finished normally.
 * @param {import('../src/reconnectPolicy.js').Completion} c
 * @param {{budgetLimited?: boolean, resent?: boolean}} [context] `budgetLimited`: the relay cut the
 *   answer at the token budget (the page shows the kit's note instead); `resent`: the page already
 *   re-sent this turn once, so `resend` becomes a Try again button
 * @returns {AnswerStatus | null}
 */
export function completionStatus(c, context = {}) {
  switch (c.kind) {
    case 'finished':
      if (c.finishReason === 'stop' || context.budgetLimited) return null;
      if (c.finishReason === 'length') return { text: 'The answer reached its maximum length.', tone: 'muted', action: 'none', label: '' };
      if (c.finishReason === 'content_filter') return { text: 'The answer was stopped by the content filter.', tone: 'warning', action: 'none', label: '' };
      return null;
    case 'stopped': return { text: 'Stopped.', tone: 'muted', action: 'none', label: '' };
    case 'timedOut': return { text: 'No response for 60 seconds — the answer may be incomplete.', tone: 'error', action: 'retry', label: 'Try again' };
    case 'needsResume': return { text: 'Connection lost.', tone: 'error', action: 'resume', label: 'Resume' };
    case 'failed': {
      const s = failureStatus(c.code, c.status);
      if (s.action === 'resend' && context.resent) {
        return { text: c.code === 'upstream_lost' ? 'The relay writing this answer stopped again.' : 'The relay lost this answer again.', tone: 'error', action: 'retry', label: 'Try again' };
      }
      return s;
    }
    default: return null;
  }
}

/**
 * The line shown while the kit reconnects (its `connection` updates), or '' when there is nothing to say.
 * @param {{status: string, attempt?: number, delayMs?: number}} u @param {number} maxAttempts
 */
export function connectionText(u, maxAttempts) {
  switch (u.status) {
    case 'waitingToReconnect':
      return `Connection dropped — reconnecting in ${Math.max(0, (u.delayMs ?? 0) / 1000).toFixed(1)} s (attempt ${u.attempt ?? 1} of ${maxAttempts})…`;
    case 'reconnecting': return 'Reconnecting — the answer continues where it stopped…';
    default: return '';
  }
}
