// The web demo's streaming Markdown (demo/streamingMarkdown.js, demo/markdownRenderer.js):
// every prefix the kit can release renders without a Markdown marker showing as text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { renderableLength, renderablePrefix, firstUnclosedOpener, isMarkerOnly } from '../demo/streamingMarkdown.js';
import { createMarkdownRenderer, plainTextHTML } from '../demo/markdownRenderer.js';
import { safeCut } from '../src/index.js';

/** Debian's libjs-markdown-it (scripts/install-deps.sh installs it). */
const MARKDOWN_IT = process.env.MARKDOWN_IT_JS ?? '/usr/share/javascript/markdown-it/markdown-it.js';
const render = createMarkdownRenderer(createRequire(import.meta.url)(MARKDOWN_IT));

/** The text a reader sees in `html` (tags dropped, entities decoded). @param {string} html */
function visible(html) {
  return html.replace(/<pre[^>]*>[\s\S]*?<\/pre>/g, '').replace(/<[^>]*>/g, '').replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
}

const ENGLISH = `# Mutual Non-Disclosure Agreement (Draft)

This Agreement is between **Larkspur Harbor Analytics, Inc.** ("Larkspur") and **Quillmoor Systems Ltd.**, a company with *limited* liability.
It continues on a second line with \`inline code\` and a [link](https://example.com/terms).

This draft has 3 clauses:

1. Definitions
2. Purpose
3. Term

---

## Clause 1 — Definitions

- **"Confidential Information"** means all information disclosed.
- **"Affiliate"** means any entity under _common control_.

| Term | Meaning |
| --- | --- |
| **Party** | Larkspur or Quillmoor |
| Effective Date | the date of the last signature |

\`\`\`json
{"term": "**not bold**", "years": 2}
\`\`\`

> **Note:** headings are for convenience only.

## Clause 2 — Purpose
Setext heading
--------------

~~Struck~~ text ends here.
`;

const ARABIC = `اتفاقية عدم إفصاح متبادلة (مسودة للمراجعة)

- **شركة الواحة للحلول الرقمية**، ويُشار إليها فيما يلي بـ«الطرف الأول»؛
- **مؤسسة النخيل لتقنيات البيانات**، ويُشار إليها فيما يلي بـ«الطرف الثاني».

---

## البند ١ — التعريفات

يُقصَد بالعبارات الآتية المعاني المبيّنة قرين كلٍّ منها، و*ما لم* يقتضِ السياق خلاف ذلك.

**التوقيعات**
`;

/**
 * Every text the kit can release for `doc` streamed in `chunk`-character deltas: safe cuts
 * (conformance/CLIENT_RULES.md render buffer) of each growing prefix.
 * @param {string} doc @param {number} chunk
 */
function released(doc, chunk) {
  const out = new Set();
  for (let k = chunk; k < doc.length + chunk; k += chunk) {
    const received = doc.slice(0, Math.min(k, doc.length));
    out.add(received.slice(0, safeCut(received).cut));
    out.add(received);   // a long run or `done` can release everything
  }
  return [...out];
}

