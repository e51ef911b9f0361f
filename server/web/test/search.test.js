// Unit tests of <sitetools-search>'s logic: which request each keystroke, Enter and pause
// make, cancelling and ordering, the cache, the 429 back-off, snippets as text and marks,
// the options and the hand-over row. node --test server/web/test/
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { INSTANT_MS, LIMIT, PAUSE_MS, Typeahead, isShortcut, moveActive, normalize, optionsOf, rowsOf, searchSite, snippetParts } from '../widget/search.js';

const ORIGIN = 'https://shop.example.com';
const flush = () => new Promise((r) => setImmediate(r));

/** clock is a fake setTimeout/clearTimeout/now; tick(ms) runs what falls due, in order. */
function clock() {
  let now = 0;
  let id = 0;
  const due = new Map();
  return {
    now: () => now,
    setTimeout(fn, ms) {
      due.set(++id, { at: now + Math.max(0, ms), fn });
      return id;
    },
    clearTimeout(i) {
      due.delete(i);
    },
    async tick(ms) {
      const end = now + ms;
      for (;;) {
        const next = [...due.entries()].filter(([, d]) => d.at <= end).sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
        if (!next) break;
        due.delete(next[0]);
        now = next[1].at;
        next[1].fn();
        await flush();
      }
      now = end;
      await flush();
    },
  };
}

/**
 * setup is a Typeahead on a fake clock and a fake search_site whose calls (args, and
 * whether they were aborted) are recorded and answered only when the test says so.
 */
function setup() {
  const c = clock();
  const calls = [];
  const shown = [];
  const busy = [];
  const search = (args, signal) =>
    new Promise((resolve, reject) => {
      const call = { args, signal, answer: (r) => resolve(r), results: (results) => resolve({ status: 200, results }) };
      signal.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
      calls.push(call);
    });
  const ta = new Typeahead({
    search,
    show: (text, mode, results, failed) => shown.push({ text, mode, results, failed }),
    busy: (b) => busy.push(b),
    timers: c,
    now: c.now,
  });
  /** type enters text one character at a time, gap ms apart. */
  const type = async (text, gap, from = '') => {
    for (let i = from.length + 1; i <= text.length; i++) {
      ta.input(text.slice(0, i));
      await c.tick(gap);
    }
  };
  return { c, calls, shown, busy, ta, type };
}

const page = (title) => [{ title, url: `/${title.toLowerCase()}`, snippet: `**${title}**`, score: 1, matched: ['fulltext'] }];
const modes = (calls) => calls.map((x) => [x.args.query, x.args.mode ?? 'full']);

