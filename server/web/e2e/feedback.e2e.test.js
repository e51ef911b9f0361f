// Feedback on answers, end to end: the demo as `make demo` runs it (no model, so every
// answer is retrieval-only) on the real `sitetools serve` on PostgreSQL, in real
// Chromium under the pages' CSP. A visitor rates answers with the keyboard alone: a thumb
// up is sent at once, a thumb down with the reason they pick, or without one when they
// ask on, or leave the page, before picking; one request per answer, 204 each, counted in
// the admin report; the ratings survive a reload; one that did not arrive can be given
// again. axe-core finds nothing serious with the controls and the reasons open, in English
// and German, at 1280 and 390 px.
// E2E_SCREENSHOTS=dir keeps the screenshots there (default: server/web/e2e, not committed).
//
//   cd server/web && TEST_DATABASE_URL=… SITETOOLS_BIN=…/bin/sitetools node --test e2e/feedback.e2e.test.js
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { DEMO_SITE, DESKTOP, Run, freePort, repo, requestLines, until, webDir } from './harness.js';
import { axeViolations } from './steps.js';

const SHOTS = process.env.E2E_SCREENSHOTS || path.join(webDir, 'e2e');
const ADMIN_TOKEN = 'e2e-admin-token-feedback-0123';
const PHONE = { width: 390, height: 844 };

const run = new Run({ requests: [], console: [], pageErrors: [] });
const { logs, seen } = run;
let site;
let adminPort;
let page;

before(
  async () => {
    run.begin('feedback-e2e');
    const port = await freePort();
    site = `http://127.0.0.1:${port}`;
    adminPort = await freePort();
    await run.startSitetools({
      port,
      site,
      database: 'sitetools_feedback_e2e',
      env: {
        SITE_PAGES_DIR: DEMO_SITE,
        CHAT_PERSONA_FILE: path.join(repo, 'deploy/demo/persona.md'),
        SEARCH_SYNONYMS_FILE: path.join(repo, 'deploy/demo/synonyms.txt'),
        RATE_LIMIT_PER_MINUTE: '0',
        ADMIN_LISTEN_ADDR: `127.0.0.1:${adminPort}`,
        ADMIN_TOKEN,
      },
    });
    page = await run.openTab();
  },
  { timeout: 180000 },
);

after(() => run.stop());

// ---------------------------------------------------------------------------------------
// Helpers

/** inWidget runs fn(shadowRoot, arg) in the page. */
const inWidget = (tab, fn, arg) =>
  tab.evaluate(([src, a]) => new Function('root', 'arg', `return (${src})(root, arg)`)(document.querySelector('sitetools-chat').shadowRoot, a), [fn.toString(), arg]);

const transcript = (tab) => tab.evaluate(() => JSON.parse(localStorage.getItem('sitetools.chat.transcript') ?? 'null'));

const isFeedback = (r) => r.method === 'POST' && r.url === `${site}/api/feedback`;
const feedbackSent = (from = 0) => seen.requests.slice(from).filter(isFeedback).map((r) => JSON.parse(r.body));

/** openChat shows url with the flyout open and the notice accepted. */
async function openChat(tab, url) {
  await tab.goto(url);
  await tab.waitForSelector('#sitetools-chat-launcher', { state: 'attached' });
  if (await tab.isHidden('#sitetools-chat-panel')) await tab.click('#sitetools-chat-launcher');
  await tab.waitForSelector('#sitetools-chat-panel', { state: 'visible' });
  if (await tab.isVisible('#sitetools-chat-consent-accept')) await tab.click('#sitetools-chat-consent-accept');
  await tab.waitForSelector('#sitetools-chat-input', { state: 'visible' });
}

/**
 * ask sends question from the chat's input with Enter and waits for the answer and its
 * feedback controls; the answer's stored id and kind, and the request that asked.
 */
async function ask(tab, question) {
  const before = await inWidget(tab, (root) => root.querySelectorAll('.feedback').length);
  const answered = tab.waitForResponse((res) => res.url() === `${site}/api/chat`, { timeout: 20000 });
  await tab.fill('#sitetools-chat-input', question);
  await tab.press('#sitetools-chat-input', 'Enter');
  const res = await answered;
  assert.equal(res.status(), 200);
  await until('the answer and its feedback controls', () =>
    inWidget(tab, (root, n) => !root.querySelector('#sitetools-chat-log[aria-busy]') && root.querySelectorAll('.feedback').length > n, before),
  );
  const last = (await transcript(tab)).messages.at(-1);
  assert.equal(last.role, 'assistant');
  return { answerId: last.answerId, kind: last.kind, request: JSON.parse(res.request().postData()) };
}

