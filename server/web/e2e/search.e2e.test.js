// <sitetools-search>, end to end: the demo pages on the real `sitetools serve` on
// PostgreSQL, in real Chromium under the pages' CSP, with a fake embeddings provider that
// speaks the OpenAI wire format and counts its calls. Typing shows results after every
// keystroke from instant searches, which pay for no embedding; Enter asks the full search,
// which pays for one, and the same search again for none. With the keyboard alone, Ctrl-K
// opens the dialog, ↓ and Enter open a result at its section, Escape closes and returns
// focus. The last option hands the query to the chat. A hostile page stylesheet changes
// nothing of the element; axe-core finds nothing serious, in English and German, at 1280
// and 390 px.
// E2E_SCREENSHOTS=dir keeps the screenshots there (default /tmp/sitetools-shots).
//
//   cd server/web && TEST_DATABASE_URL=… SITETOOLS_BIN=…/bin/sitetools node --test e2e/search.e2e.test.js
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { DEMO_SITE, DESKTOP, Run, freePort, repo, requestLines, startFakeEmbeddings, until } from './harness.js';
import { axeViolations, deepFocus } from './steps.js';

const SHOTS = process.env.E2E_SCREENSHOTS || '/tmp/sitetools-shots';
const PHONE = { width: 390, height: 844 };
const MODAL = 'sitetools-search[modal]';
const INLINE = 'sitetools-search:not([modal])';

const run = new Run({ requests: [], console: [], pageErrors: [] });
const { logs, seen } = run;
let site;
let embed;
let page;

before(
  async () => {
    run.begin('search-e2e');
    const port = await freePort();
    site = `http://127.0.0.1:${port}`;
    embed = await run.fake(startFakeEmbeddings());
    await run.startSitetools({
      port,
      site,
      database: 'sitetools_search_e2e',
      env: {
        SITE_PAGES_DIR: DEMO_SITE,
        CHAT_PERSONA_FILE: path.join(repo, 'deploy/demo/persona.md'),
        SEARCH_SYNONYMS_FILE: path.join(repo, 'deploy/demo/synonyms.txt'),
        RATE_LIMIT_PER_MINUTE: '0',
        EMBEDDINGS_PROVIDER: 'openai',
        EMBEDDINGS_BASE_URL: embed.url,
        EMBEDDINGS_MODEL: 'fake-embed',
        EMBEDDINGS_DIMENSIONS: String(embed.dims),
      },
    });
    page = await run.openTab();
  },
  { timeout: 180000 },
);

after(() => run.stop());

// ---------------------------------------------------------------------------------------
// Helpers

/** show opens url in tab and waits for the search element's button (or field). */
async function show(tab, url, sel = MODAL) {
  await tab.goto(url);
  await tab.waitForSelector(`${sel} ${sel === MODAL ? '#sitetools-search-trigger' : '#sitetools-search-input'}`, { state: 'visible' });
}

/** state is what the element shows: the dialog, the combobox's attributes, the options. */
function state(tab, sel = MODAL) {
  return tab.evaluate((sel) => {
    const root = document.querySelector(sel).shadowRoot;
    const input = root.getElementById('sitetools-search-input');
    const list = root.getElementById('sitetools-search-results');
    return {
      open: !!root.getElementById('sitetools-search-dialog')?.open,
      value: input.value,
      expanded: input.getAttribute('aria-expanded'),
      controls: input.getAttribute('aria-controls'),
      role: input.getAttribute('role'),
      active: input.getAttribute('aria-activedescendant'),
      listShown: !list.hidden && list.getClientRects().length > 0,
      busy: root.querySelector('.box').classList.contains('searching'),
      options: [...list.children].map((o) => ({
        id: o.id,
        role: o.getAttribute('role'),
        selected: o.getAttribute('aria-selected'),
        href: o.getAttribute('href'),
        title: o.querySelector('.title')?.textContent ?? '',
        marks: [...o.querySelectorAll('mark')].map((m) => m.textContent),
        text: o.textContent,
        ask: o.classList.contains('ask'),
      })),
      empty: root.querySelector('.empty').hidden ? '' : root.querySelector('.empty').textContent,
      status: root.getElementById('sitetools-search-status').textContent,
    };
  }, sel);
}