for (const [name, doc] of [['English', ENGLISH], ['Arabic', ARABIC]]) {
  test(`${name}: no prefix the kit can release renders a Markdown marker as text`, () => {
    const finalText = visible(render(doc));
    for (const marker of ['**', '##', '---', '`', '~~', '](']) assert.ok(!finalText.includes(marker), `the whole document shows ${marker}`);
    const finalHeadings = [...render(doc).matchAll(/<h(\d)[^>]*>(.*?)<\/h\1>/g)].map((m) => visible(m[2]));
    for (const chunk of [1, 2, 3, 7]) {
      for (const text of released(doc, chunk)) {
        const html = render(renderablePrefix(text, false));
        const shown = visible(html);
        for (const marker of ['**', '##', '---', '`', '~~', '](', '\n- ', '\n-\n', '|']) {
          assert.ok(!shown.includes(marker), `${JSON.stringify(marker)} shown for ${JSON.stringify(text.slice(-60))}: ${JSON.stringify(shown.slice(-80))}`);
        }
        assert.ok(!/(^|\n)[*_#>=-]+\s*$/.test(shown), `a marker line shown for ${JSON.stringify(text.slice(-40))}`);
        // A paragraph never flashes as a heading: every heading shown is (a prefix of) a heading of the document.
        for (const m of html.matchAll(/<h(\d)[^>]*>(.*?)<\/h\1>/g)) {
          const h = visible(m[2]);
          assert.ok(finalHeadings.some((f) => f.startsWith(h)), `heading ${JSON.stringify(h)} is not in the document`);
        }
      }
    }
  });
}

test('finished text renders whole, unclosed markers included', () => {
  assert.equal(renderablePrefix('a **b', true), 'a **b');
  assert.equal(renderablePrefix('a **b ', false), 'a ');
  assert.equal(visible(render('5 * 3 = 15 and a lone ** stays.\n')).trim(), '5 * 3 = 15 and a lone ** stays.');
});

test('held back: unfinished emphasis, code span, link, marker lines, fence openers and tables', () => {
  assert.equal(renderablePrefix('Intro **Larkspur Harbor ', false), 'Intro ');
  assert.equal(renderablePrefix('Intro **Larkspur** and ', false), 'Intro **Larkspur** and ');
  assert.equal(renderablePrefix('Run `npm ', false), 'Run ');
  assert.equal(renderablePrefix('See [the terms](https://exa', false), 'See ');
  assert.equal(renderablePrefix('See [the terms] ', false), 'See [the terms] ');
  assert.equal(renderablePrefix('Para.\n\n## ', false), 'Para.\n\n');
  assert.equal(renderablePrefix('Para.\n\n---', false), 'Para.\n\n');
  assert.equal(renderablePrefix('Para line\n- ', false), 'Para line\n', 'a setext underline or an empty item');
  assert.equal(renderablePrefix('Para line\n- **Affil', false), 'Para line\n');
  assert.equal(renderablePrefix('Text\n\n```js', false), 'Text\n\n');
  assert.equal(renderablePrefix('Text\n\n```js\nlet a = "**";\n``', false), 'Text\n\n```js\nlet a = "**";\n');
  assert.equal(renderablePrefix('Text\n\n| a | b |\n', false), 'Text\n\n');
  assert.equal(renderablePrefix('Text\n\n| a | b |\n| - | - |\n| 1 |', false), 'Text\n\n| a | b |\n| - | - |\n');
  assert.equal(renderablePrefix('Para.\r\n\r\n## ', false), 'Para.\r\n\r\n', 'CRLF line endings');
  assert.equal(renderablePrefix('- a\r\n- **b', false), '- a\r\n');
  assert.equal(renderablePrefix('x\r\n\r\n| a |\r\n|---|\r\n| 1', false), 'x\r\n\r\n| a |\r\n|---|\r\n');
  assert.equal(renderablePrefix('snake_case_name and 2*3 ', false).length, renderableLength('snake_case_name and 2*3 ', false));
});

test('delimiter runs follow the left-/right-flanking rules of CommonMark §6.2', () => {
  assert.equal(firstUnclosedOpener('snake_case_name '), -1, 'intraword _ opens nothing');
  assert.equal(firstUnclosedOpener('price* applies '), -1, 'a right-flanking * only closes');
  assert.equal(firstUnclosedOpener('a ** b '), -1, 'a run between spaces is literal');
  assert.equal(firstUnclosedOpener('x *a **b** c'), 2);
  assert.equal(firstUnclosedOpener('x *a **b** c* '), -1);
  assert.equal(firstUnclosedOpener('«**الطرف**» '), -1);
  assert.equal(firstUnclosedOpener('word **'), 5, 'a run at the very end waits for what follows');
  assert.equal(firstUnclosedOpener('word ** '), -1, 'a run followed by a space opens nothing');
  assert.equal(firstUnclosedOpener('\\*not emphasis '), -1, 'an escaped delimiter');
  assert.equal(firstUnclosedOpener('``a ` b`` c'), -1, 'a code span of two backticks holds one');
});

test('marker-only lines', () => {
  for (const l of ['#', '## ', '- ', '1. ', '10) ', '---', '= =', '> ', '```', '| :-- |']) assert.ok(isMarkerOnly(l), l);
  for (const l of ['## A', '- a', '2024 ', 'x']) assert.ok(!isMarkerOnly(l), l);
});

test('the renderer escapes raw HTML, refuses script URLs and images, and sets directions', () => {
  const html = render('<script>alert(1)</script>\n\n<img src=x onerror=alert(1)> [x](javascript:alert(1)) ![p](https://t.example/p.png) [ok](https://example.com)\n\n```\ncode\n```\n');
  assert.ok(!html.includes('<script') && !html.includes('<img'), html);
  assert.ok(html.includes('&lt;script&gt;'), html);
  assert.ok(!/href="javascript:/i.test(html), html);
  assert.ok(html.includes('href="https://example.com" target="_blank" rel="noopener noreferrer nofollow"'), html);
  assert.ok(html.includes('<p dir="auto">'), html);
  assert.ok(html.includes('<pre dir="ltr">') || html.includes('<pre><code dir="ltr"') || /dir="ltr"/.test(html), html);
  assert.equal(plainTextHTML('a <b>\n\nc'), '<p dir="auto" class="plain">a &lt;b&gt;</p>\n<p dir="auto" class="plain">c</p>');
});

test('the libjs-markdown-it file the page is served exists', () => {
  assert.ok(existsSync(MARKDOWN_IT), `${MARKDOWN_IT} missing: run scripts/install-deps.sh`);
});
