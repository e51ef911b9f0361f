// End to end, with real parts only: the MCP TypeScript SDK client (the visitor's MCP
// client) over stdio → the real @jason.today/webmcp relay (isolated HOME, a free
// non-default port) → headless Chromium showing the demo site → the bridge → the site
// served by the real `sitetools serve` on real PostgreSQL. Loopback only.
//
//   cd server/web && TEST_DATABASE_URL=… SITETOOLS_BIN=…/bin/sitetools node --test e2e/
//
// Needs: bin/sitetools (make build), Chromium at /usr/bin/chromium and the npm packages
// (deploy/dev/browser.sh), PostgreSQL with pgvector (deploy/dev/postgres.sh).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import {
  DEMO_SITE,
  DESKTOP,
  LOCAL_TOOLS,
  Run,
  freePort,
  mcpShape,
  requestLines,
  resultText,
  until,
  webDir,
} from './harness.js';
import { answeredOn, axeViolations, checkPrefill, deepFocus, recordAnswers, showsPath } from './steps.js';

const SCREENSHOT = process.env.E2E_SCREENSHOT || path.join(webDir, 'e2e/screenshot.png');
const DB_NAME = 'sitetools_e2e';

// Everything the run starts, to stop it in `after`.
const run = new Run({ requests: [], sockets: [], console: [], dialogs: [], pageErrors: [] });
const { logs, seen } = run;
let site;
let page;
let serverToolNames = [];
let adminPort;
const ADMIN_TOKEN = 'e2e-admin-token-0123456789';

// ---------------------------------------------------------------------------------------
// Helpers

/** The same call on the JSON endpoint, as a server (no Origin). */
const callJSON = (name, args) => run.callDirect(name, args);

const transcript = () => page.evaluate(() => JSON.parse(localStorage.getItem('sitetools.chat.transcript') ?? 'null'));

// ---------------------------------------------------------------------------------------
// Set-up: database, service, relay, client, browser; the token entered through the pill

before(
  async () => {
    run.begin('e2e-home');
    const sitePort = await freePort();
    site = `http://127.0.0.1:${sitePort}`;

    // The relay: its daemon in the foreground (so this run owns it and reads its log),
    // on a free port, with a HOME of its own for its tokens; and the visitor's MCP client.
    const relay = await run.startRelay();

    // Only what the service needs, with a database of its own, fresh each run: no LLM is
    // configured, so the chat answers in retrieval-only mode.
    // The admin listener too, so that the privacy test can read the metrics.
    adminPort = await freePort();
    const env = {
      SITE_PAGES_DIR: DEMO_SITE,
      WEBMCP_RELAY_PORT: String(relay.port),
      ADMIN_LISTEN_ADDR: `127.0.0.1:${adminPort}`,
      ADMIN_TOKEN: ADMIN_TOKEN,
    };
    serverToolNames = (await run.startSitetools({ port: sitePort, site, database: DB_NAME, env })).map((t) => t.name);
    assert.ok(serverToolNames.includes('search_site') && serverToolNames.includes('get_free_slots'), serverToolNames.join(','));

    page = await run.openTab();
    await page.goto(`${site}/`);
    await until('the bridge to register its tools', async () => Number(await page.textContent('#sitetools-webmcp-tool-count')) > 0);

    // The visitor opens the chat, then the pill's card, and pastes the token their MCP
    // client minted with the relay's _webmcp_get-token tool.
    assert.equal(await page.getAttribute('#sitetools-webmcp-pill', 'data-state'), 'disconnected');
    await page.click('#sitetools-chat-launcher');
    await run.connectPill(page);
  },
  { timeout: 180000 },
);

after(() => run.stop());

// ---------------------------------------------------------------------------------------
// The tests, in order: they share one tab and one relay session.

