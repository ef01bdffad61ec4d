// Small UI models shared with the Swift kit: typing indicator, auto-scroll, budget pill,
// network advice, telemetry (conformance/CLIENT_RULES.md).

/** The time to first token the typing indicator covers, ms. */
export const EXPECTED_FIRST_TOKEN_MS = 500;

/** The typing indicator: shown from Send until text is rendered; overdue after 500 ms. */
export class TypingIndicator {
  /** @param {number} startedAt ms */
  constructor(startedAt) { this.startedAt = startedAt; /** @type {number | null} */ this.firstRenderAt = null; }
  /** @param {number} now */
  textRendered(now) { if (this.firstRenderAt === null) this.firstRenderAt = now; }
  /** `true` until text is rendered. */
  get isVisible() { return this.firstRenderAt === null; }
  /** `true` while still waiting more than 500 ms after the start. @param {number} now */
  isOverdue(now) { return this.isVisible && now - this.startedAt > EXPECTED_FIRST_TOKEN_MS; }
}

/** Whether the transcript follows new text; pauses when the user scrolls up. Distances in px. */
export class AutoScroll {
  /** @param {number} [bottomTolerance] px still counted as "at the bottom" (24). */
  constructor(bottomTolerance = 24) { this.bottomTolerance = bottomTolerance; this.isFollowing = true; }
  /** @param {number} distanceFromBottom px ≥ 0 */
  userScrolled(distanceFromBottom) { this.isFollowing = distanceFromBottom <= this.bottomTolerance; }
  get shouldScrollOnUpdate() { return this.isFollowing; }
  get showsJumpToLatest() { return !this.isFollowing; }
  jumpToLatest() { this.isFollowing = true; }
}

/** Warning below this fraction of the limit remaining. */
export const BUDGET_WARNING_FRACTION = 0.2;

/**
 * The token budget pill from `GET /api/budget` (`{"tier","limit","used","reserved","remaining","period"}`)
 * and each `done`'s usage. Units: tokens. With reservations (docs/PROTOCOL.md §9) the relay reports
 * `remaining = max(0, limit − used − reserved)`: tokens held by running answers are not available.
 * `remaining` is kept as the relay reports it; a budget-limited `done` sets it to 0 (see `apply`).
 */
