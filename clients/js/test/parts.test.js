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

test('the first timed flush waits for 30 characters unless a break came first', () => {
  const b = new RenderBuffer(0);
  b.append('Short words here ', 10);
  assert.equal(b.tick(100), null, '17 characters');
  assert.deepEqual(b.append('and more words to pass thirty ', 110), null);
  assert.deepEqual(b.tick(150), { text: 'Short words here and more words to pass thirty', reason: 'interval' });
  const c = new RenderBuffer(0);
  assert.deepEqual(c.append('Hi.\n\n', 10), { text: 'Hi.\n\n', reason: 'paragraphBreak' });
});
