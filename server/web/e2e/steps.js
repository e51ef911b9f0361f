// What the end-to-end tests do in a tab and check of it: a fresh tab of its own, the
// contact form the visitor's MCP client prefills, focus inside the widget, axe-core.
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
  await page.waitForSelector('form[data-contact-form]');
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