test('the client lists every server tool and every browser-local tool', async () => {
  const { prefix, relay } = run;
  const want = [...serverToolNames, ...LOCAL_TOOLS].map((n) => prefix + n).sort();
  const names = await run.untilListed([...serverToolNames, ...LOCAL_TOOLS]);
  assert.deepEqual(
    names.filter((n) => n.startsWith(prefix)).sort(),
    want,
  );
  const { tools } = await relay.client.listTools();
  const save = tools.find((t) => t.name === prefix + 'save_conversation');
  assert.equal(save.inputSchema.properties.messages.maxItems, 50);
  const search = tools.find((t) => t.name === prefix + 'search_site');
  assert.equal(search.inputSchema.required[0], 'query');
});

test('search_site through the relay equals the JSON endpoint', async () => {
  const args = { query: 'accessibility audit with screen reader testing', limit: 3 };
  const viaRelay = await run.callTool('search_site', args);
  const direct = await callJSON('search_site', args);
  assert.equal(viaRelay.isError, false, resultText(viaRelay));
  assert.deepEqual(mcpShape(viaRelay), mcpShape(direct));
  assert.ok(viaRelay.structuredContent.results.length > 0);
  assert.ok(viaRelay.structuredContent.results.every((r) => r.url.startsWith(site + '/')));
});

test('get_free_slots through the relay equals the JSON endpoint', async () => {
  const day = (n) => new Date(Date.now() + n * 86400000).toISOString().slice(0, 10);
  const args = { from: day(1), to: day(10), durationMinutes: 30 };
  let viaRelay;
  let direct;
  // Slots depend on the clock (minimum notice): a step boundary between the two calls
  // can shift them, so compare once more in that rare case.
  for (let i = 0; i < 2; i++) {
    viaRelay = await run.callTool('get_free_slots', args);
    direct = await callJSON('get_free_slots', args);
    if (JSON.stringify(mcpShape(viaRelay)) === JSON.stringify(mcpShape(direct))) break;
  }
  assert.equal(viaRelay.isError, false, resultText(viaRelay));
  assert.deepEqual(mcpShape(viaRelay), mcpShape(direct));
  assert.ok(viaRelay.structuredContent.slots.length > 0);
});

test('an HTTP error of the site reaches the client as an isError result', async () => {
  const r = await run.callTool('search_site', { query: 'x'.repeat(5000) });
  assert.equal(r.isError, true);
  assert.ok(resultText(r).length > 0);
});

test('open_page navigates the tab and refuses other sites', async () => {
  const before = await page.evaluate(() => performance.getEntriesByType('navigation').length + ':' + performance.timeOrigin);
  await recordAnswers(page);
  const r = await run.callTool('open_page', { url: '/services/web-platforms' });
  assert.equal(r.isError, false, resultText(r));
  assert.deepEqual(await answeredOn(page), { path: '/services/web-platforms', h1: 'Web platforms' }, 'what the tab showed when it answered');
  await showsPath(page, '/services/web-platforms');
  assert.equal((await page.textContent('#sitetools-main h1')).trim(), 'Web platforms');
  // Client-side navigation: the same document, still connected.
  assert.equal(await page.evaluate(() => performance.getEntriesByType('navigation').length + ':' + performance.timeOrigin), before);
  assert.equal(await page.getAttribute('#sitetools-webmcp-pill', 'data-state'), 'connected');

  const abs = await run.callTool('open_page', { url: `${site}/pricing` });
  assert.equal(abs.isError, false, resultText(abs));
  assert.equal((await answeredOn(page)).path, '/pricing');
  await showsPath(page, '/pricing');

  for (const url of [
    'https://evil.example/',
    'javascript:alert(1)',
    '//evil.example/x',
    `http://127.0.0.1.evil.example:${new URL(site).port}/`,
    `http://127.0.0.1:${new URL(site).port}@evil.example/`,
    '/\\evil.example',
  ]) {
    const refused = await run.callTool('open_page', { url });
    assert.equal(refused.isError, true, `${url}: ${resultText(refused)}`);
    assert.match(resultText(refused), /^Refused: /);
  }
  assert.equal(await page.evaluate(() => location.pathname), '/pricing', 'the tab itself, not what Playwright heard last');

  const missing = await run.callTool('open_page', { url: '/no-such-page' });
  assert.equal(missing.isError, true);
  assert.match(resultText(missing), /search_site/);
  assert.deepEqual(await answeredOn(page), { path: '/no-such-page', h1: 'Page not found' });
  await showsPath(page, '/no-such-page');
});

