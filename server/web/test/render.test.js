// Unit tests of render.js (answers as DOM nodes) against a small stand-in for the DOM:
// node --test server/web/test/
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';

import { work } from '../widget/markdown.js';
import { adversarialAnswers } from './adversarial.js';

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
      for (const c of n.childNodes) {
        c.parentNode = this;
        this.childNodes.push(c);
      }
      n.childNodes = [];
      return n;
    }
    n.remove();
    n.parentNode = this;
    this.childNodes.push(n);
    return n;
  }
  remove() {
    const p = this.parentNode;
    if (p && p.lastChild === this) p.childNodes.pop();
    else if (p) p.childNodes.splice(p.childNodes.indexOf(this), 1);
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

// tags lists the elements of nodes in document order; text is their textContent.
const tags = (nodes) => [...nodes].flatMap((n) => (n.nodeName === '#text' ? [] : [n.nodeName, ...tags(n.childNodes)]));
const text = (nodes) => [...nodes].map((n) => (n.nodeName === '#text' ? n.data : text(n.childNodes))).join('');

let buildMarkdown;
let renderMarkdown;
let streamMarkdown;
let BUDGET;
const NONE = { elements: Infinity, blocks: Infinity };
before(async () => {
  globalThis.document = document;
  ({ buildMarkdown, renderMarkdown, streamMarkdown, BUDGET } = await import('../widget/render.js'));
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

describe('the element budget', () => {
  // The shapes that are thousands of elements at 20 000 characters.
  const heavy = ['many paragraphs', 'CR runs', 'backtick runs', 'links', 'item continuations', 'many items'];
  const answers = adversarialAnswers(20000);

  it('shows an answer of thousands of elements as its first elements and then its text', () => {
    for (const [name, src] of Object.entries(answers)) {
      const full = buildMarkdown(src, ORIGIN, NONE);
      const shown = renderMarkdown(src, ORIGIN);
      assert.deepEqual(buildMarkdown(src, ORIGIN).map((n) => html([n])), shown.map((n) => html([n])), name);
      const elements = tags(full).length;
      const blocks = full.filter((n) => n.nodeName !== '#text').length;
      if (heavy.includes(name)) assert.ok(elements > BUDGET.elements || blocks > BUDGET.blocks, `${name}: ${elements} elements`);
      if (elements <= BUDGET.elements && blocks <= BUDGET.blocks) {
        assert.equal(html(shown), html(full), name);
        continue;
      }
      // The elements the full render begins with, up to the budget of elements or of
      // blocks, then one with the rest, as text: the same text, with a line break for each
      // <br> or list item and a blank line between blocks.
      const kept = tags(shown).length - 1;
      assert.deepEqual(tags(shown), [...tags(full).slice(0, kept), 'div'], name);
      const keptBlocks = shown.length - 1;
      assert.ok(kept === BUDGET.elements || keptBlocks === BUDGET.blocks, `${name}: ${kept} elements, ${keptBlocks} blocks`);
      assert.ok(kept <= BUDGET.elements && keptBlocks <= BUDGET.blocks, `${name}: ${kept} elements, ${keptBlocks} blocks`);
      const rest = shown[shown.length - 1];
      assert.equal(rest.attributes.get('class'), 'msg-rest', name);
      assert.deepEqual(rest.childNodes.map((n) => n.nodeName), ['#text'], name);
      assert.equal(text(shown).replaceAll('\n', ''), text(full), name);
    }
  });

  it('puts a line break where the answer showed one and a blank line between blocks', () => {
    const md = 'We **do** `x` and [y](/y), [them](https://evil.example/).\nNext\n\n- e\n  f\n- **g**\n\n3. h\n\nEnd';
    assert.equal(
      html(buildMarkdown(md, ORIGIN, { elements: 3, blocks: Infinity })),
      '<p>We <strong>do</strong> <code>x</code> and </p>' +
        '<div class="msg-rest">y, them (https://evil.example/).\nNext\n\ne\nf\ng\n\nh\n\nEnd</div>',
    );
    const elements = tags(buildMarkdown(md, ORIGIN, NONE)).length;
    assert.equal(html(buildMarkdown(md, ORIGIN, { elements, blocks: Infinity })), html(buildMarkdown(md, ORIGIN, NONE)));
    assert.equal(
      html(buildMarkdown(md, ORIGIN, { elements: elements - 1, blocks: Infinity })),
      html(buildMarkdown(md.slice(0, -'\n\nEnd'.length), ORIGIN)) + '<div class="msg-rest">End</div>',
    );
    assert.equal(
      html(buildMarkdown(md, ORIGIN, { elements: Infinity, blocks: 2 })),
      html(buildMarkdown(md.slice(0, md.indexOf('\n\n3.')), ORIGIN)) + '<div class="msg-rest">h\n\nEnd</div>',
    );
    assert.equal(
      html(renderMarkdown('a\n\n'.repeat(BUDGET.blocks + 3), ORIGIN)),
      '<p>a</p>'.repeat(BUDGET.blocks) + '<div class="msg-rest">a\n\na\n\na</div>',
    );
    const n = BUDGET.elements;
    assert.equal(
      html(renderMarkdown('a\r'.repeat(n + 2), ORIGIN)),
      `<p>a${'<br></br>a'.repeat(n - 1)}</p><div class="msg-rest">a\na</div>`,
    );
    assert.equal(
      html(renderMarkdown('- a\n'.repeat(n + 2), ORIGIN)),
      `<ul>${'<li>a</li>'.repeat(n - 1)}</ul><div class="msg-rest">a\na\na</div>`,
    );
  });

  it('leaves a long answer of prose and lists as it was', () => {
    // The render bench's prose: 20 000 characters of bold, code, links and lists.
    const prose =
      'We do **accessibility audits** with `NVDA`; see [the pricing page](/pricing) for what they cost.\n\n- one\n- two, with [a link](https://evil.example/)\n\n'
        .repeat(200)
        .slice(0, 20000);
    const full = buildMarkdown(prose, ORIGIN, NONE);
    assert.ok(tags(full).length > BUDGET.elements / 2, `${tags(full).length} elements`);
    assert.equal(html(renderMarkdown(prose, ORIGIN)), html(full));
  });

  it('bounds a streamed answer as it grows, and ends as a full render', () => {
    for (const [name, src] of Object.entries(answers)) {
      if (!heavy.includes(name)) continue;
      const box = document.createElement('div');
      const shown = streamMarkdown(box, ORIGIN);
      for (let n = 0; n <= src.length; n += 701) {
        shown.show(src.slice(0, n));
        assert.ok(tags(box.childNodes).length <= BUDGET.elements + 1, `${name} at ${n} characters`);
        assert.ok(box.childNodes.length <= BUDGET.blocks + 1, `${name} at ${n} characters`);
      }
      shown.show(src);
      assert.equal(html(box.childNodes), html(buildMarkdown(src, ORIGIN)), name);
    }
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

  it('shows what a full render shows, at every length and for every budget', () => {
    // The budget runs out at each element of the answer in turn, in the blocks kept as
    // built or in the rest built again.
    const full = buildMarkdown(answer, ORIGIN, NONE);
    const budgets = [];
    for (let elements = 0; elements <= tags(full).length; elements++) budgets.push({ elements, blocks: Infinity });
    for (let blocks = 0; blocks <= full.length; blocks++) budgets.push({ elements: Infinity, blocks });
    for (const budget of budgets) {
      const box = document.createElement('div');
      const shown = streamMarkdown(box, ORIGIN, budget);
      for (let n = 0; n <= answer.length; n++) {
        shown.show(answer.slice(0, n));
        assert.equal(html(box.childNodes), html(buildMarkdown(answer.slice(0, n), ORIGIN, budget)), `${JSON.stringify(budget)}, at ${n} characters`);
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
