// index.d.ts declares exactly the values src/index.js exports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as kit from '../src/index.js';

test('index.d.ts declares every exported value and nothing else', () => {
  const dts = readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8');
  const declared = [...dts.matchAll(/^export (?:declare )?(?:class|function|const) (\w+)/gm)].map((m) => m[1]).sort();
  assert.deepEqual(declared, Object.keys(kit).sort());
});
