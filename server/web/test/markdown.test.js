// Unit tests of the chat's Markdown subset: node --test server/web/test/
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { parseInline, parseMarkdown } from '../widget/markdown.js';

const t = (text) => ({ type: 'text', text });

describe('parseInline', () => {
  it('finds bold, code and links', () => {
    assert.deepEqual(parseInline('a **b** `c` [d **e**](/x#y) f'), [
      t('a '),
      { type: 'strong', children: [t('b')] },
      t(' '),
      { type: 'code', text: 'c' },
      t(' '),
      { type: 'link', href: '/x#y', children: [t('d '), { type: 'strong', children: [t('e')] }] },
      t(' f'),
    ]);
  });
  it('leaves unclosed markup as text', () => {
    assert.deepEqual(parseInline('**a [b](c d) `e'), [t('**a [b](c d) `e')]);
  });
  it('never makes markup out of HTML', () => {
    assert.deepEqual(parseInline('<img src=x onerror=alert(1)>'), [t('<img src=x onerror=alert(1)>')]);
  });
});

describe('parseMarkdown', () => {
  it('parses the retrieval-only answer shape', () => {
    const md =
      'Here is what I found:\n\n' +
      '1. [Services](http://127.0.0.1:8080/services/)\n' +
      '   We offer **five** services.\n' +
      '2. [FAQ](http://127.0.0.1:8080/faq#internships)\n\n' +
      '- one\n- two\n\nBye\nnow';
    assert.deepEqual(parseMarkdown(md), [
      { type: 'p', lines: [[t('Here is what I found:')]] },
      {
        type: 'ol',
        start: 1,
        items: [
          [
            { type: 'link', href: 'http://127.0.0.1:8080/services/', children: [t('Services')] },
            { type: 'br' },
            t('We offer '),
            { type: 'strong', children: [t('five')] },
            t(' services.'),
          ],
          [{ type: 'link', href: 'http://127.0.0.1:8080/faq#internships', children: [t('FAQ')] }],
        ],
      },
      { type: 'ul', items: [[t('one')], [t('two')]] },
      { type: 'p', lines: [[t('Bye')], [t('now')]] },
    ]);
  });
  it('keeps a numbered list’s start', () => {
    assert.equal(parseMarkdown('3. c\n4. d')[0].start, 3);
  });
});

describe('adversarial input', () => {
  // Each of these took time quadratic in its length before (20 000 "[" about 190 ms,
  // a run of 20 000 spaces about 250 ms); `make bench` times them in Chromium.
  const cases = {
    brackets: '['.repeat(20000),
    'brackets and closers': '[a'.repeat(5000) + ']'.repeat(5000),
    'unclosed links': '[a]('.repeat(5000),
    'unclosed bold': '**a '.repeat(5000),
    'unclosed code': 'a `b '.repeat(4000),
    spaces: 'a' + ' '.repeat(19998) + 'b',
  };
  for (const [name, src] of Object.entries(cases)) {
    it(`keeps every character of ${name}`, () => {
      const text = (nodes) => nodes.map((n) => (n.type === 'text' || n.type === 'code' ? n.text : n.children ? text(n.children) : '')).join('');
      const blocks = parseMarkdown(src);
      const got = blocks.flatMap((b) => (b.lines ?? b.items).map(text)).join('');
      // Markup characters of what parsed as bold or code are dropped; nothing else is.
      assert.ok(got.length > 0 && got.length <= src.length);
      assert.equal(got.replace(/[*`]/g, ''), src.trim().replace(/[*`]/g, '').replace(/\s+$/, ''));
    });
  }
  it('parses a link after thousands of unclosed brackets', () => {
    const inl = parseInline('['.repeat(3000) + '[ok](/pricing)');
    // As CommonMark-lite as before: the link's text runs from the first "[" to "]".
    assert.equal(inl.length, 1);
    assert.equal(inl[0].type, 'link');
    assert.equal(inl[0].href, '/pricing');
  });
});
