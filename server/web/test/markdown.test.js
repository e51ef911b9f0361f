// Unit tests of the chat's Markdown subset: node --test server/web/test/
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { isSpace, parseInline, parseMarkdown, work } from '../widget/markdown.js';
import { adversarialAnswers } from './adversarial.js';

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

// The definition the parser keeps to, as plainly as it can be written (in time quadratic
// in the input): at each "**", "`" or "[", the first closer after it.
function definedInline(s) {
  const out = [];
  let text = '';
  const flush = () => {
    if (text) out.push({ type: 'text', text });
    text = '';
  };
  for (let i = 0; i < s.length; ) {
    if (s.startsWith('**', i)) {
      const end = s.indexOf('**', i + 2);
      if (end > i + 2) {
        flush();
        out.push({ type: 'strong', children: definedInline(s.slice(i + 2, end)) });
        i = end + 2;
        continue;
      }
    } else if (s[i] === '`') {
      const end = s.indexOf('`', i + 1);
      if (end > i + 1) {
        flush();
        out.push({ type: 'code', text: s.slice(i + 1, end) });
        i = end + 1;
        continue;
      }
    } else if (s[i] === '[') {
      const close = s.indexOf(']', i + 1);
      const url = close > i + 1 && s[close + 1] === '(' ? /^[^()\s]+\)/.exec(s.slice(close + 2)) : null;
      if (url) {
        flush();
        out.push({ type: 'link', href: url[0].slice(0, -1), children: definedInline(s.slice(i + 1, close)) });
        i = close + 2 + url[0].length;
        continue;
      }
    }
    text += s[i++];
  }
  flush();
  return out;
}

function definedMarkdown(src) {
  const blocks = [];
  let cur = null;
  for (const raw of String(src).replace(/\r\n?/g, '\n').split('\n')) {
    const line = raw.trimEnd();
    if (line.trim() === '') {
      cur = null;
      continue;
    }
    const ol = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/.exec(line);
    const ul = ol ? null : /^\s{0,3}[-*+]\s+(.*)$/.exec(line);
    if (ol || ul) {
      const type = ol ? 'ol' : 'ul';
      if (cur?.type !== type) blocks.push((cur = ol ? { type, items: [], start: Number(ol[1]) } : { type, items: [] }));
      cur.items.push(definedInline(ol ? ol[2] : ul[1]));
    } else if ((cur?.type === 'ol' || cur?.type === 'ul') && /^\s/.test(line)) {
      cur.items[cur.items.length - 1].push({ type: 'br' }, ...definedInline(line.trim()));
    } else {
      if (cur?.type !== 'p') blocks.push((cur = { type: 'p', lines: [] }));
      cur.lines.push(definedInline(line.trim()));
    }
  }
  return blocks;
}

describe('linear time', () => {
  const small = adversarialAnswers(2000);
  for (const [name, src] of Object.entries(adversarialAnswers(20000))) {
    it(`parses ${name} as defined, in steps linear in its length`, () => {
      assert.deepEqual(parseMarkdown(small[name]), definedMarkdown(small[name]));
      // Steps per character, the same at 20 000 and 80 000 characters. A parser that
      // searches again from each opener takes thousands per character here.
      for (const s of [src, src.repeat(4)]) {
        const before = work.steps;
        parseMarkdown(s);
        const perChar = (work.steps - before) / s.length;
        assert.ok(perChar <= 12, `${perChar.toFixed(1)} steps per character at ${s.length} characters`);
      }
    });
  }

  it('parses random short answers as defined', () => {
    const parts = ['[', ']', '(', ')', '*', '**', '`', 'a', 'b', ' ', '\t', '\n', '\n\n', '\r', '- ', '+ ', '1. ', '12) ', '1234567890.', '  ', '\u2028', '\u00a0', '/x'];
    let seed = 25;
    const random = (n) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let k = 0; k < 20000; k++) {
      let s = '';
      for (let i = random(24); i > 0; i--) s += parts[random(parts.length)];
      assert.deepEqual(parseMarkdown(s), definedMarkdown(s), JSON.stringify(s));
    }
  });

  it('takes as white space what /\\s/ and trim take', () => {
    for (let c = 0; c <= 0xffff; c++) assert.equal(isSpace(c), /\s/.test(String.fromCharCode(c)), `U+${c.toString(16)}`);
  });
});
