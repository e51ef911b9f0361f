// What the end-to-end tests do in a tab and check of it: a fresh tab of its own, the
// page the tab showed when it answered a tool call, the relay's hidden UI, the contact
// form the visitor's MCP client prefills, focus inside the widget, a hostile page
// stylesheet, axe-core.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';

import { DESKTOP, resultText } from './harness.js';

/**
 * inFreshTab opens url in a tab of a new browser context (desktop-sized unless options
 * say otherwise), waits for the chat's launcher, and gives fn the tab; the context is
 * closed after.
 */
export async function inFreshTab(browser, url, fn, options = {}) {
  const ctx = await browser.newContext({ viewport: DESKTOP, ...options });
  try {
    const tab = await ctx.newPage();
    await tab.goto(url);
    await tab.waitForSelector('#sitetools-chat-launcher', { state: 'visible' });
    return await fn(tab);
  } finally {
    await ctx.close();
  }
}

/**
 * recordAnswers makes the tab note, whenever it sends a tool's answer to the relay, the
 * page it shows at that moment: its path and the main heading (see answeredOn). What an
 * answer says is on screen is checked at the moment it is said, in the page itself:
 * Playwright's page.url() hears of a client-side navigation by an event of its own,
 * which may come after the answer.
 */
export function recordAnswers(page) {
  return page.evaluate(() => {
    if (window.__answers) return;
    window.__answers = [];
    const send = WebSocket.prototype.send;
    WebSocket.prototype.send = function (data) {
      if (typeof data === 'string' && data.includes('"type":"toolResponse"')) {
        window.__answers.push({ path: location.pathname, h1: document.querySelector('main h1')?.textContent.trim() ?? '' });
      }
      return send.call(this, data);
    };
  });
}

/** answeredOn is the page the tab showed when it sent its last answer to the relay. */
export function answeredOn(page) {
  return page.evaluate(() => window.__answers?.at(-1) ?? null);
}

/** showsPath waits for Playwright to hear that the tab shows path (the event, not a poll). */
export function showsPath(page, path) {
  return page.waitForURL((u) => u.pathname === path);
}

/**
 * relayUI is what the tab renders of the relay's own widget, which the bridge runs
 * headless: whether its element is in the document, and the element and those of its
 * descendants that have a box or are visible.
 */
export function relayUI(page) {
  return page.evaluate(() => {
    const el = document.querySelector('[data-webmcp-widget]');
    const rendered = el
      ? [el, ...el.querySelectorAll('*')]
          .filter((n) => n.getClientRects().length > 0 || n.checkVisibility({ opacityProperty: true, visibilityProperty: true }))
          .map((n) => `${n.tagName.toLowerCase()}.${n.className || ''} ${n.textContent.trim().slice(0, 30)}`)
      : [];
    return { present: !!el, rendered };
  });
}

const TYPED_NAME = 'Typed By The Visitor';
const PREFILL = {
  name: 'Name The Client Guessed',
  email: 'visitor@example.org',
  message: 'We would like an accessibility audit of our booking flow.',
};

/**
 * checkPrefill has the run's MCP client open /contact in the tab, types a name into the
 * contact form as the visitor would, then has the client call prefill_contact_form: it
 * must fill the empty fields, keep the typed name and submit nothing. It returns the
 * requests the tab made during the prefill.
 */
export async function checkPrefill(run, page) {
  const field = (name) => `form[data-contact-form] [name="${name}"]`;
  const { requests } = run.seen;
  const opened = await run.callTool('open_page', { url: '/contact' });
  assert.equal(opened.isError, false, resultText(opened));
  // Shown when the tab answered: the form is there at once.
  assert.equal(await page.locator('form[data-contact-form]').count(), 1);
  await showsPath(page, '/contact');
  await page.fill(field('name'), TYPED_NAME);
  await page.evaluate(() => {
    window.__submits = 0;
    document.addEventListener('submit', () => window.__submits++, true);
  });
  const before = requests.length;
  const r = await run.callTool('prefill_contact_form', PREFILL);
  assert.equal(r.isError, false, resultText(r));
  assert.deepEqual(r.structuredContent.filled, ['email', 'message']);
  assert.deepEqual(r.structuredContent.kept, ['name']);
  assert.equal(r.structuredContent.submitted, false);
  for (const [name, want] of Object.entries({ ...PREFILL, name: TYPED_NAME })) {
    assert.equal(await page.inputValue(field(name)), want, name);
  }
  assert.equal(await page.evaluate(() => window.__submits), 0);
  return requests.slice(before);
}

/** deepFocus is the id of the focused element, inside shadow roots too. */
export function deepFocus(page) {
  return page.evaluate(() => {
    let a = document.activeElement;
    while (a?.shadowRoot?.activeElement) a = a.shadowRoot.activeElement;
    return a?.id ?? '';
  });
}

/**
 * addHostileSheet links /test/hostile.css in p and adds, through the CSSOM, rules that
 * undo every way of hiding an element a page stylesheet can undo, aimed at the relay's
 * widget too; it resolves once the sheet applies.
 */
export function addHostileSheet(p) {
  return p.evaluate(
    () =>
      new Promise((resolve, reject) => {
        const link = document.createElement('link');
        link.rel = 'stylesheet';
        link.href = '/test/hostile.css';
        link.id = 'hostile';
        link.onload = () => {
          const unhide = 'display: block !important; visibility: visible !important; opacity: 1 !important; content-visibility: visible !important';
          for (const sel of ['[data-webmcp-widget], [data-webmcp-widget] *', '[inert], [aria-hidden="true"], [style*="none"]', 'body > :not(sitetools-chat, script, style, link, template)']) {
            link.sheet.insertRule(`${sel} { ${unhide} }`, link.sheet.cssRules.length);
          }
          resolve();
        };
        link.onerror = () => reject(new Error('hostile.css did not load'));
        document.head.appendChild(link);
      }),
  );
}

// ---------------------------------------------------------------------------------------
// axe-core

const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * axeViolations runs axe-core in the page (through the DevTools protocol, which the
 * page's CSP does not govern) and returns its serious and critical violations.
 */
export async function axeViolations(page, include) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(async (sel) => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(sel ? { include: [sel] } : document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) }));
  }, include ?? null);
  return result.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
