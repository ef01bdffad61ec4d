import { test } from 'node:test';
import assert from 'node:assert/strict';
import { graphemes, graphemesFallback, SSEParser, SSELineTooLongError, RenderBuffer } from '../src/index.js';

test('the grapheme fallback agrees with Intl.Segmenter on the clusters the render buffer must keep whole', () => {
  for (const s of ['🇸🇦🇦🇪 x', '👨‍👩‍👧 family', 'e\u0301 café', 'بِسْمِ اللَّهِ', '👋🏽 hi', 'a\r\nb', '❤️ ok', '🏴󠁧󠁢󠁳󠁣󠁴󠁿 flag']) {
    assert.deepEqual(graphemesFallback(s), graphemes(s), JSON.stringify(s));
  }
});

test('an endless SSE line is refused with SSELineTooLongError', () => {
  const p = new SSEParser({ maxLineChars: 16 });
  assert.deepEqual(p.feed(new TextEncoder().encode('data: 0123456789\n\n')), [{ kind: 'event', type: 'message', data: '0123456789', lastEventId: '' }]);
  assert.throws(() => p.feed(new TextEncoder().encode('data: 0123456789abcdef')), SSELineTooLongError);
});

test('the render buffer never releases text while held, and releases on finish', () => {
  const b = new RenderBuffer(0, { held: true });
  assert.equal(b.append('Paragraph one.\n\n', 10), null);
  assert.equal(b.tick(100), null);
  assert.deepEqual(b.finish(120), { text: 'Paragraph one.\n\n', reason: 'done' });
});