export class BudgetState {
  /** @param {{tier?: string, limit: number, used?: number, reserved?: number, remaining?: number, period?: string}} b */
  constructor(b) {
    this.tier = b.tier ?? '';
    this.limit = b.limit;
    /** Tokens used (settled) this period. */
    this.used = b.used ?? 0;
    /** Tokens reserved by answers still running (0 when the relay's reply has no `reserved`). */
    this.reserved = Math.max(0, b.reserved ?? 0);
    /** Tokens a new request may still reserve: `limit − used − reserved` as the relay computed it. */
    this.remaining = Math.max(0, b.remaining ?? this.limit - this.used - this.reserved);
    this.period = b.period ?? 'month';
  }
  /** Decodes a budget body. @param {unknown} obj @throws {TypeError} when `limit` is not a number. */
  static fromJSON(obj) {
    const o = /** @type {any} */ (obj);
    if (!o || typeof o !== 'object' || typeof o.limit !== 'number') throw new TypeError('budget body without numeric limit');
    return new BudgetState(o);
  }
  /**
   * Counts a finished generation's `total_tokens`. After a budget-limited `done` (`budgetLimited`)
   * `remaining` is 0: the relay granted that answer everything not used or reserved and it stopped
   * there, so what is left is at most the prompt estimate's error, below the relay's minimum (429).
   * Subtracting the usage alone would keep counting tokens that concurrent answers reserved meanwhile.
   * Send stays disabled until a fresh `GET /api/budget` reports tokens again.
   * @param {{total_tokens?: number}} usage @param {boolean} [budgetLimited]
   */
  apply(usage, budgetLimited = false) {
    const t = usage.total_tokens ?? 0;
    this.used += t;
    this.remaining = budgetLimited ? 0 : Math.max(0, this.remaining - t);
  }
  /** The note under an answer the budget cut: `Answer shortened: this month's token budget is used up`. */
  get budgetLimitedNote() { return budgetLimitedNote(this.period); }
  /** `false` at 0 remaining: Send is disabled. */
  get canSend() { return this.remaining > 0; }
  /** `true` under 20 % of the limit remaining. */
  get isWarning() { return this.limit > 0 ? this.remaining < this.limit * BUDGET_WARNING_FRACTION : this.remaining <= 0; }
  /** `~2,400 tokens remaining this month` (three significant digits, rounded down: conformance/budget.json). */
  get pillText() {
    const span = periodPhrase(this.period);
    if (this.remaining <= 0) return `No tokens remaining ${span}`;
    const n = approximate(this.remaining);
    return `~${grouped(n)} ${n === 1 ? 'token' : 'tokens'} remaining ${span}`;
  }
}
/** `Answer shortened: this month's token budget is used up` (`today's`, `this week's`). @param {string} [period] */
export function budgetLimitedNote(period = 'month') { return `Answer shortened: ${periodPhrase(period)}'s token budget is used up`; }
/** 19,522 → 19,500 (three significant digits, rounded down: never more than 1 % low); below 1,000 unchanged. @param {number} n */
export function approximate(n) { if (n < 1000) return n; let u = 1; while (Math.floor(n / u) >= 1000) u *= 10; return Math.floor(n / u) * u; }
/** 2400 → "2,400" (en-US grouping, independent of locale). @param {number} n */
export function grouped(n) { return String(Math.abs(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',').replace(/^/, n < 0 ? '-' : ''); }
/** `this month` / `today` / `this week` / `this <period>`. @param {string} p */
export function periodPhrase(p) {
  const l = p.toLowerCase();
  const dd = /^[0-9-]+$/.test(l);
  if (l === 'month' || l === 'monthly' || (dd && l.length === 7)) return 'this month';
  if (l === 'day' || l === 'daily' || (dd && l.length === 10)) return 'today';
  if (l === 'week' || l === 'weekly' || l.includes('-w')) return 'this week';
  return l === '' ? 'this month' : `this ${l}`;
}

export const SLOW_CONNECTION_WARNING = 'Slow connection detected — response may take longer';
export const SLOW_RTT_MS = 500;
export const SUMMARY_DOWNLINK_MBPS = 0.5;
export const NORMAL_BACKOFF_MS = 1000;
export const SLOW_BACKOFF_MS = 3000;

/**
 * @typedef {{effectiveType?: string | null, type?: string | null, rtt?: number | null, downlink?: number | null}} NetworkConditions
 * The Network Information API's `navigator.connection` shape (`effectiveType`, `rtt` ms,
 * `downlink` Mbit/s); React Native apps map NetInfo's `details` to it.
 */

/** Advice from the network: 2g warning, 3 s backoff over 500 ms RTT, summary mode under 0.5 Mbit/s. @param {NetworkConditions | null | undefined} c */
export function networkAdvice(c) {
  const type = (c?.effectiveType ?? c?.type ?? '').toLowerCase();
  return {
    warning: type === '2g' || type === 'slow-2g' ? SLOW_CONNECTION_WARNING : null,
    reconnectBackoffMs: (c?.rtt ?? 0) > SLOW_RTT_MS ? SLOW_BACKOFF_MS : NORMAL_BACKOFF_MS,
    suggestsSummaryMode: c?.downlink != null ? c.downlink < SUMMARY_DOWNLINK_MBPS : false,
  };
}

/** The browser's `navigator.connection`, when there is one. @returns {NetworkConditions | null} */
export function browserNetworkConditions() {
  const n = /** @type {any} */ (globalThis.navigator);
  const c = n && n.connection;
  return c ? { effectiveType: c.effectiveType, rtt: c.rtt, downlink: c.downlink } : null;
}

/**
 * The only record the kit reports: exactly `{requestId, tokensReceived, latencyMs, reconnections}`.
 * @param {string} requestId @param {number} tokensReceived @param {number} latencyMs @param {number} reconnections
 */
export function telemetryRecord(requestId, tokensReceived, latencyMs, reconnections) {
  return { requestId, tokensReceived, latencyMs, reconnections };
}