/** focused is what has focus, inside the widget's shadow root too. */
function focused(tab) {
  return tab.evaluate(() => {
    let a = document.activeElement;
    while (a?.shadowRoot?.activeElement) a = a.shadowRoot.activeElement;
    return {
      id: a?.id ?? '',
      fb: a?.dataset?.fb ?? '',
      reason: a?.dataset?.fbReason ?? null,
      answer: a?.closest?.('.feedback')?.dataset.answer ?? '',
      focusVisible: !!a?.matches?.(':focus-visible'),
      outline: a ? getComputedStyle(a).outlineStyle : '',
    };
  });
}

/** controls is the state of the feedback controls of the answer with id answerId. */
function controls(tab, answerId) {
  return inWidget(
    tab,
    (root, id) => {
      const box = [...root.querySelectorAll('.feedback')].find((b) => b.dataset.answer === id);
      if (!box) return null;
      const attrs = (b) => ({ pressed: b.getAttribute('aria-pressed'), disabled: b.getAttribute('aria-disabled') === 'true', label: b.getAttribute('aria-label') });
      return {
        up: attrs(box.querySelector('[data-fb="up"]')),
        down: { ...attrs(box.querySelector('[data-fb="down"]')), expanded: box.querySelector('[data-fb="down"]').getAttribute('aria-expanded') },
        reasonsOpen: !box.querySelector('.fb-reasons').hidden,
        reasons: [...box.querySelectorAll('.fb-reasons button')].map((b) => b.textContent),
        note: box.querySelector('.fb-note').textContent,
      };
    },
    answerId,
  );
}

const status = (tab) => tab.textContent('#sitetools-chat-status');

/** feedbackResponse waits for the answer to the tab's next POST /api/feedback. */
const feedbackResponse = (tab) => tab.waitForResponse((res) => res.url() === `${site}/api/feedback` && res.request().method() === 'POST', { timeout: 10000 });

const ID = /^[A-Za-z0-9._-]{1,128}$/;

// ---------------------------------------------------------------------------------------
// The tests, in order: they share one tab.

let first;
let second;
let third;
let fourth;

test('a thumb up with the keyboard: one request, 204, pressed and no longer actionable, thanks said', async () => {
  await openChat(page, `${site}/`);
  first = await ask(page, 'Do you do accessibility audits?');
  assert.match(first.answerId, ID);
  assert.equal(first.kind, 'retrieval');
  assert.deepEqual(await controls(page, first.answerId), {
    up: { pressed: 'false', disabled: false, label: 'Helpful' },
    down: { pressed: 'false', disabled: false, label: 'Not helpful', expanded: 'false' },
    reasonsOpen: false,
    reasons: ['Wrong', 'Out of date', 'Didn’t answer', 'Other', 'Send without reason'],
    note: '',
  });

  // From the question's field, back into the answer: thumb down, then thumb up.
  assert.equal((await focused(page)).id, 'sitetools-chat-input');
  await page.keyboard.press('Shift+Tab');
  assert.deepEqual([(await focused(page)).fb, (await focused(page)).answer], ['down', first.answerId]);
  await page.keyboard.press('Shift+Tab');
  const f = await focused(page);
  assert.deepEqual([f.fb, f.answer], ['up', first.answerId]);
  assert.ok(f.focusVisible && f.outline !== 'none', `no visible focus: ${JSON.stringify(f)}`);

  const from = seen.requests.length;
  const res = feedbackResponse(page);
  await page.keyboard.press('Enter');
  assert.equal((await res).status(), 204);
  assert.deepEqual(feedbackSent(from), [{ answerId: first.answerId, kind: 'retrieval', rating: 'up' }]);
  await until('thanks', async () => (await status(page)) === 'Thanks for your feedback.');
  assert.deepEqual(await controls(page, first.answerId), {
    up: { pressed: 'true', disabled: true, label: 'Helpful' },
    down: { pressed: 'false', disabled: true, label: 'Not helpful', expanded: 'false' },
    reasonsOpen: false,
    reasons: ['Wrong', 'Out of date', 'Didn’t answer', 'Other', 'Send without reason'],
    note: 'Thanks for your feedback.',
  });
  // Focus stays; pressing again, or the other thumb, sends nothing.
  assert.equal((await focused(page)).fb, 'up');
  await page.keyboard.press('Enter');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Space');
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(feedbackSent(from).length, 1);
  const stored = (await transcript(page)).messages.find((m) => m.answerId === first.answerId);
  assert.deepEqual([stored.kind, stored.rating, stored.reason], ['retrieval', 'up', undefined]);
});

