// Unit tests of the chat widget's words: node --test server/web/test/
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { STRINGS, fill, languageOf, stringsFor } from '../widget/strings.js';

describe('STRINGS', () => {
  it('says everything in every language', () => {
    const keys = Object.keys(STRINGS.en).sort();
    for (const [lang, table] of Object.entries(STRINGS)) {
      assert.deepEqual(Object.keys(table).sort(), keys, lang);
      for (const [k, v] of Object.entries(table)) assert.ok(typeof v === 'string' && v.trim() !== '', `${lang}.${k}`);
    }
  });

  it('keeps the placeholders of the English strings', () => {
    for (const [k, v] of Object.entries(STRINGS.en)) {
      const want = (v.match(/\{\w+\}/g) ?? []).sort();
      for (const lang of Object.keys(STRINGS)) assert.deepEqual((STRINGS[lang][k].match(/\{\w+\}/g) ?? []).sort(), want, `${lang}.${k}`);
    }
  });
});

describe('languageOf', () => {
  for (const [tag, want] of [
    ['de', 'de'],
    ['de-AT', 'de'],
    ['DE_ch', 'de'],
    ['en-GB', 'en'],
    ['fr', 'en'],
    ['', 'en'],
    [undefined, 'en'],
    ['constructor', 'en'],
    ['__proto__', 'en'],
  ]) {
    it(`${JSON.stringify(tag)} → ${want}`, () => assert.equal(languageOf(tag), want));
  }
});

describe('stringsFor', () => {
  it('takes overrides for all languages and for one', () => {
    const o = { launcher: 'Chat', send: 42, unknownKey: 'x', de: { launcher: 'Plaudern' } };
    assert.equal(stringsFor('en', o).launcher, 'Chat');
    assert.equal(stringsFor('de', o).launcher, 'Plaudern');
    assert.equal(stringsFor('de', o).send, STRINGS.de.send, 'a non-string is ignored');
    assert.equal(stringsFor('en', o).unknownKey, undefined);
  });

  it('does not change the tables', () => {
    stringsFor('en', { launcher: 'Changed' });
    assert.equal(STRINGS.en.launcher, 'Ask this site');
  });
});

describe('fill', () => {
  it('replaces known placeholders and keeps unknown ones', () => {
    assert.equal(fill('MCP: on · {n} tools', { n: 7 }), 'MCP: on · 7 tools');
    assert.equal(fill('{a} {b}', { a: 1 }), '1 {b}');
  });
});
