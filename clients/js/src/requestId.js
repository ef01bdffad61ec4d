// Request ids (`X-Request-Id`, docs/PROTOCOL.md §3): chosen by the client so a retried POST
// and every resume name the same answer.

/** A random request id (`X-Request-Id`): 32 hex digits. @param {() => number} random */
export function randomRequestId(random = Math.random) {
  const c = /** @type {any} */ (globalThis).crypto;
  if (c && typeof c.randomUUID === 'function' && random === Math.random) return c.randomUUID().replace(/-/g, '');
  let s = '';
  for (let i = 0; i < 32; i++) s += Math.floor(random() * 16).toString(16);
  return s;
}
