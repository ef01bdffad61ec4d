// The clock the kit waits and measures with (an injected one in tests).

/**
 * @typedef {object} Clock
 * @property {() => number} now ms on a clock that keeps advancing while the device sleeps (`Date.now()`)
 * @property {(fn: () => void, ms: number) => any} setTimeout
 * @property {(handle: any) => void} clearTimeout
 */

/** The real clock: `Date.now()` and the global timers. @type {Clock} */
export const systemClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
  clearTimeout: (h) => globalThis.clearTimeout(h),
};
