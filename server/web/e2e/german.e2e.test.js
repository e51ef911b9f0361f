// What a German visitor sees: the demo as `make demo` runs it (the built-in local
// embedder, the demo's synonyms, no model, so every answer is retrieval-only) on the real
// `sitetools serve` on PostgreSQL, in real Chromium. The flyout's header stays on one line
// in both languages down to 360 px, and the German question about the audit's price gets
// a German frame, the pricing page among the first three and no relay guide.
// SCREENSHOTS=dir keeps screenshots of the answer at 1280 and 390 px there.
//
//   cd server/web && TEST_DATABASE_URL=… SITETOOLS_BIN=…/bin/sitetools node --test e2e/german.e2e.test.js
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { DEMO_SITE, DESKTOP, Run, freePort, repo, until } from './harness.js';

const run = new Run({ console: [], pageErrors: [] });
let site;
let browser;

before(
  async () => {
    run.begin('german-e2e');
    const port = await freePort();
    site = `http://127.0.0.1:${port}`;
    await run.startSitetools({
      port,
      site,
      database: 'sitetools_german_e2e',
      env: {
        SITE_PAGES_DIR: DEMO_SITE,
        CHAT_PERSONA_FILE: path.join(repo, 'deploy/demo/persona.md'),
        SEARCH_SYNONYMS_FILE: path.join(repo, 'deploy/demo/synonyms.txt'),
        RATE_LIMIT_PER_MINUTE: '0',
      },
    });
    browser = (await run.openTab()).context().browser();
  },
  { timeout: 180000 },
);

after(() => run.stop());

/** inWidget runs fn(shadowRoot) in the page. */
const inWidget = (tab, fn, arg) => tab.evaluate(([src, a]) => new Function('root', 'arg', `return (${src})(root, arg)`)(document.querySelector('sitetools-chat').shadowRoot, a), [fn.toString(), arg]);

/**
 * headerLayout measures the open flyout's header: the rows its items sit on (items whose
 * boxes overlap vertically share one), and whether the title shows its whole text.
 */
function headerLayout(tab) {
  return inWidget(tab, (root) => {
    const bar = root.querySelector('.toolbar');
    const items = [...bar.children].filter((el) => !el.hidden && el.getClientRects().length);
    const rows = [];
    for (const el of items) {
      const r = el.getBoundingClientRect();
      const row = rows.find((x) => r.top < x.bottom && r.bottom > x.top);
      if (row) row.ids.push(el.id || el.className);
      else rows.push({ top: r.top, bottom: r.bottom, ids: [el.id || el.className] });
    }
    const title = root.querySelector('#sitetools-chat-title');
    const close = root.querySelector('#sitetools-chat-close').getBoundingClientRect();
    const panel = root.querySelector('.panel').getBoundingClientRect();
    return {
      rows: rows.map((x) => x.ids),
      titleText: title.textContent,
      titleWhole: title.scrollWidth <= title.clientWidth,
      titleWidth: title.getBoundingClientRect().width,
      closeInside: close.right <= panel.right && close.left >= panel.left,
    };
  });
}

async function openFlyout(tab, url, width) {
  await tab.setViewportSize({ width, height: 800 });
  await tab.goto(url);
  await until('the widget', () => inWidget(tab, (root) => !!root.querySelector('#sitetools-chat-panel')));
  // The flyout stays open from page to page.
  if (await tab.isHidden('#sitetools-chat-panel')) await tab.click('#sitetools-chat-launcher');
  await tab.waitForSelector('#sitetools-chat-panel', { state: 'visible' });
}

