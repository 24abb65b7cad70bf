import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { flatText } from '../../src/flat-text.ts';

describe('flatText', () => {
  it('gives back every code unit as it was: quotes, escapes, non-ASCII and a lone surrogate', () => {
    let built = '';
    for (const piece of ['  server a 10.0.0.1:80 "q" \\ \n', 'é ü 中 ', '\ud800', ' 😀\n']) built += piece;
    assert.equal(flatText(built), built);
    assert.equal(flatText(''), '');
  });
});