describe('Typeahead', () => {
  it('asks nothing for less than two characters, and clears what was shown', async () => {
    const { c, calls, shown, ta } = setup();
    ta.input('p');
    ta.input(' p ');
    await c.tick(PAUSE_MS * 2);
    ta.enter();
    await c.tick(PAUSE_MS * 2);
    assert.deepEqual(calls, []);
    assert.deepEqual(shown.map((s) => [s.text, s.results]), [['p', null], ['p ', null]]);
  });

  it('asks an instant search after each keystroke of normal typing, and the full search once, after the pause', async () => {
    const { c, calls, shown, type } = setup();
    await type('pricing', 150);
    assert.deepEqual(modes(calls), ['pr', 'pri', 'pric', 'prici', 'pricin', 'pricing'].map((q) => [q, 'instant']));
    // Each was cancelled by the next keystroke, unanswered.
    assert.deepEqual(calls.map((x) => x.signal.aborted), [true, true, true, true, true, false]);
    assert.equal(calls[0].args.limit, LIMIT);
    calls[5].results(page('Pricing'));
    await flush();
    assert.deepEqual(shown.at(-1), { text: 'pricing', mode: 'instant', results: page('Pricing'), failed: false });
    await c.tick(PAUSE_MS);
    assert.deepEqual(modes(calls).slice(6), [['pricing', 'full']], 'one full search after the pause');
    await c.tick(PAUSE_MS * 3);
    assert.equal(calls.length, 7, 'nothing more');
  });

  it('shows each keystroke’s answer as it comes', async () => {
    const { c, calls, shown, ta } = setup();
    for (const [i, text] of ['au', 'aud', 'audi', 'audit'].entries()) {
      ta.input(text);
      await c.tick(INSTANT_MS);
      calls[i].results(page(text));
      await flush();
      assert.deepEqual([shown.at(-1).text, shown.at(-1).results], [text, page(text)]);
    }
    assert.ok(calls.every((x) => x.args.mode === 'instant'));
  });

  it('asks at once after a quiet moment, and once per INSTANT_MS for keys faster than that', async () => {
    const { c, calls, ta, type } = setup();
    ta.input('ac');
    assert.deepEqual(modes(calls), [['ac', 'instant']], 'the first key asks at once');
    await type('accessibility', 4, 'ac'); // 11 keys in 44 ms
    await c.tick(INSTANT_MS);
    assert.ok(calls.length <= 1 + Math.ceil(44 / INSTANT_MS) + 1, `${calls.length} requests for 12 keys in 44 ms`);
    assert.deepEqual(modes(calls).at(-1), ['accessibility', 'instant'], 'the last asks for the text in the field');
    assert.ok(calls.slice(0, -1).every((x) => x.signal.aborted), 'the older ones are aborted');
  });

  it('asks the full search at once on Enter, once per text', async () => {
    const { c, calls, shown, ta } = setup();
    ta.input('cloud costs');
    ta.enter();
    assert.deepEqual(modes(calls), [['cloud costs', 'instant'], ['cloud costs', 'full']], 'the full search at once');
    ta.enter();
    await c.tick(PAUSE_MS * 2);
    assert.equal(calls.length, 2, 'not again while it is under way, nor after the pause');
    calls[1].results(page('Cloud'));
    await flush();
    ta.enter();
    assert.equal(calls.length, 2, 'nor once it is known');
    assert.deepEqual([shown.at(-1).mode, shown.at(-1).results], ['full', page('Cloud')]);
  });

  it('never shows an older answer over a newer one, nor an answer for text no longer in the field', async () => {
    const { c, calls, shown, ta } = setup();
    ta.input('team');
    await c.tick(INSTANT_MS);
    ta.enter(); // the full search, while the instant one is under way
    calls[1].results(page('Full'));
    await flush();
    calls[0].results(page('Instant')); // came later
    await flush();
    assert.deepEqual(shown.map((s) => [s.mode, s.results[0].title]), [['full', 'Full']]);

    // An answer whose text the visitor has typed past is dropped, even unaborted.
    ta.input('teams');
    await c.tick(INSTANT_MS);
    ta.input('teamsx');
    await c.tick(INSTANT_MS);
    assert.equal(calls[2].signal.aborted, true);
    calls[3].results(page('Teamsx'));
    await flush();
    assert.equal(shown.at(-1).text, 'teamsx');
  });

  it('a changed text cancels the full search under way for the old one', async () => {
    const { c, calls, ta } = setup();
    ta.input('blog');
    ta.enter();
    assert.deepEqual(modes(calls), [['blog', 'instant'], ['blog', 'full']]);
    ta.input('blogs');
    assert.equal(calls[1].signal.aborted, true);
    await c.tick(INSTANT_MS);
    assert.deepEqual(modes(calls).slice(2), [['blogs', 'instant']]);
    // A trailing space does not change the full search's text.
    ta.enter();
    ta.input('blogs ');
    assert.equal(calls[3].signal.aborted, false);
  });

  it('shows a text searched before without asking again', async () => {
    const { c, calls, shown, ta } = setup();
    ta.input('pri');
    await c.tick(INSTANT_MS);
    calls[0].results(page('Pri'));
    await flush();
    ta.input('pric');
    await c.tick(INSTANT_MS);
    calls[1].results(page('Pric'));
    await flush();
    ta.input('pri'); // Backspace
    assert.deepEqual([shown.at(-1).text, shown.at(-1).results], ['pri', page('Pri')]);
    await c.tick(INSTANT_MS);
    assert.equal(calls.length, 2);
  });

  it('backs off quietly on a 429, for its Retry-After, then asks again', async () => {
    const { c, calls, shown, ta } = setup();
    ta.input('slots');
    await c.tick(INSTANT_MS);
    calls[0].answer({ status: 429, results: null, retryMs: 3000 });
    await flush();
    assert.equal(shown.length, 0, 'nothing shown for it');
    ta.input('slots n');
    await c.tick(2000);
    assert.equal(calls.length, 1, 'nothing asked while paused');
    await c.tick(1000);
    assert.deepEqual(modes(calls), [['slots', 'instant'], ['slots n', 'full']], 'then the text typed meanwhile, once');
    await c.tick(PAUSE_MS * 2);
    assert.equal(calls.length, 2);

    // A 429 for the text in the field: asked again once allowed.
    calls[1].answer({ status: 429, results: null, retryMs: 1000 });
    await flush();
    await c.tick(999);
    assert.equal(calls.length, 2);
    await c.tick(1);
    assert.deepEqual(modes(calls).slice(2), [['slots n', 'full']]);
  });

  it('says that search failed', async () => {
    const { c, calls, shown, ta } = setup();
    ta.input('faq');
    await c.tick(INSTANT_MS);
    calls[0].answer({ status: 500, results: null });
    await flush();
    assert.deepEqual(shown.at(-1), { text: 'faq', mode: 'instant', results: [], failed: true });
  });

  it('stop cancels what is due and under way', async () => {
    const { c, calls, busy, ta } = setup();
    ta.input('imprint');
    await c.tick(INSTANT_MS);
    ta.stop();
    await c.tick(PAUSE_MS * 2);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].signal.aborted, true);
    assert.equal(busy.at(-1), false);
  });
});

