// The chat page's Markdown renderer: markdown-it (Debian's libjs-markdown-it, served by nginx
// at /vendor/markdown-it.js) configured for untrusted model output.
//
// * Raw HTML off (`html: false`): a `<script>` or `<img onerror>` in an answer is shown as text,
//   escaped by markdown-it; no HTML from the model reaches the DOM.
// * Links: markdown-it's validateLink refuses `javascript:`, `vbscript:`, `file:` and non-image
//   `data:` URLs; the rest open in a new browsing context without an opener or referrer.
// * Images off: an answer cannot make the page fetch a URL (tracking pixels); `![alt](url)` stays a link.
// * Direction: every paragraph, heading, list item and table cell gets `dir="auto"`, so each
//   block takes the direction of its first strong character (WHATWG HTML "the dir attribute",
//   Unicode UAX #9 rules P2–P3) inside the answer's own `dir` (the kit's right-to-left decision);
//   code blocks are always `dir="ltr"`.

const AUTO_DIR_BLOCKS = new Set(['paragraph_open', 'heading_open', 'list_item_open', 'th_open', 'td_open']);

/**
 * A renderer `(markdown) => html` built on a markdown-it factory (`window.markdownit` in the page,
 * `require('/usr/share/javascript/markdown-it/markdown-it.js')` in Node).
 * @param {(presetName: string, options: object) => any} markdownit
 * @returns {(markdown: string) => string}
 */
export function createMarkdownRenderer(markdownit) {
  const md = markdownit('default', { html: false, linkify: false, typographer: false, breaks: false });
  md.disable('image');
  md.core.ruler.push('block_direction', (/** @type {any} */ state) => {
    for (const t of state.tokens) {
      if (AUTO_DIR_BLOCKS.has(t.type)) t.attrSet('dir', 'auto');
      else if (t.type === 'fence' || t.type === 'code_block') t.attrSet('dir', 'ltr');
    }
  });
  const defaultLinkOpen = md.renderer.rules.link_open
    || ((/** @type {any[]} */ tokens, /** @type {number} */ i, /** @type {any} */ options, /** @type {any} */ _env, /** @type {any} */ self) => self.renderToken(tokens, i, options));
  md.renderer.rules.link_open = (/** @type {any[]} */ tokens, /** @type {number} */ i, /** @type {any} */ options, /** @type {any} */ env, /** @type {any} */ self) => {
    tokens[i].attrSet('target', '_blank');
    tokens[i].attrSet('rel', 'noopener noreferrer nofollow');
    return defaultLinkOpen(tokens, i, options, env, self);
  };
  return (markdown) => md.render(markdown);
}

/**
 * Escaped text in one `<p>` per paragraph: the page's fallback when markdown-it is not installed.
 * @param {string} text @returns {string}
 */
export function plainTextHTML(text) {
  const esc = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  return esc.split(/\n{2,}/).filter((p) => p.trim() !== '').map((p) => `<p dir="auto" class="plain">${p}</p>`).join('\n');
}