test('a thumb down with the keyboard opens the reasons; the chosen one is sent with it, once', async () => {
  second = await ask(page, 'What does an accessibility audit cost?');
  assert.notEqual(second.answerId, first.answerId);
  const from = seen.requests.length;
  await page.keyboard.press('Shift+Tab');
  assert.deepEqual([(await focused(page)).fb, (await focused(page)).answer], ['down', second.answerId]);
  await page.keyboard.press('Space');
  const open = await controls(page, second.answerId);
  assert.deepEqual([open.down.pressed, open.down.expanded, open.down.disabled, open.reasonsOpen], ['true', 'true', false, true]);
  // The reasons are a group named by their question.
  const group = await inWidget(
    page,
    (root, id) => {
      const g = [...root.querySelectorAll('.feedback')].find((b) => b.dataset.answer === id).querySelector('.fb-reasons');
      return { role: g.getAttribute('role'), name: root.getElementById(g.getAttribute('aria-labelledby'))?.textContent };
    },
    second.answerId,
  );
  assert.deepEqual(group, { role: 'group', name: 'What was wrong? (optional)' });
  assert.deepEqual(feedbackSent(from), [], 'sent before a reason was chosen');

  await page.keyboard.press('Tab');
  assert.equal((await focused(page)).reason, 'wrong');
  await page.keyboard.press('Tab');
  assert.equal((await focused(page)).reason, 'outdated');
  const res = feedbackResponse(page);
  await page.keyboard.press('Enter');
  assert.equal((await res).status(), 204);
  assert.deepEqual(feedbackSent(from), [{ answerId: second.answerId, kind: 'retrieval', rating: 'down', reason: 'outdated' }]);
  // The reasons close; focus goes back to the thumb.
  const f = await focused(page);
  assert.deepEqual([f.fb, f.answer], ['down', second.answerId]);
  const done = await controls(page, second.answerId);
  assert.deepEqual([done.down.pressed, done.down.disabled, done.up.pressed, done.up.disabled, done.reasonsOpen], ['true', true, 'false', true, false]);
  await until('thanks', async () => (await status(page)) === 'Thanks for your feedback.');
  const stored = (await transcript(page)).messages.find((m) => m.answerId === second.answerId);
  assert.deepEqual([stored.rating, stored.reason], ['down', 'outdated']);
});

test('a thumb down left without a reason is sent without one with the next question, which sends role and content only', async () => {
  third = await ask(page, 'Who is on the team?');
  const from = seen.requests.length;
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Enter');
  assert.equal((await controls(page, third.answerId)).reasonsOpen, true);
  assert.deepEqual(feedbackSent(from), []);

  // The visitor asks on instead of picking a reason.
  await page.focus('#sitetools-chat-input');
  const res = feedbackResponse(page);
  fourth = await ask(page, 'Do you have free appointment slots next week?');
  assert.equal((await res).status(), 204);
  assert.deepEqual(feedbackSent(from), [{ answerId: third.answerId, kind: 'retrieval', rating: 'down' }]);
  // Sent before the question went.
  const order = seen.requests.slice(from).filter((r) => r.method === 'POST').map((r) => new URL(r.url).pathname);
  assert.deepEqual(order, ['/api/feedback', '/api/chat']);
  const c = await controls(page, third.answerId);
  assert.deepEqual([c.down.pressed, c.down.disabled, c.reasonsOpen], ['true', true, false]);

  // The conversation sent with the question holds no id or rating: role and content only.
  const sentMessages = fourth.request.messages;
  assert.equal(sentMessages.length, 7);
  for (const m of sentMessages) assert.deepEqual(Object.keys(m), ['role', 'content'], JSON.stringify(m));
  assert.ok(!JSON.stringify(fourth.request).includes(first.answerId));
});