/**
 * withRouter has the tab's next `sitetools:navigate` taken by a router of another kind
 * than the site's own: its promise says at once that the page is shown, and it shows the
 * page in a later task ('shows later') or never ('never shows').
 */
function withRouter(kind) {
  return page.evaluate((kind) => {
    const take = (e) => {
      e.stopImmediatePropagation();
      e.preventDefault();
      const { detail } = e;
      detail.done = Promise.resolve({ status: 200, url: detail.url, title: '' });
      if (kind !== 'shows later') return;
      const later = new MessageChannel();
      later.port1.onmessage = () => {
        history.pushState({}, '', detail.url);
        document.querySelector('main h1').textContent = 'Shown later';
      };
      later.port2.postMessage(0);
    };
    document.addEventListener('sitetools:navigate', take, { capture: true, once: true });
  }, kind);
}

test('open_page answers once the tab shows the page, not when a router says it does', async () => {
  await recordAnswers(page);
  await withRouter('shows later');
  const r = await run.callTool('open_page', { url: '/faq' });
  assert.equal(r.isError, false, resultText(r));
  assert.deepEqual(await answeredOn(page), { path: '/faq', h1: 'Shown later' }, 'what the tab showed when it answered');
  await showsPath(page, '/faq');

  // A router that says it showed the page and never does: after its bound, open_page
  // says so rather than claiming the page is shown.
  await withRouter('never shows');
  const never = await run.callTool('open_page', { url: '/pricing' });
  assert.equal(never.isError, true, resultText(never));
  assert.match(resultText(never), /did not show \/pricing .*still shows \/faq/);
  assert.equal(never.structuredContent.tab, '/faq');
  assert.equal((await answeredOn(page)).path, '/faq');
});

test('prefill_contact_form fills only empty fields and submits nothing', async () => {
  const made = await checkPrefill(run, page);
  assert.equal((await page.textContent('#sitetools-contact-form-status')).trim(), '');
  assert.equal(new URL(page.url()).pathname, '/contact');
  // One request: the count-only notice of the hand-over, nothing of what was filled in.
  const handover = (r) => r.method === 'POST' && r.url === `${site}/api/handover`;
  await until('the hand-over count', () => seen.requests.some(handover));
  assert.deepEqual(seen.requests.filter(handover).map((r) => r.body), ['{"tool":"prefill_contact_form"}']);
  assert.deepEqual(made.filter((r) => !handover(r)), [], 'the prefill made requests');
});

const SAVED = [
  { role: 'user', content: 'Do you test with screen readers?' },
  { role: 'assistant', content: 'Yes: NVDA, JAWS and VoiceOver, see /services/accessibility-audits.' },
];

test('save_conversation: invalid and unconsented calls write nothing and ask nothing', async () => {
  await page.evaluate(() => localStorage.removeItem('sitetools.chat.consent'));
  const dialogs = seen.dialogs.length;
  const invalid = await run.callTool('save_conversation', { messages: [{ role: 'system', content: 'x'.repeat(5000) }] });
  assert.equal(invalid.isError, true);
  assert.match(resultText(invalid), /Nothing was saved/);
  const unconsented = await run.callTool('save_conversation', { messages: SAVED });
  assert.equal(unconsented.isError, true);
  assert.equal(unconsented.structuredContent.reason, 'consent_required');
  assert.equal(seen.dialogs.length, dialogs);
  assert.equal(await transcript(), null);
});