describe('searchSite', () => {
  const fetchOf = (status, body, headers = {}) => {
    const sent = [];
    const f = async (url, init) => {
      sent.push({ url, init });
      return new Response(JSON.stringify(body), { status, headers });
    };
    return { f, sent };
  };

  it('calls search_site through the tool endpoint', async () => {
    const results = page('Pricing');
    const { f, sent } = fetchOf(200, { content: [{ type: 'text', text: '…' }], structuredContent: { results }, isError: false });
    const r = await searchSite({ query: 'pri', mode: 'instant', limit: 8 }, undefined, f);
    assert.deepEqual(r, { status: 200, results });
    assert.equal(sent[0].url, '/api/chat/tools');
    assert.equal(sent[0].init.method, 'POST');
    assert.deepEqual(JSON.parse(sent[0].init.body), { name: 'search_site', arguments: { query: 'pri', mode: 'instant', limit: 8 } });
  });

  it('reads Retry-After of a 429', async () => {
    const { f } = fetchOf(429, { error: { code: 'rate_limited', message: 'Too many requests.' } }, { 'Retry-After': '7' });
    assert.deepEqual(await searchSite({ query: 'x' }, undefined, f), { status: 429, results: null, retryMs: 7000 });
    const { f: g } = fetchOf(429, {});
    assert.equal((await searchSite({ query: 'x' }, undefined, g)).retryMs, 2000);
  });

  it('has no results for a tool error or a network failure', async () => {
    const { f } = fetchOf(200, { content: [{ type: 'text', text: 'The query is empty' }], isError: true });
    assert.deepEqual(await searchSite({ query: 'x' }, undefined, f), { status: 200, results: null });
    const down = async () => {
      throw new TypeError('Failed to fetch');
    };
    assert.deepEqual(await searchSite({ query: 'x' }, undefined, down), { status: 0, results: null });
  });

  it('rejects when aborted', async () => {
    const ctrl = new AbortController();
    const slow = (url, init) => new Promise((_, reject) => init.signal.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError'))));
    const p = searchSite({ query: 'x' }, ctrl.signal, slow);
    ctrl.abort();
    await assert.rejects(p);
  });
});

describe('snippetParts', () => {
  for (const [name, snippet, want] of [
    ['plain', 'No match here.', [{ text: 'No match here.', mark: false }]],
    [
      'marks',
      'We run **accessibility** audits, **WCAG** 2.2.',
      [
        { text: 'We run ', mark: false },
        { text: 'accessibility', mark: true },
        { text: ' audits, ', mark: false },
        { text: 'WCAG', mark: true },
        { text: ' 2.2.', mark: false },
      ],
    ],
    ['adjacent', '**a****b**', [{ text: 'a', mark: true }, { text: 'b', mark: true }]],
    ['unbalanced', 'a **b c', [{ text: 'a **b c', mark: false }]],
    ['single asterisks', '2 * 3 = **6**', [{ text: '2 * 3 = ', mark: false }, { text: '6', mark: true }]],
    ['markup stays text', '<img src=x onerror=alert(1)> **<b>x</b>**', [{ text: '<img src=x onerror=alert(1)> ', mark: false }, { text: '<b>x</b>', mark: true }]],
    ['empty', '', []],
    ['not a string', undefined, []],
  ]) {
    it(name, () => assert.deepEqual(snippetParts(snippet), want));
  }
});

describe('optionsOf', () => {
  it('links each page’s section, on this site only, once', () => {
    const got = optionsOf(
      [
        { title: 'Pricing', url: `${ORIGIN}/pricing`, anchor: 'day-rates', snippet: '**Day** rates' },
        { title: ' ', url: '/services/', snippet: '' },
        { title: 'Elsewhere', url: 'https://evil.example/pricing', snippet: '' },
        { title: 'Script', url: 'javascript:alert(1)', snippet: '' },
        { title: 'API', url: `${ORIGIN}/api/chat`, snippet: '' },
        { title: 'Pricing again', url: `${ORIGIN}/pricing`, anchor: 'day-rates', snippet: '' },
        { title: 'Odd anchor', url: `${ORIGIN}/faq`, anchor: 'two words', snippet: 'x' },
        { title: 'Team', url: `${ORIGIN}/team/`, anchor: 'über-uns', snippet: 'x' },
        { title: 42, url: `${ORIGIN}/x` },
        null,
      ],
      ORIGIN,
    );
    assert.deepEqual(
      got.map((o) => [o.title, o.url, o.path]),
      [
        ['Pricing', `${ORIGIN}/pricing#day-rates`, '/pricing'],
        ['/services/', `${ORIGIN}/services/`, '/services/'],
        ['Odd anchor', `${ORIGIN}/faq`, '/faq'],
        ['Team', `${ORIGIN}/team/#%C3%BCber-uns`, '/team/'],
      ],
    );
    assert.equal(got[0].snippet, '**Day** rates');
    assert.deepEqual(optionsOf(undefined, ORIGIN), []);
  });
});

describe('rowsOf', () => {
  const options = optionsOf([{ title: 'Pricing', url: '/pricing', snippet: '' }], ORIGIN);
  it('ends with the hand-over to the chat only when the page has a chat', () => {
    assert.deepEqual(rowsOf(options, 'price ', true).map((r) => r.key), [`${ORIGIN}/pricing`, 'ask']);
    assert.equal(rowsOf(options, 'price ', true).at(-1).query, 'price');
    assert.deepEqual(rowsOf(options, 'price', false), options);
    assert.deepEqual(rowsOf([], 'no such thing', true).map((r) => r.key), ['ask'], 'also when nothing was found');
    assert.deepEqual(rowsOf([], 'p', true), []);
  });
});

describe('moveActive', () => {
  for (const [from, count, key, want] of [
    [-1, 3, 'ArrowDown', 0],
    [0, 3, 'ArrowDown', 1],
    [2, 3, 'ArrowDown', 0],
    [-1, 3, 'ArrowUp', 2],
    [0, 3, 'ArrowUp', 2],
    [2, 3, 'ArrowUp', 1],
    [1, 0, 'ArrowDown', -1],
    [1, 3, 'Home', 1],
  ]) {
    it(`${key} from ${from} of ${count} → ${want}`, () => assert.equal(moveActive(from, count, key), want));
  }
});

describe('isShortcut', () => {
  const ev = (key, mods = {}) => ({ key, ctrlKey: false, metaKey: false, shiftKey: false, altKey: false, ...mods });
  for (const [name, e, editing, mac, want] of [
    ['Ctrl-K', ev('k', { ctrlKey: true }), false, false, true],
    ['Ctrl-K in a text field', ev('k', { ctrlKey: true }), true, false, true],
    ['Ctrl-K with Caps Lock', ev('K', { ctrlKey: true }), false, false, true],
    ['⌘-K on a Mac', ev('k', { metaKey: true }), false, true, true],
    ['Ctrl-K on a Mac (a text field’s own)', ev('k', { ctrlKey: true }), true, true, false],
    ['Ctrl-Shift-K', ev('K', { ctrlKey: true, shiftKey: true }), false, false, false],
    ['K', ev('k'), false, false, false],
    ['/', ev('/'), false, false, true],
    ['/ on a German keyboard (Shift-7)', ev('/', { shiftKey: true }), false, false, true],
    ['/ in a text field', ev('/'), true, false, false],
    ['Ctrl-/', ev('/', { ctrlKey: true }), false, false, false],
    ['taken already', { ...ev('k', { ctrlKey: true }), defaultPrevented: true }, false, false, false],
  ]) {
    it(name, () => assert.equal(isShortcut(e, editing, mac), want));
  }
});

describe('normalize', () => {
  it('collapses spaces and drops leading ones, keeping a trailing one (a finished word)', () => {
    assert.equal(normalize('  cloud\t\ncost  '), 'cloud cost ');
    assert.equal(normalize(undefined), '');
  });
});