test("the flyout's header stays on one line in English and German, 1280 px down to 360 px", async () => {
  const ctx = await browser.newContext({ viewport: DESKTOP });
  try {
    const tab = await ctx.newPage();
    for (const [url, title] of [
      [`${site}/`, 'Ask this site'],
      [`${site}/de/`, 'Diese Website fragen'],
    ]) {
      for (const width of [1280, 390, 360]) {
        await openFlyout(tab, url, width);
        const layout = await headerLayout(tab);
        const where = `${url} at ${width} px: ${JSON.stringify(layout)}`;
        if (process.env.SCREENSHOTS) await tab.screenshot({ path: path.join(process.env.SCREENSHOTS, `header-${url.endsWith('/de/') ? 'de' : 'en'}-${width}.png`) });
        assert.equal(layout.rows.length, 1, `the header wraps: ${where}`);
        assert.ok(layout.rows[0].includes('sitetools-chat-close') && layout.rows[0].includes('sitetools-chat-title'), where);
        assert.equal(layout.titleText.trim(), title, where);
        // A phone may cut the title with an ellipsis; a desktop shows all of it.
        if (width >= 1280) assert.ok(layout.titleWhole, `the title is cut: ${where}`);
        else assert.ok(layout.titleWidth >= 60, `the title has no room: ${where}`);
        assert.ok(layout.closeInside, `the close button sticks out: ${where}`);
      }
    }
  } finally {
    await ctx.close();
  }
});

test('a German question on /de/ gets a German answer frame, the price page in the first three, no relay guide', async () => {
  const ctx = await browser.newContext({ viewport: DESKTOP });
  try {
    const tab = await ctx.newPage();
    await openFlyout(tab, `${site}/de/`, DESKTOP.width);
    await tab.click('#sitetools-chat-consent-accept');
    const question = 'Was kostet ein Barrierefreiheits-Audit?';
    const answered = tab.waitForResponse((res) => res.url() === `${site}/api/chat`, { timeout: 20000 });
    await tab.fill('#sitetools-chat-input', question);
    await tab.press('#sitetools-chat-input', 'Enter');
    const res = await answered;
    assert.equal(res.status(), 200);
    assert.equal(res.headers()['content-language'], 'de');
    assert.equal(JSON.parse(res.request().postData()).lang, 'de');
    await until('the answer to be complete', () =>
      inWidget(tab, (root) => !root.querySelector('#sitetools-chat-log[aria-busy]') && root.querySelectorAll('.msg-assistant .sources a').length > 0),
    );
    const answer = await inWidget(tab, (root) => {
      const msg = [...root.querySelectorAll('.msg-assistant')].at(-1);
      const paths = (sel) => [...msg.querySelectorAll(sel)].map((a) => new URL(a.href).pathname);
      return {
        frame: msg.querySelector('.msg-text p')?.textContent ?? '',
        links: paths('.msg-text a'),
        sources: paths('.sources a'),
        who: msg.querySelector('.msg-who').textContent,
        sourcesLabel: msg.querySelector('.sources').getAttribute('aria-label'),
      };
    });
    assert.equal(answer.frame, 'Dies ist ein Suchergebnis, keine formulierte Antwort: die Seiten dieser Website, die am besten zu Ihrer Frage passen.');
    assert.equal(answer.who, 'Assistent');
    assert.equal(answer.sourcesLabel, 'Quellen');
    for (const guide of ['/try-it', '/de/try-it']) {
      assert.ok(!answer.links.includes(guide) && !answer.sources.includes(guide), `${guide} among the results: ${JSON.stringify(answer)}`);
    }
    assert.ok(answer.links.slice(0, 3).includes('/pricing'), `/pricing not in the first three: ${answer.links}`);
    assert.ok(answer.sources.includes('/pricing'), `/pricing not among the sources: ${answer.sources}`);
    if (process.env.SCREENSHOTS) await tab.screenshot({ path: path.join(process.env.SCREENSHOTS, 'de-answer-1280.png') });
    assert.deepEqual((await headerLayout(tab)).rows.length, 1);

    // A phone: the flyout is a sheet over the whole width, its header still one line.
    await tab.setViewportSize({ width: 390, height: 844 });
    await until('the sheet', async () => (await tab.evaluate(() => innerWidth)) === 390);
    if (process.env.SCREENSHOTS) await tab.screenshot({ path: path.join(process.env.SCREENSHOTS, 'de-answer-390.png') });
    assert.equal((await headerLayout(tab)).rows.length, 1);
    assert.deepEqual(run.seen.pageErrors, []);
  } finally {
    await ctx.close();
  }
});
