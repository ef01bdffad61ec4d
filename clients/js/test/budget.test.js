// The budget pill's read (`RelayChatClient.fetchBudget`, docs/PROTOCOL.md §9): the first
// reachable base URL answers; an error body in the relay's shape is a RelayAPIError; no
// reachable relay is one too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RelayChatClient } from '../src/relayClient.js';
import { RelayAPIError } from '../src/relayAPIError.js';
import { scriptedFetch } from './support.js';

const budgetJSON = JSON.stringify({ tier: 'free', limit: 500, used: 100, reserved: 20, remaining: 380, period_end: '2027-01-01T00:00:00Z' });

test('fetchBudget reads the budget from the first relay that answers', async () => {
  const { fetch, calls } = scriptedFetch((call, i) => {
    if (i === 0) throw new TypeError('fetch failed');   // refused: the next base URL
    return { status: 200, headers: { 'content-type': 'application/json' }, body: budgetJSON };
  });
  const client = new RelayChatClient({ baseURLs: ['http://a', 'http://b'], fetch, token: () => 't' });
  const b = await client.fetchBudget();
  assert.equal(calls.length, 2);
  assert.equal(calls[1].url, 'http://b/api/budget');
  assert.equal(calls[1].headers.Authorization, 'Bearer t');
  assert.equal(client.budget, b);
});

test('fetchBudget turns an error answer into a RelayAPIError and no reachable relay into one too', async () => {
  const refused = new RelayChatClient({ baseURLs: ['http://a'], fetch: scriptedFetch(() => ({
    status: 401, headers: { 'content-type': 'application/json' }, body: '{"error":{"code":"unauthorized","message":"token expired"}}',
  })).fetch, token: () => 't' });
  await assert.rejects(refused.fetchBudget(), (e) => e instanceof RelayAPIError && e.status === 401 && e.code === 'unauthorized');
  const none = new RelayChatClient({ baseURLs: ['http://a'], fetch: async () => { throw new TypeError('fetch failed'); }, token: () => 't' });
  await assert.rejects(none.fetchBudget(), (e) => e instanceof TypeError);
});
