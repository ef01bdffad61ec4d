// The relay's error shape, `{"error":{"code","message"}}` (docs/PROTOCOL.md §8), and the
// `Retry-After` it may come with.

/** Largest error body read from a non-200 response, characters. */
export const MAX_ERROR_BODY = 65536;

/** An HTTP error in the relay's JSON shape `{"error":{"code","message"}}`. */
export class RelayAPIError extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor(status, code, message) {
    super(`${status} ${code}: ${message}`);
    this.name = 'RelayAPIError';
    this.status = status;
    this.code = code;
    /** The relay's message, without the status and code. */
    this.detail = message;
  }
}

/** Decodes an error body, or a generic error. @param {number} status @param {string} body */
export function decodeAPIError(status, body) {
  try {
    const o = JSON.parse(body);
    if (o && o.error && typeof o.error.code === 'string') return new RelayAPIError(status, o.error.code, String(o.error.message ?? ''));
  } catch { /* not JSON */ }
  return new RelayAPIError(status, `http_${status}`, `HTTP ${status}`);
}

/** `Retry-After` in seconds (delay-seconds form, RFC 9110 §10.2.3), or null. @param {string | null} v */
export function parseRetryAfter(v) {
  if (v === null || !/^\s*[0-9]+\s*$/.test(v)) return null;
  return Number(v.trim());
}