test('after a reload every answer shows its rating, the unrated one can still be rated, nothing is sent again', async () => {
  const from = seen.requests.length;
  await page.reload();
  await page.waitForSelector('#sitetools-chat-panel', { state: 'visible' });
  await until('the answers', () => inWidget(page, (root) => root.querySelectorAll('.feedback').length === 4));
  const states = {};
  for (const a of [first, second, third, fourth]) {
    const c = await controls(page, a.answerId);
    states[a.answerId] = [c.up.pressed, c.down.pressed, c.up.disabled && c.down.disabled, c.reasonsOpen];
  }
  assert.deepEqual(states, {
    [first.answerId]: ['true', 'false', true, false],
    [second.answerId]: ['false', 'true', true, false],
    [third.answerId]: ['false', 'true', true, false],
    [fourth.answerId]: ['false', 'false', false, false],
  });
  assert.deepEqual(feedbackSent(from), []);
});

test('a thumb down waiting for its reason is sent when the visitor leaves the page', async () => {
  const from = seen.requests.length;
  const linesFrom = logs.serve.length;
  await page.locator('.feedback').nth(3).locator('[data-fb="down"]').focus();
  await page.keyboard.press('Enter');
  assert.equal((await controls(page, fourth.answerId)).reasonsOpen, true);
  assert.deepEqual(feedbackSent(from), []);
  // A page load: pagehide. (Playwright does not report a request of the page it unloads:
  // the server's log shows it, and the report below its count.)
  await page.goto(`${site}/pricing`);
  await until('the rating counted', () => requestLines(logs.serve.slice(linesFrom)).some((l) => l.route === '/api/feedback'));
  assert.deepEqual(
    requestLines(logs.serve.slice(linesFrom))
      .filter((l) => l.route === '/api/feedback')
      .map((l) => [l.method, l.status]),
    [['POST', 204]],
  );
  await page.waitForSelector('#sitetools-chat-panel', { state: 'visible' });
  const c = await controls(page, fourth.answerId);
  assert.deepEqual([c.down.pressed, c.down.disabled, c.note], ['true', true, 'Thanks for your feedback.']);
  const stored = (await transcript(page)).messages.find((m) => m.answerId === fourth.answerId);
  assert.deepEqual([stored.rating, stored.reason], ['down', undefined]);
});

