import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BudgetState, budgetLimitedNote, networkAdvice, TypingIndicator, AutoScroll, DraftProgress, SLOW_CONNECTION_WARNING } from '../src/index.js';

test('budget pill: text, 20 % warning, send disabled at 0', () => {
  const b = BudgetState.fromJSON({ tier: 'pro', limit: 20000, used: 17563, remaining: 2437, period: '2026-11' });
  assert.equal(b.pillText, '~2,430 tokens remaining this month');
  assert.equal(b.isWarning, true);
  assert.equal(b.canSend, true);
  b.apply({ total_tokens: 5000 });
  assert.equal(b.remaining, 0);
  assert.equal(b.canSend, false);
  assert.equal(b.pillText, 'No tokens remaining this month');
  assert.equal(new BudgetState({ limit: 1000, used: 800, period: 'day' }).isWarning, false, 'exactly 20 % is not under 20 %');
  assert.equal(new BudgetState({ limit: 1000, used: 801, period: 'day' }).pillText, '~199 tokens remaining today');
  assert.throws(() => BudgetState.fromJSON({ limit: 'x' }), TypeError);
});

test('network advice from the Network Information API shape', () => {
  assert.deepEqual(networkAdvice({ effectiveType: '2g', rtt: 1400, downlink: 0.2 }),
    { warning: SLOW_CONNECTION_WARNING, reconnectBackoffMs: 3000, suggestsSummaryMode: true });
  assert.deepEqual(networkAdvice({ effectiveType: '4g', rtt: 500, downlink: 10 }), { warning: null, reconnectBackoffMs: 1000, suggestsSummaryMode: false });
  assert.deepEqual(networkAdvice(null), { warning: null, reconnectBackoffMs: 1000, suggestsSummaryMode: false });
});

test('typing indicator and auto-scroll', () => {
  const t = new TypingIndicator(100);
  assert.equal(t.isVisible, true);
  assert.equal(t.isOverdue(600), false);
  assert.equal(t.isOverdue(601), true);
  t.textRendered(700);
  assert.equal(t.isVisible, false);
  const a = new AutoScroll();
  a.userScrolled(200);
  assert.equal(a.showsJumpToLatest, true);
  a.userScrolled(10);
  assert.equal(a.shouldScrollOnUpdate, true);
});

test('draft progress: "Drafting clause 3 of 7…" after 1,000 tokens, headings split across deltas', () => {
  const p = new DraftProgress();
  for (const d of ['# Mutual NDA\n\nThis agreement has seven clauses.\n\n## Clause 1 — Parties\n', 'text\n## Clause 2 — Def', 'initions\n', '```\n## not a heading\n```\n', '## 3. Obligations\n']) p.append(d);
  assert.equal(p.snapshot(1000), null);
  assert.deepEqual(p.snapshot(1001), { index: 3, title: '3. Obligations', total: 7, text: 'Drafting clause 3 of 7…' });
  const ar = new DraftProgress();
  ar.append('# اتفاقية\n\n## البند ٤: السرية\n');
  assert.equal(ar.snapshot(2000).text, 'Drafting clause 4…');
});

test('budget with reservations: reserved decoded, remaining kept as reported, 0 after a budget-limited done', () => {
  const b = BudgetState.fromJSON({ tier: 'free', limit: 500, used: 200, reserved: 250, remaining: 50, period: '2026-12' });
  assert.equal(b.reserved, 250);
  assert.equal(b.remaining, 50);
  assert.equal(BudgetState.fromJSON({ limit: 500, used: 200, reserved: 250 }).remaining, 50, 'missing remaining is limit − used − reserved');
  assert.equal(BudgetState.fromJSON({ limit: 500, used: 200, remaining: 300 }).reserved, 0, 'a reply without reserved reads as 0 reserved');
  // Read before the answer: 300 left; usage alone would leave 250 on the pill.
  const plain = new BudgetState({ limit: 500, used: 200, remaining: 300, period: 'month' });
  plain.apply({ total_tokens: 50 });
  assert.equal(plain.remaining, 250);
  const cut = new BudgetState({ limit: 500, used: 200, remaining: 300, period: 'month' });
  cut.apply({ total_tokens: 50 }, true);
  assert.equal(cut.used, 250);
  assert.equal(cut.remaining, 0);
  assert.equal(cut.canSend, false);
  assert.equal(cut.pillText, 'No tokens remaining this month');
  assert.equal(cut.budgetLimitedNote, "Answer shortened: this month's token budget is used up");
  assert.equal(budgetLimitedNote('day'), "Answer shortened: today's token budget is used up");
});