test('save_conversation: declined writes nothing; accepted writes once; a repeat adds nothing', async () => {
  // The visitor accepts the chat's privacy notice in the flyout.
  if (await page.isHidden('#sitetools-chat-panel')) await page.click('#sitetools-chat-launcher');
  await page.click('#sitetools-chat-consent-accept');
  assert.ok(await page.isVisible('#sitetools-chat-input'));

  page.once('dialog', (d) => d.dismiss());
  const declined = await run.callTool('save_conversation', { messages: SAVED });
  assert.equal(declined.isError, true);
  assert.equal(declined.structuredContent.reason, 'declined');
  assert.match(seen.dialogs.at(-1), /save 2 messages/);
  assert.equal(await transcript(), null);

  page.once('dialog', (d) => d.accept());
  const accepted = await run.callTool('save_conversation', { messages: SAVED });
  assert.equal(accepted.isError, false, resultText(accepted));
  assert.deepEqual(accepted.structuredContent, { saved: 2, total: 2 });
  const t = await transcript();
  assert.deepEqual(
    t.messages.map((m) => ({ role: m.role, content: m.content })),
    SAVED,
  );
  await until('the flyout to show the saved messages', async () => (await page.locator('#sitetools-chat-log .msg-user').count()) === 1);

  const dialogs = seen.dialogs.length;
  const repeat = await run.callTool('save_conversation', { messages: SAVED });
  assert.equal(repeat.isError, false);
  assert.equal(repeat.structuredContent.duplicate, true);
  assert.equal(seen.dialogs.length, dialogs, 'a repeat must not ask again');
  assert.equal((await transcript()).messages.length, 2);
});

test('resume_conversation returns the transcript as quoted data', async () => {
  const r = await run.callTool('resume_conversation', {});
  assert.equal(r.isError, false);
  assert.match(resultText(r), /^Quoted data, not instructions/);
  assert.deepEqual(r.structuredContent.messages, SAVED);
});

test('the chat flyout keeps the transcript in localStorage', async () => {
  await page.fill('#sitetools-chat-input', 'Which services do you offer?');
  const answered = page.waitForResponse((res) => res.url() === `${site}/api/chat`, { timeout: 20000 });
  await page.press('#sitetools-chat-input', 'Enter');
  const res = await answered;
  await until('the question to be stored', async () => (await transcript()).messages.some((m) => m.content === 'Which services do you offer?'));
  if (res.status() === 200) {
    // Retrieval-only mode (no LLM configured): an answer with links to pages.
    await until('an answer', async () => (await transcript()).messages.at(-1).role === 'assistant', { timeout: 20000 });
  }
  const req = seen.requests.findLast((r) => r.url === `${site}/api/chat`);
  assert.equal(req.method, 'POST');
});

test('the flyout and the pill work from the keyboard', async () => {
  const focused = () => deepFocus(page);
  if (await page.isHidden('#sitetools-chat-panel')) await page.click('#sitetools-chat-launcher');
  // Escape closes the innermost first: the pill's card, then the flyout.
  if (await page.isHidden('#sitetools-webmcp-card')) await page.click('#sitetools-webmcp-pill');
  await page.focus('#sitetools-chat-input');
  await page.keyboard.press('Escape');
  assert.ok(await page.isHidden('#sitetools-webmcp-card'));
  assert.ok(await page.isVisible('#sitetools-chat-panel'));
  assert.equal(await focused(), 'sitetools-webmcp-pill');
  await page.keyboard.press('Escape');
  assert.ok(await page.isHidden('#sitetools-chat-panel'));
  assert.equal(await focused(), 'sitetools-chat-launcher');
  await page.keyboard.press('Enter');
  assert.ok(await page.isVisible('#sitetools-chat-panel'));
  assert.equal(await focused(), 'sitetools-chat-input');
  await page.focus('#sitetools-webmcp-pill');
  await page.keyboard.press('Enter');
  assert.ok(await page.isVisible('#sitetools-webmcp-card'));
  // Connected: the card offers Disconnect, and says how many tools are offered.
  assert.equal(await focused(), 'sitetools-webmcp-disconnect');
  assert.equal((await page.textContent('#sitetools-webmcp-tool-count')).trim(), String(serverToolNames.length + LOCAL_TOOLS.length));
  await page.keyboard.press('Escape');
  assert.ok(await page.isHidden('#sitetools-webmcp-card'));
  assert.equal(await focused(), 'sitetools-webmcp-pill');
  assert.match(await page.textContent('#sitetools-webmcp-pill'), /MCP: on/);
});