const searches = (from = 0) =>
  seen.requests
    .slice(from)
    .filter((r) => r.method === 'POST' && r.url === `${site}/api/chat/tools`)
    .map((r) => JSON.parse(r.body))
    .filter((b) => b.name === 'search_site')
    .map((b) => b.arguments);

/** askText is the hand-over row's text for query. */
const askText = (q, lang = 'en') => (lang === 'de' ? `Den Assistenten fragen: „${q}“` : `Ask the assistant: “${q}”`);

/** shownFor waits until the element shows the answer for text (its hand-over row names it). */
function shownFor(tab, text, sel = MODAL, lang = 'en') {
  return until(`the answer for “${text}”`, async () => {
    const s = await state(tab, sel);
    return s.options.at(-1)?.text === askText(text.trim(), lang) && !s.busy && s;
  });
}

/**
 * typeAndSee types text one key at a time, waiting after each for its answer; the text
 * and state after each key that asks (from the second character).
 */
async function typeAndSee(tab, text, sel = MODAL) {
  const states = [];
  for (let i = 1; i <= text.length; i++) {
    const now = text.slice(0, i);
    const asks = now.trim().length >= 2;
    const answered = asks && tab.waitForResponse((r) => r.url().endsWith('/api/chat/tools') && JSON.parse(r.request().postData() ?? '{}').arguments?.query === now, { timeout: 10000 });
    await tab.keyboard.type(text[i - 1]);
    if (!asks) {
      assert.equal((await state(tab, sel)).options.length, 0, 'results for one character');
      continue;
    }
    await answered;
    states.push({ text: now, ...(await shownFor(tab, now, sel)) });
  }
  return states;
}

/** styleChanges lists what differs between two searchStyles: "selector property: before → after". */
function styleChanges(before, after) {
  const out = [];
  for (const sel of new Set([...Object.keys(before), ...Object.keys(after)])) {
    for (const prop of new Set([...Object.keys(before[sel] ?? {}), ...Object.keys(after[sel] ?? {})])) {
      if (before[sel]?.[prop] !== after[sel]?.[prop]) out.push(`${sel} ${prop}: ${before[sel]?.[prop]} → ${after[sel]?.[prop]}`);
    }
  }
  return out;
}

/** The element's parts that a page stylesheet would hit first, and what it would change. */
function searchStyles(tab, sel, props) {
  return tab.evaluate(
    ([sel, props]) => {
      const root = document.querySelector(sel).shadowRoot;
      const out = {};
      for (const s of ['.root', '#sitetools-search-trigger', '.shortcut', '#sitetools-search-dialog', '.field', '#sitetools-search-input', '#sitetools-search-close', '.popup', '#sitetools-search-results', '.option', '.option .title', '.option .path', '.option .snippet', '.option mark', '.ask', '.keys', 'svg']) {
        const el = root.querySelector(s);
        if (!el) continue;
        const cs = getComputedStyle(el);
        out[s] = Object.fromEntries(props.map((k) => [k, cs.getPropertyValue(k)]));
      }
      return out;
    },
    [sel, props],
  );
}

const STYLE_PROPS = ['font-family', 'font-size', 'font-weight', 'line-height', 'letter-spacing', 'color', 'background-color', 'border-top-style', 'border-top-width', 'padding-top', 'margin-top', 'display', 'position', 'text-transform', 'box-sizing', 'list-style-type', 'visibility', 'opacity'];

/**
 * addHostileSheet adopts, through the CSSOM (which the CSP allows), the Next.js demo's
 * hostile stylesheet and rules aimed at the element, its host and what it is made of.
 */
function addHostileSheet(tab) {
  const css =
    fs.readFileSync(path.join(repo, 'deploy/nextjs/public/test/hostile.css'), 'utf8') +
    `
sitetools-search, sitetools-search * { display: block !important; font-size: 31px !important; color: lime !important; background: black !important; all: unset !important; }
a, mark, kbd, dialog, input, [role], span, svg, label { color: #0f0 !important; background: #f00 !important; font-weight: 100 !important; display: inline !important; padding: 9px !important; visibility: visible !important; opacity: 0.5 !important; }
dialog::backdrop { background: yellow !important; }
:root { --accent: red; --ink: red; --paper: black; }
`;
  return tab.evaluate((css) => {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    window.__hostile = sheet;
  }, css);
}

