// End to end: <sitetools-search> on the site owner's own Next.js frontend, the button in
// its header that opens the search in a dialog and its page /search with the field in
// the page. Real parts only, on loopback:
//
//   headless Chromium → `next start` (deploy/nextjs: its header, /search, its router,
//   the route handlers proxying /api/chat/tools and /webmcp/*)
//   → `sitetools serve` → PostgreSQL
//
// The one fake is the paid embeddings provider (OpenAI's wire format), which both the
// ingest and the search use and which counts its calls: typing costs none, Enter one,
// the same search again none.
//
//   cd server/web && TEST_DATABASE_URL=… SITETOOLS_BIN=…/bin/sitetools node --test e2e/nextjs-search.e2e.test.js
//
// Needs bin/sitetools (make build), deploy/dev/browser.sh (Chromium, npm packages, and
// deploy/nextjs built with next build), and deploy/dev/postgres.sh.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { NEXT_BUILT, Run, freePort, requestLines, startFakeEmbeddings, startNext, until, webDir } from './harness.js';
import { addHostileSheet, axeViolations, deepFocus, inFreshTab } from './steps.js';

const SHOTS = process.env.E2E_SCREENSHOTS || path.join(webDir, 'e2e');
// Twenty keystrokes; the last word is on the demo's services and pricing pages.
const QUERY = 'accessibility audits';
const HEADER = 'header sitetools-search';
const INLINE = 'main sitetools-search';

const run = new Run({ requests: [], console: [], pageErrors: [] }, 'next');
const { logs, seen } = run;
let origin; // http://127.0.0.1:<port>, the Next.js frontend: the site's origin
let embed;
let page;

before(
  async () => {
    run.begin('next-search-e2e', NEXT_BUILT);
    const sitePort = await freePort();
    const nextPort = await freePort();
    origin = `http://127.0.0.1:${nextPort}`;
    embed = await run.fake(startFakeEmbeddings());
    // The index is built with the provider the search asks (the same model and length);
    // the tests are one visitor who searches more in a minute than any would.
    const env = {
      TRUSTED_PROXIES: '127.0.0.1/32',
      RATE_LIMIT_PER_MINUTE: '600',
      EMBEDDINGS_PROVIDER: 'openai',
      EMBEDDINGS_BASE_URL: embed.url,
      EMBEDDINGS_MODEL: 'fake-embed',
      EMBEDDINGS_DIMENSIONS: String(embed.dims),
    };
    await run.startSitetools({ port: sitePort, site: origin, database: 'sitetools_next_search_e2e', env });
    assert.ok(embed.calls > 0, 'the ingest embedded the pages with the fake provider');
    await startNext(run.procs, { port: nextPort, sitetools: run.sitetools, home: run.home }, logs.next);
    page = await run.openTab();
  },
  { timeout: 180000 },
);

after(() => run.stop());

// ---------------------------------------------------------------------------------------
// What the tests read of the element: its open shadow root, by ids and parts.

/** part is the element matching sel in the shadow root of the element at host. */
const part = (p, host, sel) => p.locator(host).locator(sel);

/** searchRequests is the arguments of the search_site calls in seen.requests[from:to]. */
function searchRequests(from = 0, to = seen.requests.length) {
  return seen.requests
    .slice(from, to)
    .filter((r) => r.method === 'POST' && r.url === `${origin}/api/chat/tools`)
    .map((r) => JSON.parse(r.body))
    .filter((b) => b.name === 'search_site')
    .map((b) => b.arguments);
}

/**
 * recordRenders makes the tab note every time the element at host renders its results:
 * the field's text at that moment, the options' text (the last one, the hand-over to the
 * chat, quotes the query), and the no-results message. The element only ever shows the
 * answer for the text in the field, so a render after a keystroke with the field's new
 * text is that keystroke's results.
 */
function recordRenders(p, host) {
  return p.evaluate((host) => {
    const root = document.querySelector(host).shadowRoot;
    const input = root.getElementById('sitetools-search-input');
    const list = root.getElementById('sitetools-search-results');
    const empty = root.querySelector('[part~="empty"]');
    window.__renders = [];
    window.__renderObserver?.disconnect();
    const note = () =>
      window.__renders.push({
        value: input.value,
        options: [...list.querySelectorAll('[role="option"]')].map((o) => o.textContent.replace(/\s+/g, ' ').trim()),
        pages: list.querySelectorAll('a[role="option"]').length,
        empty: empty.hidden ? '' : empty.textContent,
      });
    window.__renderObserver = new MutationObserver(note);
    window.__renderObserver.observe(list, { childList: true });
    window.__renderObserver.observe(empty, { childList: true, characterData: true, subtree: true });
  }, host);
}