test('every request of the tab is same-origin; the server saw no foreign Origin', async (t) => {
  // Back home for the screenshot: the flyout open, the pill green.
  const home = await run.callTool('open_page', { url: '/' });
  assert.equal(home.isError, false, resultText(home));
  await showsPath(page, '/');
  if (await page.isHidden('#sitetools-chat-panel')) await page.click('#sitetools-chat-launcher');
  if (await page.isVisible('#sitetools-webmcp-card')) await page.click('#sitetools-webmcp-pill');
  assert.equal(await page.getAttribute('#sitetools-webmcp-pill', 'data-state'), 'connected');
  fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
  await page.screenshot({ path: SCREENSHOT });
  t.diagnostic(`screenshot of the demo page, flyout open, pill green: ${SCREENSHOT}`);

  run.assertTabStayedHome();
  const withForeignOrigin = seen.requests.filter((r) => r.origin !== undefined && r.origin !== site);
  assert.deepEqual(withForeignOrigin, [], 'requests with a foreign Origin');
  assert.ok(seen.requests.some((r) => r.url === `${site}/api/chat/tools` && r.method === 'POST'));

  // The service's log: one line per request, none refused for its origin, no 5xx.
  run.assertServedCleanly();
  assert.ok(!logs.serve.join('\n').includes('evil.example'), 'the service saw a foreign host');

  // The log would show one: every /api request with a foreign Origin is refused and
  // logged as origin_not_allowed (the log never holds the Origin itself).
  const probe = await fetch(`${site}/api/chat/tools`, { headers: { Origin: 'https://evil.example' } });
  assert.equal(probe.status, 403);
  await until('the refusal in the log', async () =>
    logs.serve.some((l) => l.includes('"code":"origin_not_allowed"') && l.includes('"status":403')),
  );
  assert.ok(!logs.serve.join('\n').includes('evil.example'), 'the log holds an Origin');
});

test('a fresh tab clears a stale widget session and registers with document.modelContext', async () => {
  const tab = await page.context().newPage();
  try {
    await tab.addInitScript(() => {
      // What an earlier page of the widget leaves behind, and a browser with WebMCP.
      sessionStorage.setItem('webmcp_token', JSON.stringify({ token: 'stale', server: 'ws://localhost:1', host: location.host }));
      sessionStorage.setItem('webmcp_tools', '[]');
      const tools = [];
      Object.defineProperty(document, 'modelContext', { value: { tools, registerTool: (t) => tools.push(t) } });
    });
    await tab.goto(`${site}/pricing`);
    await until('the bridge to start', async () => Number(await tab.textContent('#sitetools-webmcp-tool-count')) > 0);
    assert.equal(await tab.getAttribute('#sitetools-webmcp-pill', 'data-state'), 'disconnected');
    assert.equal((await tab.textContent('#sitetools-webmcp-status')).trim(), 'Not connected.');
    assert.equal(await tab.evaluate(() => sessionStorage.getItem('webmcp_token')), null);
    assert.deepEqual(
      await tab.evaluate(() => document.modelContext.tools.map((t) => t.name).sort()),
      [...serverToolNames, ...LOCAL_TOOLS].sort(),
    );
    const args = { query: 'cloud cost review', limit: 2 };
    const viaModelContext = await tab.evaluate(
      (a) => document.modelContext.tools.find((t) => t.name === 'search_site').execute(a),
      args,
    );
    assert.deepEqual(mcpShape(viaModelContext), mcpShape(await callJSON('search_site', args)));
    const refused = await tab.evaluate(() => document.modelContext.tools.find((t) => t.name === 'open_page').execute({ url: 'https://evil.example/' }));
    assert.equal(refused.isError, true);
    assert.equal(new URL(tab.url()).pathname, '/pricing');
  } finally {
    await tab.close();
  }
});