test('the admin report counts the ratings by kind, with their reasons', async () => {
  const res = await fetch(`http://127.0.0.1:${adminPort}/admin/report?days=1`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
  assert.equal(res.status, 200);
  const report = await res.json();
  const rows = report.feedback.filter((r) => r.up || r.down);
  assert.deepEqual(
    rows.map((r) => [r.kind, r.up, r.down, r.reasons.outdated, r.reasons.none]),
    [['retrieval', 1, 3, 1, 2]],
    JSON.stringify(report.feedback),
  );
  assert.ok(rows[0].answers >= 4, JSON.stringify(rows[0]));
});

test('the tab kept to its CSP and made no page error; the server logged every rating as 204', () => {
  assert.deepEqual(seen.pageErrors, []);
  assert.deepEqual(seen.console.filter((l) => /Content Security Policy/i.test(l)), [], 'CSP violations');
  assert.deepEqual(seen.requests.filter((r) => new URL(r.url).origin !== site), [], 'requests to other origins');
  const ratings = requestLines(logs.serve).filter((l) => l.route === '/api/feedback');
  assert.deepEqual(
    ratings.map((l) => [l.method, l.status]),
    Array.from({ length: 4 }, () => ['POST', 204]),
  );
});

// ---------------------------------------------------------------------------------------
// Accessibility and layout, in a context of their own where axe may run (it adds a style
// element, which the pages' CSP refuses; the tests above hold the widget to the CSP).

test('axe-core finds no serious or critical violation with the feedback controls and the reasons open, in English and German, at 1280 and 390 px', async (t) => {
  fs.mkdirSync(SHOTS, { recursive: true });
  const shots = [];
  for (const [lang, url, question] of [
    ['en', `${site}/`, 'How much does a cloud cost review cost?'],
    ['de', `${site}/de/`, 'Was kostet ein Barrierefreiheits-Audit?'],
  ]) {
    for (const viewport of [DESKTOP, PHONE]) {
      const ctx = await run.browser.newContext({ viewport, bypassCSP: true });
      try {
        const tab = await ctx.newPage();
        await openChat(tab, url);
        const rated = await ask(tab, question);
        const open = await ask(tab, lang === 'de' ? 'Wie erreiche ich Sie am besten?' : 'Who is on the team?');
        await tab.locator('.feedback').nth(0).locator('[data-fb="up"]').click();
        await until('the first answer rated', async () => (await controls(tab, rated.answerId))?.up.disabled);
        await tab.locator('.feedback').nth(1).locator('[data-fb="down"]').click();
        const c = await controls(tab, open.answerId);
        assert.equal(c.reasonsOpen, true);
        if (lang === 'de') {
          assert.deepEqual([c.up.label, c.down.label], ['Hilfreich', 'Nicht hilfreich']);
          assert.deepEqual(c.reasons, ['Falsch', 'Veraltet', 'Frage nicht beantwortet', 'Sonstiges', 'Ohne Grund senden']);
          assert.equal((await controls(tab, rated.answerId)).note, 'Danke für Ihr Feedback.');
        }
        const where = `${lang} at ${viewport.width} px`;
        // Everything of the controls inside the flyout: nothing cut off or wider than it.
        const outside = await inWidget(tab, (root) => {
          const panel = root.querySelector('.panel').getBoundingClientRect();
          return [...root.querySelectorAll('.feedback button')]
            .filter((b) => b.getClientRects().length > 0)
            .filter((b) => {
              const r = b.getBoundingClientRect();
              return r.left < panel.left || r.right > panel.right;
            })
            .map((b) => b.textContent || b.getAttribute('aria-label'));
        });
        assert.deepEqual(outside, [], `controls outside the flyout, ${where}`);
        // The reasons in view, as the visitor sees them.
        await tab.locator('.feedback').nth(1).locator('.fb-reasons').scrollIntoViewIfNeeded();
        assert.deepEqual(await axeViolations(tab), [], `${where}, reasons open`);
        if ((lang === 'en' && viewport === DESKTOP) || (lang === 'de' && viewport === PHONE)) {
          const file = path.join(SHOTS, `feedback-${lang}-${viewport.width}.png`);
          await tab.screenshot({ path: file });
          shots.push(file);
        }
      } finally {
        await ctx.close();
      }
    }
  }
  for (const file of shots) t.diagnostic(`screenshot: ${file}`);
});

test('a rating that did not arrive breaks nothing: the visitor is told quietly and can rate again', async () => {
  const ctx = await run.browser.newContext({ viewport: DESKTOP });
  try {
    const tab = await ctx.newPage();
    const errors = [];
    tab.on('pageerror', (e) => errors.push(String(e)));
    await openChat(tab, `${site}/`);
    const a = await ask(tab, 'Do you review cloud costs?');
    // The network fails once.
    let aborted = 0;
    await tab.route(`${site}/api/feedback`, (route) => {
      aborted++;
      return route.abort('internetdisconnected');
    });
    const thumb = tab.locator('.feedback').last().locator('[data-fb="up"]');
    await thumb.click();
    await until('the quiet note', async () => (await controls(tab, a.answerId)).note === 'Not sent; try again in a moment.');
    const c = await controls(tab, a.answerId);
    assert.deepEqual([c.up.pressed, c.up.disabled, c.down.disabled], ['false', false, false]);
    assert.equal((await transcript(tab)).messages.at(-1).rating, undefined);
    assert.equal(await tab.locator('.msg-error').count(), 0);
    assert.equal(aborted, 1);
    // Back online: the same click is sent, once.
    await tab.unroute(`${site}/api/feedback`);
    const res = feedbackResponse(tab);
    await thumb.click();
    assert.equal((await res).status(), 204);
    await until('thanks', async () => (await controls(tab, a.answerId)).note === 'Thanks for your feedback.');
    assert.equal((await transcript(tab)).messages.at(-1).rating, 'up');
    // The chat goes on.
    await ask(tab, 'Who leads accessibility audits?');
    assert.deepEqual(errors, []);
  } finally {
    await ctx.close();
  }
});
