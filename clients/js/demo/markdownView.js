// One answer's rendered Markdown in the page: re-renders the streaming-safe prefix of the text
// received so far and replaces only the top-level blocks that changed, so finished paragraphs
// keep their DOM nodes (a selection or a screen reader's position survives the stream).
import { renderablePrefix } from './streamingMarkdown.js';

export class MarkdownView {
  /**
   * @param {HTMLElement} container the answer's text element (its `dir` is the kit's decision)
   * @param {(markdown: string) => string} render markdown → sanitised HTML (markdownRenderer.js)
   */
  constructor(container, render) {
    this.container = container;
    this.render = render;
    /** The Markdown source shown now (a prefix of the text received). */
    this.shown = '';
  }

  /**
   * Shows `text` (all the answer's text released by the kit so far) up to its streaming-safe
   * prefix, or all of it when `finished`. @param {string} text @param {boolean} finished
   * @returns {boolean} `true` when the page changed
   */
  update(text, finished) {
    const source = renderablePrefix(text, finished);
    if (source === this.shown) return false;
    this.shown = source;
    const template = document.createElement('template');
    template.innerHTML = this.render(source);
    const fresh = Array.from(template.content.childNodes).filter((n) => n.nodeType === 1);
    const old = Array.from(this.container.children);
    let same = 0;
    while (same < old.length && same < fresh.length && old[same].isEqualNode(fresh[same])) same++;
    for (const n of old.slice(same)) n.remove();
    this.container.append(...fresh.slice(same));
    return true;
  }
}