const renders = (p) => p.evaluate(() => window.__renders.length);

/** renderedFor waits for a render after the first n whose field text is value. */
function renderedFor(p, n, value, timeout = 5000) {
  return until(
    `results for ${JSON.stringify(value)}`,
    () => p.evaluate(([n, value]) => window.__renders.slice(n).find((r) => r.value === value), [n, value]),
    { timeout, every: 10 },
  );
}

/** The query as the hand-over row and the no-results message quote it. */
const quoted = (value) => `“${value.trim()}”`;

/**
 * typeAndSee types text one key at a time; after each key that leaves at least two
 * characters it waits for the listbox to show that text's results, and checks they are
 * its own (the hand-over row or the message quotes it). The renders, one per such key.
 */
async function typeAndSee(p, host, text) {
  const seenRenders = [];
  for (const key of text) {
    const n = await renders(p);
    await p.keyboard.type(key);
    const value = await part(p, host, '#sitetools-search-input').inputValue();
    if (value.trim().length < 2) continue;
    const r = await renderedFor(p, n, value);
    assert.ok(r.options.at(-1)?.includes(quoted(value)) || r.empty.includes(quoted(value)), `the results shown after typing ${JSON.stringify(value)}: ${JSON.stringify(r)}`);
    seenRenders.push(r);
  }
  return seenRenders;
}

/** openDialog opens the header's search with Ctrl-K and waits for its field to have focus. */
async function openDialog(p) {
  await part(p, HEADER, '#sitetools-search-trigger').waitFor({ state: 'visible' });
  await p.keyboard.press('Control+K');
  await part(p, HEADER, '#sitetools-search-dialog').waitFor({ state: 'visible' });
  await until('the field to have focus', async () => (await deepFocus(p)) === 'sitetools-search-input');
}

/**
 * computedStyles is the computed values of props of the element at host itself and of
 * each of selectors that matches in its shadow root, but for pageSet: what the page's
 * layout decides. The host is display: contents, so the root's box sits in the page's
 * flow: a flex container there blockifies it (display), and in the page's column its
 * width is the column's, and so are the widths and heights of what it holds.
 */
function computedStyles(p, host, selectors, props, pageSet) {
  return p.evaluate(
    ([host, selectors, props, pageSet]) => {
      const el = document.querySelector(host);
      const pick = (node, sel) => {
        const cs = getComputedStyle(node);
        return Object.fromEntries(props.filter((k) => !pageSet[sel]?.includes(k) && !pageSet['*']?.includes(k)).map((k) => [k, cs.getPropertyValue(k)]));
      };
      const out = { host: pick(el, 'host') };
      for (const sel of selectors) {
        const node = el.shadowRoot.querySelector(sel);
        if (node) out[sel] = pick(node, sel);
      }
      return out;
    },
    [host, selectors, props, pageSet],
  );
}

const SEARCH_PARTS = [
  '[part~="root"]',
  '#sitetools-search-trigger',
  '[part~="shortcut"]',
  '#sitetools-search-dialog',
  '[part~="box"]',
  '[part~="field"]',
  '#sitetools-search-input',
  '#sitetools-search-close',
  '[part~="popup"]',
  '#sitetools-search-results',
  'a[role="option"]',
  '[part~="result-title"]',
  '[part~="snippet"]',
  '[part~="mark"]',
  '[part~="ask"]',
  'svg',
];
const STYLE_PROPS = ['font-family', 'font-size', 'font-weight', 'line-height', 'letter-spacing', 'color', 'background-color', 'border-top-style', 'border-top-width', 'border-top-color', 'padding-top', 'padding-left', 'margin-top', 'display', 'position', 'visibility', 'text-transform', 'box-sizing', 'list-style-type', 'width', 'height'];

/** Some of the page's own elements, to prove the hostile stylesheet applies. */
const pageStyles = (p) =>
  p.evaluate(() =>
    Object.fromEntries(
      ['h1', 'main p', 'a', 'header'].map((sel) => {
        const cs = getComputedStyle(document.querySelector(sel));
        return [sel, { font: cs.fontFamily, spacing: cs.letterSpacing, color: cs.color }];
      }),
    ),
  );

// ---------------------------------------------------------------------------------------
// The tests, in order: they share one tab.

