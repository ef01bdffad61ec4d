// The reconnection waits of conformance/CLIENT_RULES.md "Reconnect decisions" as pure functions of a
// random draw r in [0, 1): the full jitter of a streak's first reconnection, backoff + jitter after it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jitterMs, dropWaitMs, ReconnectPolicy } from '../src/index.js';

test('the first reconnection of a streak waits floor(r × (backoff + 1)): uniform over 0…backoff', () => {
  assert.equal(dropWaitMs(1000, 0, 0), 0);
  assert.equal(dropWaitMs(1000, 0, 0.5), 500);
  assert.equal(dropWaitMs(1000, 0, 0.999), 999);
  assert.equal(dropWaitMs(1000, 0, 1 - Number.EPSILON / 2), 1000, 'the largest draw below 1 reaches the backoff');
  assert.equal(dropWaitMs(3000, 0, 0.5), 1500);
  assert.equal(dropWaitMs(3000, 0, 0.999), 2997);
});

test('the 2nd and 3rd reconnection in a row wait backoff + floor(r × 251)', () => {
  assert.equal(dropWaitMs(1000, 1, 0), 1000);
  assert.equal(dropWaitMs(1000, 1, 0.5), 1125);
  assert.equal(dropWaitMs(3000, 2, 0.999), 3250);
  assert.equal(jitterMs(0.999), 250);
});

test('a draw outside [0, 1) is clamped into it; a non-finite one counts as 0', () => {
  assert.equal(dropWaitMs(1000, 0, 1), 1000);
  assert.equal(dropWaitMs(1000, 0, 7), 1000);
  assert.equal(dropWaitMs(1000, 0, -0.5), 0);
  assert.equal(dropWaitMs(1000, 0, Number.NaN), 0);
  assert.equal(jitterMs(1), 250);
  assert.equal(jitterMs(Number.POSITIVE_INFINITY), 0);
});

test('a crowd dropped at one instant comes back spread over the whole backoff, not a 250 ms window', () => {
  const waits = [];
  for (let i = 0; i < 1000; i++) {
    const r = (i + 0.5) / 1000;                       // an even spread of draws
    const p = new ReconnectPolicy({ backoffMs: 1000, random: () => r });
    p.start(0);
    p.responseOpened(200, 'text/event-stream', {}, 0);
    p.eventReceived(1, { type: 'delta', content: 'x' }, 0);
    const a = p.connectionLost(0);
    assert.equal(a.type, 'wait');
    waits.push(a.until);
  }
  assert.equal(Math.min(...waits), 0);
  assert.equal(Math.max(...waits), 1000);
  const perSecondTenth = new Array(10).fill(0);
  for (const w of waits) perSecondTenth[Math.min(9, Math.floor(w / 100))] += 1;
  assert.ok(perSecondTenth.every((n) => n >= 99 && n <= 101), `each 100 ms holds a tenth: ${perSecondTenth}`);
});