function removeHostileSheet(tab) {
  return tab.evaluate(() => {
    document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => s !== window.__hostile);
  });
}

/** pageStyles are some of the page's own elements' styles, to see the hostile sheet hit. */
function pageStyles(tab) {
  return tab.evaluate(() =>
    ['body', 'h1', 'main p', 'header a'].map((s) => {
      const cs = getComputedStyle(document.querySelector(s));
      return [cs.fontFamily, cs.color, cs.letterSpacing, cs.display];
    }),
  );
}

// ---------------------------------------------------------------------------------------
// The tests, in order: they share one tab.

const QUERY = 'accessibility audits'; // 20 keystrokes

test('typing shows results after every keystroke, from instant searches that pay for no embedding', async (t) => {
  await show(page, `${site}/`);
  const embedded = embed.calls;
  const from = seen.requests.length;
  await page.keyboard.press('Control+K');
  await until('the dialog', async () => (await state(page)).open);
  assert.equal(await deepFocus(page), 'sitetools-search-input');

  const t0 = Date.now();
  const states = await typeAndSee(page, QUERY);
  const perKey = (Date.now() - t0) / QUERY.length;
  assert.equal(states.length, QUERY.length - 1);
  // Every key that changes the text brings a new list: the answer for the text as it was
  // after that key (a space after a word changes none).
  for (let i = 1; i < states.length; i++) {
    if (states[i].text.trim() !== states[i - 1].text.trim()) assert.notDeepEqual(states[i].options, states[i - 1].options, `after “${states[i].text}”`);
  }
  const withPages = states.filter((s) => s.options.some((o) => !o.ask));
  assert.ok(withPages.length >= states.length - 2, `pages for ${withPages.length} of ${states.length} keystrokes`);
  const last = states.at(-1);
  assert.ok(last.options.some((o) => /accessibility/i.test(o.title)), JSON.stringify(last.options.map((o) => o.title)));
  assert.ok(last.options.some((o) => o.marks.length > 0), 'matches marked');

  const asked = searches(from);
  assert.deepEqual(
    asked.map((a) => [a.query, a.mode]),
    Array.from({ length: QUERY.length - 1 }, (_, i) => [QUERY.slice(0, i + 2), 'instant']),
    'one instant search per keystroke from the second, and nothing else',
  );
  assert.equal(embed.calls, embedded, 'an embedding was paid for while typing');
  // The status line says how many, in words, once typing settles.
  await until('the status', async () => /^\d+ results?$/.test((await state(page)).status));
  t.diagnostic(`${QUERY.length} keystrokes, each answered in the list: ${perKey.toFixed(0)} ms a keystroke, waiting for each answer`);
});

test('Enter asks the full search: one embedding; the same search again pays for none', async () => {
  const embedded = embed.calls;
  const from = seen.requests.length;
  const done = page.waitForResponse((r) => r.url() === `${site}/api/chat/tools` && !JSON.parse(r.request().postData()).arguments.mode);
  await page.keyboard.press('Enter');
  assert.equal((await done).status(), 200);
  assert.deepEqual(searches(from), [{ query: QUERY, limit: 8 }]);
  assert.equal(embed.calls - embedded, 1, 'embeddings for the full search');
  const s = await shownFor(page, QUERY);
  assert.equal(s.open, true);
  assert.equal(s.active, null, 'nothing active');
  // Enter again, and the pause: known already, nothing asked.
  await page.keyboard.press('Enter');
  await new Promise((r) => setTimeout(r, 1000));
  assert.deepEqual(searches(from).length, 1);

  // Another visitor's tab: the same search is asked, and answered from the cache.
  await inTab(DESKTOP, `${site}/pricing`, async (tab) => {
    await tab.keyboard.press('Control+K');
    await tab.keyboard.type(QUERY);
    const full = tab.waitForResponse((r) => r.url() === `${site}/api/chat/tools` && JSON.parse(r.request().postData()).arguments.mode === undefined);
    await tab.keyboard.press('Enter');
    const res = await full;
    assert.equal(res.status(), 200);
    assert.equal(JSON.parse(res.request().postData()).arguments.query, QUERY);
    await shownFor(tab, QUERY);
  });
  assert.equal(embed.calls - embedded, 1, 'no embedding for the same search again');
});