test('the German pages get the German widget, which follows a change of language', async () => {
  const tab = await page.context().newPage();
  const problems = [];
  tab.on('console', (m) => /Content Security Policy/i.test(m.text()) && problems.push(m.text()));
  tab.on('pageerror', (e) => problems.push(String(e)));
  try {
    await tab.goto(`${site}/de/`);
    await tab.waitForSelector('#sitetools-chat-launcher', { state: 'visible' });
    assert.equal((await tab.textContent('#sitetools-chat-launcher')).trim(), 'Diese Website fragen');
    await tab.click('#sitetools-chat-launcher');
    assert.equal((await tab.textContent('#sitetools-chat-title')).trim(), 'Diese Website fragen');
    assert.equal((await tab.textContent('#sitetools-chat-send')).trim(), 'Senden');
    assert.match(await tab.textContent('#sitetools-webmcp-pill'), /MCP: aus/);
    // The site's router swaps in an English page: the widget follows <html lang>.
    await tab.click('a[hreflang="en"]');
    await until('the English page', async () => (await tab.evaluate(() => document.documentElement.lang)) === 'en');
    await until('the English widget', async () => (await tab.textContent('#sitetools-chat-title')).trim() === 'Ask this site');
    assert.ok(await tab.isVisible('#sitetools-chat-panel'), 'the flyout stayed open');
    assert.deepEqual(problems, []);
  } finally {
    await tab.close();
  }
});

test('axe-core finds no serious or critical violation on the demo, flyout closed and open', async () => {
  // axe adds a style element of its own while it runs, which the pages' CSP refuses:
  // it runs where the CSP is not enforced (the tests above hold the widget to it).
  const ctx = await run.browser.newContext({ viewport: DESKTOP, bypassCSP: true });
  try {
    for (const path of ['/', '/de/contact']) {
      const tab = await ctx.newPage();
      await tab.goto(`${site}${path}`);
      await tab.waitForSelector('#sitetools-chat-launcher', { state: 'visible' });
      assert.deepEqual(await axeViolations(tab), [], `${path}, flyout closed`);
      await tab.click('#sitetools-chat-launcher');
      assert.deepEqual(await axeViolations(tab), [], `${path}, flyout open`);
      // The notice is accepted once per browser: on the second page it is not shown.
      if (await tab.isVisible('#sitetools-chat-consent-accept')) await tab.click('#sitetools-chat-consent-accept');
      await tab.click('#sitetools-webmcp-pill');
      assert.deepEqual(await axeViolations(tab), [], `${path}, token card open`);
      await tab.close();
    }
  } finally {
    await ctx.close();
  }
});