test('the header has the search button and /search the field, each under the strict CSP', async () => {
  const home = await fetch(`${origin}/`);
  const html = await home.text();
  assert.equal(html.match(/<script[^>]*src="\/webmcp\/search\.js"/g)?.length, 1, 'one tag for the search');
  assert.match(html, /<header[^>]*>[\s\S]*<sitetools-search modal=""[\s\S]*<\/header>/);
  const csp = home.headers.get('content-security-policy') ?? '';
  assert.match(csp, /script-src 'self' 'nonce-[^']+'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);

  // /search is a page of the site: 200 for a document and a HEAD, its field in <main>,
  // no second search in the header, and kept out of search engines' indexes.
  for (const method of ['GET', 'HEAD']) {
    const res = await fetch(`${origin}/search`, { method });
    assert.equal(res.status, 200, `${method} /search`);
    assert.match(res.headers.get('content-security-policy') ?? '', /script-src 'self' 'nonce-/);
  }
  const searchHTML = await (await fetch(`${origin}/search`)).text();
  assert.match(searchHTML, /<main[^>]*>[\s\S]*<sitetools-search><\/sitetools-search>[\s\S]*<\/main>/);
  assert.doesNotMatch(searchHTML, /<sitetools-search modal/);
  assert.match(searchHTML, /<meta name="robots" content="noindex, follow"/);
  assert.equal((await fetch(`${origin}/search-nothing-here`)).status, 404);

  const js = await fetch(`${origin}/webmcp/search.js`);
  assert.equal(js.status, 200);
  assert.match(js.headers.get('content-type'), /^text\/javascript/);

  const res = await page.goto(`${origin}/`);
  assert.equal(res.status(), 200);
  await part(page, HEADER, '#sitetools-search-trigger').waitFor({ state: 'visible' });
  assert.equal(await page.locator('header').getByRole('button', { name: 'Search', exact: true }).count(), 1);
  assert.equal(await page.locator('sitetools-search').count(), 1);
  const shown = await page.goto(`${origin}/search`);
  assert.equal(shown.status(), 200);
  await part(page, INLINE, '#sitetools-search-input').waitFor({ state: 'visible' });
  assert.equal(await page.locator('sitetools-search').count(), 1, 'only the page’s own field on /search');
  assert.equal(await page.title(), 'Search · Northwind Lane');
  assert.deepEqual(seen.console.filter((l) => /Content Security Policy/i.test(l)), [], 'CSP violations');
  assert.deepEqual(seen.pageErrors, []);
});

test('typing: results after every keystroke and no embedding; Enter: one; the same search again: none', async (t) => {
  await page.goto(`${origin}/`);
  await openDialog(page);
  await recordRenders(page, HEADER);
  const from = seen.requests.length;
  const calls = embed.calls;

  assert.equal(QUERY.length, 20);
  const shown = await typeAndSee(page, HEADER, QUERY);
  const typingCalls = embed.calls - calls;
  // Enter with no option chosen, at once (before the pause would ask the same): the
  // full search.
  const n = await renders(page);
  const beforeEnter = seen.requests.length;
  await page.keyboard.press('Enter');

  // Every keystroke from the second on showed its own results, one request each, by
  // words alone: the provider was not asked.
  assert.equal(shown.length, QUERY.length - 1);
  assert.equal(typingCalls, 0, 'embedding calls while typing');
  const typed = searchRequests(from, beforeEnter);
  assert.deepEqual(
    typed.filter((a) => a.mode !== 'instant'),
    [],
    'a full search while typing: a keystroke’s results took longer than the pause',
  );
  for (let i = 2; i <= QUERY.length; i++) {
    assert.ok(typed.some((a) => a.query === QUERY.slice(0, i)), `no instant search for ${JSON.stringify(QUERY.slice(0, i))}`);
  }
  assert.equal(typed.find((a) => a.query === QUERY.slice(0, 1)), undefined, 'one character is no search');
  assert.deepEqual([...new Set(typed.map((a) => a.limit))], [8]);
  const last = shown.at(-1);
  assert.ok(last.pages >= 1, `pages found for ${QUERY}: ${JSON.stringify(last)}`);
  t.diagnostic(`pages shown per keystroke: ${shown.map((r) => r.pages).join(' ')}`);

  // The full search: one embedding.
  await until('the full search’s embedding', () => embed.calls - calls === 1);
  await renderedFor(page, n, QUERY);
  // Nothing more comes of the pause after it.
  await page.waitForTimeout(1200);
  assert.equal(embed.calls - calls, 1, 'embedding calls after Enter');
  assert.deepEqual(
    searchRequests(beforeEnter).map((a) => [a.query, a.mode ?? 'full']),
    [[QUERY, 'full']],
  );

  // The same full search from a fresh page (the element's own answers are gone with it):
  // it reaches sitetools, whose cache has the query's embedding.
  await page.reload();
  await openDialog(page);
  await recordRenders(page, HEADER);
  const again = seen.requests.length;
  await page.keyboard.type(QUERY);
  const m = await renders(page);
  await page.keyboard.press('Enter');
  await until('the full search sent again', () => searchRequests(again).some((a) => a.query === QUERY && a.mode === undefined));
  await renderedFor(page, m, QUERY);
  await page.waitForTimeout(1200);
  assert.equal(embed.calls - calls, 1, 'embedding calls after the same full search again');
  await page.keyboard.press('Escape');
});

test('the keyboard alone: Tab to the button, type, ↓, Enter opens the result at its anchor, client-side', async () => {
  await page.goto(`${origin}/`);
  await page.evaluate(() => {
    window.__marker = 'same document';
  });
  let tabs = 0;
  while ((await deepFocus(page)) !== 'sitetools-search-trigger') {
    assert.ok(++tabs <= 15, 'Tab does not reach the search button');
    await page.keyboard.press('Tab');
  }
  await page.keyboard.press('Enter');
  await part(page, HEADER, '#sitetools-search-dialog').waitFor({ state: 'visible' });
  assert.equal(await deepFocus(page), 'sitetools-search-input');
  await recordRenders(page, HEADER);
  const n = await renders(page);
  await page.keyboard.type('accessibility audit', { delay: 40 });
  const r = await renderedFor(page, n, 'accessibility audit');
  assert.ok(r.pages >= 1, JSON.stringify(r));

  // Down to the first result that links to a section of its page.
  const hrefs = await part(page, HEADER, 'a[role="option"]').evaluateAll((as) => as.map((a) => a.href));
  const pick = hrefs.findIndex((h) => new URL(h).hash.length > 1);
  assert.ok(pick >= 0, `no result links to a section: ${hrefs.join(' ')}`);
  for (let i = 0; i <= pick; i++) await page.keyboard.press('ArrowDown');
  const input = part(page, HEADER, '#sitetools-search-input');
  assert.equal(await input.getAttribute('aria-activedescendant'), `sitetools-search-option-${pick}`);
  assert.equal(await input.getAttribute('aria-expanded'), 'true');
  const href = hrefs[pick];
  const target = new URL(href);
  assert.equal(target.origin, origin);

  await page.keyboard.press('Enter');
  await page.waitForURL(href);
  await until('the section to be on the page', () => page.evaluate((id) => !!document.getElementById(id), decodeURIComponent(target.hash.slice(1))));
  assert.equal(await page.evaluate(() => window.__marker), 'same document', 'Next’s router showed the page');
  assert.ok(await part(page, HEADER, '#sitetools-search-dialog').isHidden());

  // Ctrl-K and "/" open it again anywhere on the site; Escape closes it, focus back on the button.
  for (const key of ['Control+K', '/']) {
    await page.locator('main h1').first().click();
    await page.keyboard.press(key);
    await part(page, HEADER, '#sitetools-search-dialog').waitFor({ state: 'visible' });
    assert.equal(await deepFocus(page), 'sitetools-search-input', key);
    await page.keyboard.press('Escape');
    await part(page, HEADER, '#sitetools-search-dialog').waitFor({ state: 'hidden' });
    // (on the dialog's close event, a task after it is hidden)
    await until(`focus back on the button after ${key}`, async () => (await deepFocus(page)) === 'sitetools-search-trigger', { timeout: 2000, every: 20 });
  }
});

test('/search: the field in the page, reached from the not-found page; results open with the keyboard', async () => {
  await page.goto(`${origin}/no-such-page`);
  await page.evaluate(() => {
    window.__marker = 'same document';
  });
  await page.getByRole('link', { name: 'search the site' }).click();
  await page.waitForURL(`${origin}/search`);
  const input = part(page, INLINE, '#sitetools-search-input');
  await input.waitFor({ state: 'visible' });
  // The header's button is gone here: the shortcut focuses the page's field.
  await until('the header’s button to go', async () => (await page.locator(HEADER).count()) === 0);
  await page.locator('main h1').click();
  await page.keyboard.press('Control+K');
  assert.equal(await deepFocus(page), 'sitetools-search-input');

  await recordRenders(page, INLINE);
  const shown = await typeAndSee(page, INLINE, 'pricing');
  assert.ok(shown.at(-1).pages >= 1, JSON.stringify(shown.at(-1)));
  await page.keyboard.press('ArrowDown');
  const href = await part(page, INLINE, '#sitetools-search-option-0').getAttribute('href');
  await page.keyboard.press('Enter');
  await page.waitForURL(href);
  assert.equal(await page.evaluate(() => window.__marker), 'same document', 'Next’s router showed the page');
  // Back on another page, the header has its button again.
  await part(page, HEADER, '#sitetools-search-trigger').waitFor({ state: 'visible' });
});

test('axe-core: no serious or critical violation, the dialog open with results and /search with results', async () => {
  // axe adds a style element of its own while it runs, which the CSP refuses: it runs
  // where the CSP is not enforced (the other tests hold the element to it).
  await inFreshTab(
    run.browser,
    `${origin}/`,
    async (p) => {
      assert.deepEqual(await axeViolations(p), [], 'the button');
      await openDialog(p);
      await recordRenders(p, HEADER);
      await typeAndSee(p, HEADER, 'pricing');
      await p.keyboard.press('ArrowDown');
      assert.deepEqual(await axeViolations(p), [], 'the dialog with results');
    },
    { bypassCSP: true },
  );
  await inFreshTab(
    run.browser,
    `${origin}/search`,
    async (p) => {
      await part(p, INLINE, '#sitetools-search-input').click();
      await recordRenders(p, INLINE);
      await typeAndSee(p, INLINE, 'accessibility');
      assert.deepEqual(await axeViolations(p), [], '/search with results');
      await p.keyboard.type(' zzqxv');
      await renderedFor(p, 0, 'accessibility zzqxv');
      assert.deepEqual(await axeViolations(p), [], '/search without results');
    },
    { bypassCSP: true },
  );
});

test('a hostile page stylesheet changes nothing of the element, in the dialog and on /search', async () => {
  for (const [path, host, open] of [
    ['/', HEADER, openDialog],
    ['/search', INLINE, (p) => part(p, INLINE, '#sitetools-search-input').click()],
  ]) {
    await inFreshTab(run.browser, `${origin}${path}`, async (p) => {
      await part(p, host, '#sitetools-search-input').waitFor({ state: host === HEADER ? 'attached' : 'visible' });
      await open(p);
      await recordRenders(p, host);
      await typeAndSee(p, host, 'audit');
      await p.keyboard.press('ArrowDown');
      const pageSet = { '[part~="root"]': ['display'], ...(host === INLINE && { '*': ['width', 'height'] }) };
      const styles = () => computedStyles(p, host, SEARCH_PARTS, STYLE_PROPS, pageSet);
      const before = await styles();
      assert.ok(Object.keys(before).length >= 12, Object.keys(before).join(' '));
      const pageBefore = await pageStyles(p);
      await addHostileSheet(p);
      assert.notDeepEqual(await pageStyles(p), pageBefore, 'the hostile stylesheet changed nothing on the page: the check proves nothing');
      assert.deepEqual(await styles(), before, path);
      // And it still works.
      const n = await renders(p);
      await p.keyboard.type('s');
      await renderedFor(p, n, 'audits');
    });
  }
});

test('screenshots: the dialog on the desktop and /search on a 390 px phone', async (t) => {
  fs.mkdirSync(SHOTS, { recursive: true });
  const dialog = path.join(SHOTS, 'nextjs-search-dialog.png');
  const phone = path.join(SHOTS, 'nextjs-search-mobile.png');
  await inFreshTab(run.browser, `${origin}/`, async (p) => {
    await openDialog(p);
    await recordRenders(p, HEADER);
    await typeAndSee(p, HEADER, 'accessibility audit');
    await p.keyboard.press('ArrowDown');
    await p.screenshot({ path: dialog });
  });
  await inFreshTab(
    run.browser,
    `${origin}/search`,
    async (p) => {
      await part(p, INLINE, '#sitetools-search-input').click();
      await recordRenders(p, INLINE);
      await typeAndSee(p, INLINE, 'pricing');
      await p.screenshot({ path: phone });
    },
    { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true },
  );
  t.diagnostic(`${dialog}, ${phone}`);
});

test('the tab spoke only to its own origin, without a page error or CSP violation; sitetools served every search', () => {
  assert.deepEqual(
    seen.requests.filter((r) => new URL(r.url).origin !== origin),
    [],
    'requests to other origins',
  );
  assert.deepEqual(seen.pageErrors, []);
  assert.deepEqual(seen.console.filter((l) => /Content Security Policy/i.test(l)), [], 'CSP violations');
  const lines = requestLines(logs.serve);
  assert.ok(lines.some((l) => l.route === '/api/chat/tools' && l.method === 'POST' && l.tool === 'search_site'));
  assert.deepEqual(
    lines.filter((l) => l.status === 429 || l.status >= 500),
    [],
  );
});
