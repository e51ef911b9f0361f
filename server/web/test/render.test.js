// Unit tests of render.js (answers as DOM nodes) against a small stand-in for the DOM:
// node --test server/web/test/
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';

import { work } from '../widget/markdown.js';

const ORIGIN = 'https://shop.example.com';

// The part of the DOM that render.js uses.
class Node {
  constructor(name) {
    this.nodeName = name;
    this.parentNode = null;
    this.childNodes = [];
    this.attributes = new Map();
    this.data = '';
  }
  get lastChild() {
    return this.childNodes[this.childNodes.length - 1] ?? null;
  }
  appendChild(n) {
    if (n.nodeName === '#fragment') {
      for (const c of [...n.childNodes]) this.appendChild(c);
      return n;
    }
    n.remove();
    n.parentNode = this;
    this.childNodes.push(n);
    return n;
  }
  remove() {
    const p = this.parentNode;
    if (p) p.childNodes.splice(p.childNodes.indexOf(this), 1);
    this.parentNode = null;
  }
  replaceChildren(...nodes) {
    for (const c of [...this.childNodes]) c.remove();
    for (const n of nodes) this.appendChild(n);
  }
  setAttribute(k, v) {
    this.attributes.set(k, String(v));
  }
  set start(v) {
    this.setAttribute('start', v);
  }
  set textContent(t) {
    this.replaceChildren(document.createTextNode(t));
  }
  cloneNode(deep) {
    const c = new Node(this.nodeName);
    c.data = this.data;
    c.attributes = new Map(this.attributes);
    if (deep) for (const n of this.childNodes) c.appendChild(n.cloneNode(true));
    return c;
  }
}
const document = {
  createElement: (tag) => new Node(tag),
  createTextNode: (t) => Object.assign(new Node('#text'), { data: String(t) }),
  createDocumentFragment: () => new Node('#fragment'),
};

// html writes nodes as markup, for comparing.
const html = (nodes) =>
  [...nodes]
    .map((n) =>
      n.nodeName === '#text' ? n.data : `<${n.nodeName}${[...n.attributes].map(([k, v]) => ` ${k}="${v}"`).join('')}>${html(n.childNodes)}</${n.nodeName}>`,
    )
    .join('');

let buildMarkdown;
let renderMarkdown;
let streamMarkdown;
before(async () => {
  globalThis.document = document;
  ({ buildMarkdown, renderMarkdown, streamMarkdown } = await import('../widget/render.js'));
});

describe('renderMarkdown', () => {
  it('builds paragraphs, lists, bold, code and guarded links', () => {
    const md = 'We **do** `x`, see [pricing](/pricing) or [them](https://evil.example/).\nNext\n\n3. c\n4. d\n\n- e\n  f';
    assert.equal(
      html(renderMarkdown(md, ORIGIN)),
      '<p>We <strong>do</strong> <code>x</code>, see <a href="https://shop.example.com/pricing">pricing</a> or ' +
        '<span>them (https://evil.example/)</span>.<br></br>Next</p><ol start="3"><li>c</li><li>d</li></ol><ul><li>e<br></br>f</li></ul>',
    );
  });

  it('parses a stored answer once however often the transcript is shown', () => {
    // The widget shows the transcript at start-up (mode, then language), on each question
    // and when another tab changes it: each time it renders every stored answer.
    const stored = ['[' + '['.repeat(5000) + 'a](' + 'b'.repeat(5000), 'See [pricing](/pricing).', '**a'.repeat(3000)];
    const first = stored.map((m) => html(renderMarkdown(m, ORIGIN)));
    const steps = work.steps;
    for (let shown = 0; shown < 3; shown++) {
      assert.deepEqual(stored.map((m) => html(renderMarkdown(m, ORIGIN))), first);
    }
    assert.equal(work.steps, steps, 'the stored answers were parsed again');
  });

  it('returns new nodes each time', () => {
    const a = renderMarkdown('one [two](/two)', ORIGIN);
    const b = renderMarkdown('one [two](/two)', ORIGIN);
    assert.equal(html(a), html(b));
    assert.ok(a.every((n, i) => n !== b[i]));
    a[0].childNodes[1].setAttribute('href', '/changed');
    assert.equal(html(renderMarkdown('one [two](/two)', ORIGIN)), html(b));
  });

  it('builds an answer for another origin anew', () => {
    assert.equal(html(renderMarkdown('[p](/p)', ORIGIN)), '<p><a href="https://shop.example.com/p">p</a></p>');
    assert.equal(html(renderMarkdown('[p](/p)', 'https://other.example')), '<p><a href="https://other.example/p">p</a></p>');
  });
});

describe('streamMarkdown', () => {
  const answer =
    'Here is what I found:\r\n\r\n1. [Services](/services/)\n   We offer **five** services.\n2. [FAQ](/faq)\n \u2028\n' +
    '- one\n- two\n\n\n'.repeat(3) +
    'A paragraph with `code` and a [link](/x)\nand a second line.\n\nBye';

  it('shows what a full render shows, at every length', () => {
    for (const step of [1, 7]) {
      const box = document.createElement('div');
      const shown = streamMarkdown(box, ORIGIN);
      for (let n = 0; n <= answer.length; n += step) {
        shown.show(answer.slice(0, n));
        assert.equal(html(box.childNodes), html(buildMarkdown(answer.slice(0, n), ORIGIN)), `at ${n} characters`);
      }
    }
  });

  it('starts again on an answer that does not continue the last', () => {
    const box = document.createElement('div');
    const shown = streamMarkdown(box, ORIGIN);
    shown.show('one\n\ntwo\n\nthree');
    shown.show('four\n\nfive');
    assert.equal(html(box.childNodes), '<p>four</p><p>five</p>');
  });

  it('parses only what follows the last blank line, frame by frame', () => {
    // 400 paragraphs of 50 characters, arriving 10 characters a frame: parsing the whole
    // answer each frame is 2 000 frames of 10 000 characters on average.
    const long = 'A sentence of an answer, with **bold** in it, ok.\n\n'.repeat(400);
    const box = document.createElement('div');
    const shown = streamMarkdown(box, ORIGIN);
    const steps = work.steps;
    for (let n = 10; n <= long.length; n += 10) shown.show(long.slice(0, n));
    const perChar = (work.steps - steps) / long.length;
    assert.ok(perChar < 60, `${perChar.toFixed(0)} steps per character`);
    assert.equal(html(box.childNodes), html(buildMarkdown(long, ORIGIN)));
  });
});