test('with the keyboard alone: ↓ and Enter open the result at its section; Escape closes and returns focus', async () => {
  await show(page, `${site}/`);
  // Tab to the button, Enter opens; Escape closes and focus is back on the button.
  await page.locator(`${MODAL} #sitetools-search-trigger`).focus();
  await page.keyboard.press('Enter');
  await until('the dialog', async () => (await state(page)).open);
  assert.equal(await deepFocus(page), 'sitetools-search-input');
  await page.keyboard.press('Escape');
  await until('the dialog to close', async () => !(await state(page)).open);
  assert.equal(await deepFocus(page), 'sitetools-search-trigger');

  // `/` outside a text field opens it too; Ctrl-K from the page.
  await page.locator('main h1').click();
  await page.keyboard.press('/');
  await until('the dialog', async () => (await state(page)).open);
  assert.equal((await state(page)).value, '', 'the slash is not typed');
  await page.keyboard.press('Escape');
  await page.keyboard.press('Control+K');
  await until('the dialog', async () => (await state(page)).open);
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Backspace');

  await typeAndSee(page, 'day rate');
  let s = await state(page);
  assert.deepEqual([s.role, s.controls, s.expanded], ['combobox', 'sitetools-search-results', 'true']);
  const first = s.options[0];
  assert.ok(first && !first.ask && first.href.includes('#'), `the first result links its section: ${JSON.stringify(first)}`);
  await page.keyboard.press('ArrowDown');
  s = await state(page);
  assert.equal(s.active, first.id);
  assert.deepEqual(s.options.map((o) => o.selected), s.options.map((o, i) => String(i === 0)));
  assert.equal(await deepFocus(page), 'sitetools-search-input', 'focus stays in the field');
  // Round the list and back.
  await page.keyboard.press('ArrowUp');
  assert.equal((await state(page)).active, s.options.at(-1).id);
  await page.keyboard.press('ArrowDown');
  assert.equal((await state(page)).active, first.id);

  const want = new URL(first.href);
  await page.keyboard.press('Enter');
  await page.waitForURL((u) => u.pathname === want.pathname && u.hash === want.hash);
  assert.equal(page.url(), want.href);
  // The demo's router showed it: the same document, scrolled to the section.
  const section = decodeURIComponent(want.hash.slice(1));
  await until('the section in view', () =>
    page.evaluate((id) => {
      const r = document.getElementById(id)?.getBoundingClientRect();
      return r && r.top >= -1 && r.top < innerHeight;
    }, section),
  );
  s = await state(page);
  assert.equal(s.open, false);
});

test('the last option hands the query to the chat: kept for after the privacy notice, then sent', async () => {
  const question = 'Do you audit booking flows?';
  await show(page, `${site}/`);
  await page.evaluate(() => localStorage.clear());
  await page.keyboard.press('Control+K');
  await page.keyboard.type(question);
  await shownFor(page, question);
  await page.keyboard.press('ArrowUp');
  const s = await state(page);
  assert.equal(s.active, s.options.at(-1).id);
  assert.equal(s.options.at(-1).text, askText(question));
  const chats = () => seen.requests.filter((r) => r.method === 'POST' && r.url === `${site}/api/chat`).length;
  const before = chats();
  await page.keyboard.press('Enter');
  await page.waitForSelector('#sitetools-chat-panel', { state: 'visible' });
  assert.equal((await state(page)).open, false);
  // Not accepted yet: the question waits in its field, the notice has focus.
  assert.equal(await page.inputValue('#sitetools-chat-input'), question);
  assert.equal(await deepFocus(page), 'sitetools-chat-consent-accept');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#sitetools-chat-input', { state: 'visible' });
  assert.equal(await deepFocus(page), 'sitetools-chat-input');
  assert.equal(await page.inputValue('#sitetools-chat-input'), question);
  assert.equal(chats(), before, 'nothing sent before the visitor sends it');
  const answered = page.waitForResponse((r) => r.url() === `${site}/api/chat`);
  await page.keyboard.press('Enter');
  assert.equal((await answered).status(), 200);
  assert.equal(JSON.parse((await answered).request().postData()).messages.at(-1).content, question);
  const answering = () => page.evaluate(() => !!document.querySelector('sitetools-chat').shadowRoot.querySelector('#sitetools-chat-log[aria-busy]'));
  await until('the answer', async () => !(await answering()));

  // Accepted: the hand-over sends it at once.
  await page.keyboard.press('Control+K');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('free slots');
  await shownFor(page, 'free slots');
  await page.keyboard.press('ArrowUp');
  const again = page.waitForResponse((r) => r.url() === `${site}/api/chat`);
  await page.keyboard.press('Enter');
  assert.equal(JSON.parse((await again).request().postData()).messages.at(-1).content, 'free slots');
  await until('the answer', async () => !(await answering()));
  assert.equal(await page.inputValue('#sitetools-chat-input'), '');
});

