// The web demo's status lines (demo/answerStatus.js): every relay error code of docs/PROTOCOL.md §8.2
// becomes a sentence, with the action of §8.3.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { completionStatus, failureStatus, connectionText, ERROR_STATUS } from '../demo/answerStatus.js';
import { offersRetry } from '../src/index.js';

/** The codes of the generated table in docs/PROTOCOL.md §8.2. */
function protocolCodes() {
  const doc = readFileSync(new URL('../../../docs/PROTOCOL.md', import.meta.url), 'utf8');
  const table = doc.slice(doc.indexOf('<!-- error-codes:begin -->'), doc.indexOf('<!-- error-codes:end -->'));
  return [...table.matchAll(/^\| (\d{3}) \| `([a-z_]+)` \|/gm)].map((m) => ({ status: Number(m[1]), code: m[2] }));
}

test('every relay error code gets a sentence, never the bare code alone', () => {
  const codes = protocolCodes();
  assert.ok(codes.length >= 20, `read ${codes.length} codes from PROTOCOL.md`);
  for (const { status, code } of codes) {
    const s = failureStatus(code, status);
    assert.match(s.text, /^[A-Z].*[.…]$/, `${code}: ${s.text}`);
    assert.ok(s.text.split(' ').length >= 4, `${code}: a sentence: ${s.text}`);
    assert.equal(s.label === '', s.action === 'none', `${code}: a label exactly when there is an action`);
  }
});

test('the action follows docs/PROTOCOL.md §8.3', () => {
  assert.equal(failureStatus('upstream_lost', 503).action, 'resend');
  assert.equal(failureStatus('stream_lost', 503).action, 'resend');
  assert.equal(failureStatus('upstream_error', 502).action, 'retry');
  assert.equal(failureStatus('upstream_timeout', 504).action, 'retry');
  assert.equal(failureStatus('resume_gap', 409).action, 'retry');
  assert.equal(failureStatus('stream_not_found', 404).action, 'retry');
  assert.equal(failureStatus('session_revoked', 401).action, 'none');
  assert.match(failureStatus('session_revoked', 401).text, /Sign in again/);
  assert.match(failureStatus('token_budget_exhausted', 429).text, /budget is used up/);
  assert.equal(failureStatus('invalid_json', 400).action, 'none');
  assert.equal(failureStatus('http_502', 502).action, 'retry', 'an unknown 5xx can be retried');
  assert.equal(failureStatus('something_new', 418).action, 'none');
  for (const [code, s] of Object.entries(ERROR_STATUS)) {
    if (s.action === 'none') continue;
    const status = protocolCodes().find((c) => c.code === code)?.status ?? 200;
    if (code === 'too_many_streams' || code === 'bad_content_type') continue;   // waits / a network problem: the page offers it anyway
    assert.ok(offersRetry({ kind: 'failed', status, code, message: '' }), `${code}: the kit offers a retry too`);
  }
});

test('completions in words: Resume after a lost connection, Stopped, re-sent once then Try again', () => {
  assert.equal(completionStatus({ kind: 'finished', finishReason: 'stop' }), null);
  assert.equal(completionStatus({ kind: 'finished', finishReason: 'length' }, { budgetLimited: true }), null, 'the budget note says it');
  assert.match(completionStatus({ kind: 'finished', finishReason: 'length' })?.text ?? '', /maximum length/);
  assert.deepEqual(completionStatus({ kind: 'needsResume' }), { text: 'Connection lost.', tone: 'error', action: 'resume', label: 'Resume' });
  assert.equal(completionStatus({ kind: 'stopped' })?.text, 'Stopped.');
  assert.equal(completionStatus({ kind: 'timedOut' })?.label, 'Try again');
  const lost = { kind: 'failed', status: 503, code: 'upstream_lost', message: '' };
  assert.equal(completionStatus(lost)?.text, 'The relay restarted; continuing with a fresh answer…');
  assert.equal(completionStatus(lost, { resent: true })?.action, 'retry');
});

test('reconnection lines', () => {
  assert.equal(connectionText({ status: 'waitingToReconnect', attempt: 2, delayMs: 1180 }, 3), 'Connection dropped — reconnecting in 1.2 s (attempt 2 of 3)…');
  assert.equal(connectionText({ status: 'reconnecting', attempt: 1 }, 3), 'Reconnecting — the answer continues where it stopped…');
  assert.equal(connectionText({ status: 'streaming' }, 3), '');
});