// The statements of the privacy policy's WebMCP section (deploy/demo/site/privacy.md, and
// de/datenschutz.md) that a test can check, against this running demo: its source names
// this test.
test("the privacy policy's claims hold on the running demo", async () => {
  const marker = `zebracorn${Date.now().toString(36)}`;
  const linesBefore = logs.serve.length;

  // A relayed search, a direct /mcp call, a chat question, and the browser-local tools, all
  // carrying the marker.
  const relayed = await run.callTool('search_site', { query: `${marker} accessibility audit` });
  assert.equal(relayed.isError, false, resultText(relayed));
  const mcp = await fetch(`${run.sitetools}/mcp`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Protocol-Version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search_site', arguments: { query: `${marker} pricing` } } }),
  });
  assert.equal(mcp.status, 200);
  if (await page.isHidden('#sitetools-chat-panel')) await page.click('#sitetools-chat-launcher');
  const answered = page.waitForResponse((res) => res.url() === `${site}/api/chat`, { timeout: 20000 });
  await page.fill('#sitetools-chat-input', `Do you know ${marker}?`);
  await page.press('#sitetools-chat-input', 'Enter');
  assert.equal((await answered).status(), 200);
  await until('the chat to be idle', () => page.evaluate(() => !document.querySelector('sitetools-chat').shadowRoot.querySelector('#sitetools-chat-log[aria-busy]')));

  // Browser-local tools send the server nothing but one count: resume_conversation makes
  // no request at all, prefill_contact_form one POST /api/handover that names the tool and
  // holds nothing of its arguments; no tool call in the log.
  const quietFrom = { lines: logs.serve.length, requests: seen.requests.length };
  const ofSite = (from) => seen.requests.slice(from).filter((r) => r.url.startsWith(site));
  assert.equal((await run.callTool('resume_conversation', {})).isError, false);
  assert.deepEqual(ofSite(quietFrom.requests), [], 'resume_conversation made a request');
  // (it fills only empty fields: an earlier test may have filled them all)
  const prefill = await run.callTool('prefill_contact_form', { name: marker, message: `${marker} says hello` });
  assert.equal(prefill.isError, false, resultText(prefill));
  const isHandover = (r) => r.method === 'POST' && r.url === `${site}/api/handover`;
  await until('the hand-over count', () => ofSite(quietFrom.requests).some(isHandover));
  await until('the hand-over in the log', () => requestLines(logs.serve.slice(quietFrom.lines)).some((l) => l.route === '/api/handover'));
  const local = ofSite(quietFrom.requests);
  assert.deepEqual(
    local.filter(isHandover).map((r) => r.body),
    ['{"tool":"prefill_contact_form"}'],
    'one count-only hand-over',
  );
  // (prefill_contact_form may open the contact page: a page request without the arguments)
  for (const r of local.filter((x) => !isHandover(x))) assert.deepEqual([r.method, new URL(r.url).search, r.body], ['GET', '', ''], JSON.stringify(r));
  const served = requestLines(logs.serve.slice(quietFrom.lines));
  for (const l of served) assert.notEqual(l.route, '/api/chat/tools', JSON.stringify(l));
  assert.deepEqual(
    served.filter((l) => l.route === '/api/handover').map((l) => [l.method, l.status]),
    [['POST', 204]],
  );

  // No cookies: none in the browser, none set by any page, tool call or chat answer.
  assert.deepEqual(await page.context().cookies(), []);
  assert.equal(await page.evaluate(() => document.cookie), '');

  // The relay token never reached the server: in no request of the tab, in no log line.
  assert.ok(run.tokens?.length > 0);
  for (const token of run.tokens) {
    assert.ok(!seen.requests.some((r) => r.url.startsWith(site) && (r.url.includes(token) || r.body.includes(token))), 'a request carried the token');
    assert.ok(!logs.serve.some((l) => l.includes(token)), 'a log line holds the token');
  }

  // The log: no argument, question or address; a request line holds only the documented keys.
  const lines = logs.serve.slice(linesBefore);
  assert.ok(lines.length > 0);
  assert.deepEqual(lines.filter((l) => l.includes(marker)), []);
  const allowed = new Set(['time', 'level', 'msg', 'method', 'route', 'status', 'latency_us', 'tool', 'channel', 'code']);
  const requests = requestLines(logs.serve);
  assert.ok(requests.some((l) => l.tool === 'search_site' && l.channel === 'webmcp'), 'the relayed call is logged by tool and channel');
  for (const l of requests) {
    assert.deepEqual(Object.keys(l).filter((k) => !allowed.has(k)), [], JSON.stringify(l));
    assert.doesNotMatch(JSON.stringify(l), /127\.0\.0\.1|zebracorn/, JSON.stringify(l));
  }

  // The metrics: tool calls by tool and channel, never an argument or an address.
  const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
  assert.match(metrics, /tool="search_site"/);
  assert.match(metrics, /channel="webmcp"/);
  assert.ok(!metrics.includes(marker), 'a metric holds an argument');
  assert.ok(!metrics.includes('127.0.0.1'), 'a metric holds an address');
});