test('without a chat on the page there is no hand-over row', async () => {
  const ctx = await run.browser.newContext({ viewport: DESKTOP });
  try {
    const tab = await ctx.newPage();
    await tab.route(`${site}/webmcp/chat.js`, (r) => r.abort());
    await show(tab, `${site}/`);
    assert.equal(await tab.locator('sitetools-chat').count(), 0);
    await tab.keyboard.press('Control+K');
    await tab.keyboard.type('pricing');
    await until('results', async () => (await state(tab)).options.length > 0 && !(await state(tab)).busy);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await state(tab)).options.filter((o) => o.ask).length, 0);
  } finally {
    await ctx.close();
  }
});

test('a hostile page stylesheet changes none of the element’s computed styles, modal or inline', async () => {
  for (const [url, sel] of [
    [`${site}/`, MODAL],
    [`${site}/search`, INLINE],
  ]) {
    await show(page, url, sel);
    if (sel === MODAL) await page.keyboard.press('Control+K');
    else await page.locator(`${INLINE} #sitetools-search-input`).focus();
    await typeAndSee(page, 'privacy', sel);
    await page.keyboard.press('ArrowDown');
    // The inline box's width is its container's, which the page's stylesheet may change.
    const props = sel === MODAL ? [...STYLE_PROPS, 'width', 'height'] : STYLE_PROPS;
    const before = await searchStyles(page, sel, props);
    assert.ok(Object.keys(before).length >= 12, Object.keys(before).join(' '));
    const pageBefore = await pageStyles(page);
    await addHostileSheet(page);
    assert.notDeepEqual(await pageStyles(page), pageBefore, 'the hostile stylesheet changed nothing on the page: the check proves nothing');
    // The element's box is a flex item of the header's row, which the sheet makes a block:
    // the page's layout around it, not the element's style, decides whether it is blockified.
    const changes = styleChanges(before, await searchStyles(page, sel, props)).filter((c) => c !== '.root display: block → inline-block');
    assert.deepEqual(changes, [], sel);
    const s = await state(page, sel);
    assert.equal(s.listShown, true);
    await removeHostileSheet(page);
  }
});

test('the tab kept to its CSP and made no page error; every search was answered', () => {
  assert.deepEqual(seen.pageErrors, []);
  assert.deepEqual(seen.console.filter((l) => /Content Security Policy/i.test(l)), [], 'CSP violations');
  assert.deepEqual(seen.requests.filter((r) => new URL(r.url).origin !== site), [], 'requests to other origins');
  const lines = requestLines(logs.serve).filter((l) => l.tool === 'search_site');
  assert.ok(lines.length > 20);
  assert.deepEqual(lines.filter((l) => l.status !== 200 && l.status !== 499), [], 'searches that failed');
});

// ---------------------------------------------------------------------------------------
// Accessibility and layout, in contexts of their own where axe may run (it adds a style
// element, which the pages' CSP refuses; the tests above hold the element to the CSP).

/** inTab runs fn in a fresh tab of viewport showing url (CSP bypassed when axe is to run). */
async function inTab(viewport, url, fn, { axe = false, sel = MODAL } = {}) {
  const ctx = await run.browser.newContext({ viewport, bypassCSP: axe });
  try {
    const tab = await ctx.newPage();
    await show(tab, url, sel);
    return await fn(tab);
  } finally {
    await ctx.close();
  }
}

/** fits says what of the element falls outside the viewport, or makes the page scroll sideways. */
function fits(tab, sel) {
  return tab.evaluate((sel) => {
    const root = document.querySelector(sel).shadowRoot;
    const vw = document.documentElement.clientWidth;
    const problems = [];
    for (const s of ['#sitetools-search-trigger', '#sitetools-search-dialog', '.field', '#sitetools-search-input', '.popup', '.option', '#sitetools-search-close']) {
      const el = root.querySelector(s);
      if (!el || el.getClientRects().length === 0) continue;
      const r = el.getBoundingClientRect();
      if (r.left < -0.5 || r.right > vw + 0.5) problems.push(`${s} at ${Math.round(r.left)}–${Math.round(r.right)} outside ${vw}`);
    }
    if (document.documentElement.scrollWidth > vw) problems.push(`the page scrolls sideways (${document.documentElement.scrollWidth} > ${vw})`);
    return problems;
  }, sel);
}

test('axe-core finds no serious or critical violation, modal and inline, in English and German, at 1280 and 390 px', async (t) => {
  fs.mkdirSync(SHOTS, { recursive: true });
  const shots = [];
  for (const [lang, home, query] of [
    ['en', '/', 'accessibility'],
    ['de', '/de/', 'datenschutz'],
  ]) {
    for (const viewport of [DESKTOP, PHONE]) {
      for (const sel of [MODAL, INLINE]) {
        const url = `${site}${sel === MODAL ? home : `${home}search`}`;
        await inTab(
          viewport,
          url,
          async (tab) => {
            if (sel === MODAL) await tab.click(`${MODAL} #sitetools-search-trigger`);
            else await tab.click(`${INLINE} #sitetools-search-input`);
            for (const ch of query) {
              await tab.keyboard.type(ch);
              await new Promise((r) => setTimeout(r, 80));
            }
            const s = await until('results', async () => {
              const x = await state(tab, sel);
              return x.options.some((o) => !o.ask) && x.options.at(-1)?.text === askText(query, lang) && !x.busy && x;
            });
            await tab.keyboard.press('ArrowDown');
            const where = `${lang} ${sel === MODAL ? 'modal' : 'inline'} at ${viewport.width} px`;
            if (lang === 'de') {
              const words = await tab.evaluate((sel) => {
                const root = document.querySelector(sel).shadowRoot;
                return [root.getElementById('sitetools-search-input').placeholder, root.getElementById('sitetools-search-results').getAttribute('aria-label'), root.querySelector('.trigger-label')?.textContent ?? 'inline'];
              }, sel);
              assert.deepEqual(words, ['Seiten durchsuchen…', 'Gefundene Seiten', sel === MODAL ? 'Suchen' : 'inline'], where);
              await until('the status', async () => /^(\d+ Ergebnisse|1 Ergebnis)$/.test((await state(tab, sel)).status));
            }
            assert.ok(s.expanded === 'true', where);
            assert.deepEqual(await fits(tab, sel), [], where);
            assert.deepEqual(await axeViolations(tab), [], where);
            const name = `search-${sel === MODAL ? 'modal' : 'inline'}-${lang}-${viewport.width}.png`;
            if (name === 'search-modal-en-1280.png' || name === 'search-inline-de-390.png' || process.env.E2E_ALL_SHOTS) {
              const file = path.join(SHOTS, name);
              await tab.screenshot({ path: file });
              shots.push(file);
            }
          },
          { axe: true, sel },
        );
      }
    }
  }
  for (const file of shots) t.diagnostic(`screenshot: ${file}`);
});

test('on a phone the dialog covers the screen and its ✕ closes it', async () => {
  await inTab(PHONE, `${site}/`, async (tab) => {
    await tab.click(`${MODAL} #sitetools-search-trigger`);
    const [box, screen] = await tab.evaluate(() => {
      const r = document.querySelector('sitetools-search[modal]').shadowRoot.getElementById('sitetools-search-dialog').getBoundingClientRect();
      return [[r.left, r.top, r.width, r.height].map(Math.round), [0, 0, document.documentElement.clientWidth, innerHeight]];
    });
    assert.deepEqual(box, screen);
    await tab.click(`${MODAL} #sitetools-search-close`);
    await until('the dialog to close', async () => !(await state(tab)).open);
    assert.equal(await deepFocus(tab), 'sitetools-search-trigger');
  });
});