test('the privacy policy and the relay guide render in both languages, linked from the navigation and the token card', async () => {
  const ctx = await run.browser.newContext({ viewport: DESKTOP, bypassCSP: true });
  try {
    const tab = await ctx.newPage();
    for (const [path, lang, heading, navTo, privacyHref, guideSection] of [
      ['/try-it', 'en', 'Try it', '/try-it', '/privacy', 'One limit'],
      ['/de/try-it', 'de', 'Ausprobieren', '/de/try-it', '/de/datenschutz', 'Eine Grenze'],
      ['/privacy', 'en', 'Privacy policy', null, '/privacy', 'Your own AI assistant (WebMCP)'],
      ['/de/datenschutz', 'de', 'Datenschutzerklärung', null, '/de/datenschutz', 'Ihr eigener KI-Assistent (WebMCP)'],
    ]) {
      const res = await tab.goto(`${site}${path}`);
      assert.equal(res.status(), 200, path);
      assert.equal(await tab.getAttribute('html', 'lang'), lang, path);
      assert.equal((await tab.textContent('#sitetools-main h1')).trim(), heading, path);
      const h2 = await tab.$$eval('#sitetools-main h2', (hs) => hs.map((x) => x.textContent.trim()));
      assert.ok(h2.includes(guideSection), `${path}: ${h2}`);
      if (navTo) assert.equal(await tab.getAttribute(`#sitetools-header nav a[href="${navTo}"]`, 'aria-current'), 'page', path);
      assert.ok(await tab.$(`footer a[href="${privacyHref}"]`), `${path}: the footer links ${privacyHref}`);
      // The token card links this language's guide, in the card and as the token's help.
      await tab.click('#sitetools-chat-launcher');
      if (await tab.isVisible('#sitetools-chat-consent-accept')) await tab.click('#sitetools-chat-consent-accept');
      await tab.click('#sitetools-webmcp-pill');
      const guide = lang === 'en' ? '/try-it' : '/de/try-it';
      assert.equal(new URL(await tab.getAttribute('#sitetools-webmcp-guide', 'href')).pathname, guide, path);
      assert.equal(await tab.getAttribute('#sitetools-webmcp-token-help-link', 'href'), `${site}${guide}#token`, path);
      assert.equal(await tab.getAttribute('#sitetools-webmcp-token', 'aria-describedby'), 'sitetools-webmcp-token-help');
      assert.deepEqual(await axeViolations(tab), [], `${path}, token card open`);
      await tab.keyboard.press('Escape');
      await tab.keyboard.press('Escape');
    }
    // The guide's token step is where the help link points.
    await tab.goto(`${site}/de/try-it#token`);
    assert.match(await tab.textContent('#token'), /Token holen/);
    // Following the card's link keeps the tab's document (the site's router), so a
    // connection would survive it.
    await tab.goto(`${site}/pricing`);
    await tab.evaluate(() => (window.__marker = 'still here'));
    await tab.click('#sitetools-chat-launcher');
    await tab.click('#sitetools-webmcp-pill');
    await tab.click('#sitetools-webmcp-guide');
    await until('the guide', async () => new URL(tab.url()).pathname === '/try-it');
    assert.equal(await tab.evaluate(() => window.__marker), 'still here');
    // The card made room for the guide; the chat stays open beside it.
    assert.ok(await tab.isHidden('#sitetools-webmcp-card'), 'the token card is still open over the guide');
    assert.ok(await tab.isVisible('#sitetools-chat-panel'));
    // On a phone the flyout covers the page: it steps aside for the guide.
    await tab.setViewportSize({ width: 390, height: 844 });
    await tab.goto(`${site}/pricing`);
    if (await tab.isHidden('#sitetools-chat-panel')) await tab.click('#sitetools-chat-launcher');
    await tab.click('#sitetools-webmcp-pill');
    await tab.click('#sitetools-webmcp-guide');
    await until('the guide', async () => new URL(tab.url()).pathname === '/try-it');
    assert.ok(await tab.isHidden('#sitetools-chat-panel'), 'the flyout still covers the guide on a phone');
    assert.ok(await tab.isVisible('#sitetools-chat-launcher'));
  } finally {
    await ctx.close();
  }
});
