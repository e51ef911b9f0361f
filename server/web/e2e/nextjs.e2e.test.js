// End to end on the deployment sitetools is made for: a site owner's own frontend in
// front of it. Real parts only, on loopback:
//
//   headless Chromium → `next start` (deploy/nextjs: its pages, its router, its
//   contact form, the route handlers proxying /api/chat*, /webmcp/*, /mcp)
//   → `sitetools serve` (no pages of its own) → PostgreSQL
//
// and, for the relay path, the MCP TypeScript SDK client → the @jason.today/webmcp
// relay → the tab on the Next.js origin → /api/chat/tools through the Next.js proxy.
// The one fake is the paid model: an OpenAI-compatible stream that counts its calls.
//
//   cd server/web && TEST_DATABASE_URL=… SITETOOLS_BIN=…/bin/sitetools node --test e2e/nextjs.e2e.test.js
//
// Needs bin/sitetools (make build), deploy/dev/browser.sh (Chromium, npm packages, and
// deploy/nextjs built with next build), and deploy/dev/postgres.sh.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import {
  DESKTOP,
  LOCAL_TOOLS,
  Run,
  firstDelta,
  freePort,
  mcpShape,
  median,
  repo,
  requestLines,
  resultText,
  startFakeLLM,
  until,
  webDir,
} from './harness.js';
import { addHostileSheet, answeredOn, axeViolations, checkPrefill, deepFocus, inFreshTab, recordAnswers, relayUI, showsPath } from './steps.js';

const NEXT_DIR = path.join(repo, 'deploy/nextjs');
const NEXT_BIN = path.join(NEXT_DIR, 'node_modules/.bin/next');
const SHOTS = process.env.E2E_SCREENSHOTS || path.join(webDir, 'e2e');
const RATE_LIMIT = 40;
// The fake model's answer: a link to a page of the site, then words that arrive
// GAP_MS apart, so a buffering proxy would show as the first word arriving with the last.
const ANSWER = 'We do accessibility audits; [see the pricing page](/pricing) for what they cost, and book an intro call when you are ready.';
const GAP_MS = 120;

const run = new Run({ requests: [], sockets: [], console: [], pageErrors: [] }, 'next');
const { logs, seen } = run;
let sitetools; // http://127.0.0.1:<port>, sitetools itself
let origin; // http://127.0.0.1:<port>, the Next.js frontend: the site's origin
let llm;
let relay;
let page;
let serverToolNames = [];

/** A call on sitetools' own JSON endpoint, as a server would make it. */
const callDirect = (name, args) => run.callDirect(name, args, { 'X-Forwarded-For': '198.51.100.200' });

const transcript = (p = page) => p.evaluate(() => JSON.parse(localStorage.getItem('sitetools.chat.transcript') ?? 'null'));

/**
 * computedStyles is the computed values of props for each of selectors that matches,
 * in the widget's shadow root or in the page itself.
 */
function computedStyles(p, { inWidget, selectors, props }) {
  return p.evaluate(
    ([inWidget, selectors, props]) => {
      const root = inWidget ? document.querySelector('sitetools-chat').shadowRoot : document;
      const out = {};
      for (const sel of selectors) {
        const el = root.querySelector(sel);
        if (!el) continue;
        const cs = getComputedStyle(el);
        out[sel] = Object.fromEntries(props.map((k) => [k, cs.getPropertyValue(k)]));
      }
      return out;
    },
    [inWidget, selectors, props],
  );
}

/** The widget's parts that a host stylesheet would hit first, and what it would change. */
const widgetStyles = (p) =>
  computedStyles(p, {
    inWidget: true,
    selectors: ['.root', '#sitetools-chat-launcher', '#sitetools-chat-panel', '#sitetools-chat-title', '#sitetools-webmcp-pill', '#sitetools-chat-send', '#sitetools-chat-input', '#sitetools-chat-log', '.msg-text p', '.msg-hint', '.consent ul', '#sitetools-webmcp-card'],
    props: ['font-family', 'font-size', 'line-height', 'letter-spacing', 'color', 'background-color', 'border-top-style', 'border-top-width', 'padding-top', 'margin-top', 'display', 'position', 'text-transform', 'box-sizing', 'width', 'height', 'list-style-type'],
  });

/** Some of the host page's own elements. */
const hostStyles = (p) =>
  computedStyles(p, {
    inWidget: false,
    selectors: ['body', 'h1', 'main p', 'a', 'button', 'input', 'textarea', 'label', 'header', 'footer'],
    props: ['font-family', 'font-size', 'line-height', 'color', 'background-color', 'margin-top', 'padding-top', 'border-top-width', 'display', 'box-sizing'],
  });

/** panelFits says where the flyout's parts fall outside the viewport. */
function panelFits(p) {
  return p.evaluate(() => {
    const root = document.querySelector('sitetools-chat').shadowRoot;
    const vw = document.documentElement.clientWidth;
    const vh = window.innerHeight;
    const problems = [];
    for (const sel of ['#sitetools-chat-panel', '#sitetools-chat-input', '#sitetools-chat-send', '#sitetools-chat-close', '#sitetools-webmcp-pill', '#sitetools-chat-title']) {
      const el = root.querySelector(sel);
      if (!el) continue;
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) problems.push(`${sel} has no size`);
      if (r.left < 0 || r.top < 0 || r.right > vw + 0.5 || r.bottom > vh + 0.5) {
        problems.push(`${sel} at ${Math.round(r.left)},${Math.round(r.top)}–${Math.round(r.right)},${Math.round(r.bottom)} outside ${vw}×${vh}`);
      }
    }
    const log = root.querySelector('#sitetools-chat-log').getBoundingClientRect();
    if (log.height < 80) problems.push(`the conversation is only ${Math.round(log.height)} px high`);
    if (document.documentElement.scrollWidth > vw) problems.push(`the page scrolls sideways (${document.documentElement.scrollWidth} > ${vw})`);
    return problems;
  });
}

/** ask sends a question from the open flyout and waits for the answer to be stored. */
async function ask(p, question) {
  await p.fill('#sitetools-chat-input', question);
  await p.press('#sitetools-chat-input', 'Enter');
  await until(`the answer to ${JSON.stringify(question)}`, async () => (await transcript(p))?.messages?.at(-1)?.role === 'assistant', { timeout: 20000 });
}

async function openFlyout(p) {
  // The launcher is hidden while the flyout is open.
  await p.waitForSelector('#sitetools-chat-launcher', { state: 'attached' });
  if (await p.isHidden('#sitetools-chat-panel')) await p.click('#sitetools-chat-launcher');
  await p.waitForSelector('#sitetools-chat-panel', { state: 'visible' });
}

// ---------------------------------------------------------------------------------------
// Set-up

before(
  async () => {
    run.begin('next-e2e', [
      ['Next.js (deploy/dev/browser.sh nextjs)', NEXT_BIN],
      ['the built frontend (deploy/dev/browser.sh nextjs)', path.join(NEXT_DIR, '.next/BUILD_ID')],
    ]);
    const sitePort = await freePort();
    const nextPort = await freePort();
    sitetools = `http://127.0.0.1:${sitePort}`;
    origin = `http://127.0.0.1:${nextPort}`;

    llm = await run.fake(startFakeLLM({ words: ANSWER.split(' '), gap: GAP_MS }));
    relay = await run.startRelay();

    // sitetools renders no pages here: the frontend does. The index's urls are the
    // frontend's, the frontend is the trusted proxy, and the model is the fake.
    const env = {
      TRUSTED_PROXIES: '127.0.0.1/32',
      RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT),
      CHAT_PERSONA_FILE: path.join(repo, 'deploy/demo/persona.md'),
      LLM_BASE_URL: llm.url,
      LLM_MODEL: 'fake-model',
    };
    const tools = await run.startSitetools({ port: sitePort, site: origin, database: 'sitetools_next_e2e', env });
    serverToolNames = tools.map((t) => t.name);

    run.procs.start(
      'next',
      NEXT_BIN,
      ['start', '--port', String(nextPort), '--hostname', '127.0.0.1'],
      {
        cwd: NEXT_DIR,
        // The tests stand where the proxy in front of the frontend would, writing
        // X-Forwarded-For (forwarded.e2e.test.js runs nginx there).
        env: { PATH: process.env.PATH, HOME: run.home, NODE_ENV: 'production', NEXT_TELEMETRY_DISABLED: '1', SITETOOLS_URL: sitetools, SITETOOLS_CLIENT_ADDRESS_HEADER: 'x-forwarded-for', WEBMCP_RELAY_PORT: String(relay.port) },
      },
      logs.next,
    );
    await until('next start to answer', async () => (await fetch(`${origin}/`)).ok, { timeout: 30000 });

    page = await run.openTab();
    await page.goto(`${origin}/`);
  },
  { timeout: 180000 },
);

after(() => run.stop());

// ---------------------------------------------------------------------------------------
// The tests, in order: they share one tab and one relay session.

test('the frontend adds the chat with one tag, under a strict CSP', async () => {
  const res = await fetch(`${origin}/`);
  const html = await res.text();
  assert.equal(html.match(/<script[^>]*src="\/webmcp\/chat\.js"/g)?.length, 1, 'one tag for the widget');
  const csp = res.headers.get('content-security-policy') ?? '';
  assert.match(csp, /script-src 'self' 'nonce-[^']+'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  assert.match(csp, new RegExp(`connect-src 'self' ws://localhost:${relay.port}`));

  await page.waitForSelector('#sitetools-chat-launcher', { state: 'visible' });
  assert.equal(await page.locator('sitetools-chat').count(), 1);
  assert.equal((await page.textContent('#sitetools-chat-launcher')).trim(), 'Ask this site');
  await until('the bridge to register its tools', async () => Number(await page.textContent('#sitetools-webmcp-tool-count')) > 0);
  assert.deepEqual(seen.console.filter((l) => /Content Security Policy/i.test(l)), [], 'CSP violations');
  assert.deepEqual(seen.pageErrors, []);
});

test('chat.js revalidates through the proxy; the files it loads are cached for good', async () => {
  const res = await fetch(`${origin}/webmcp/chat.js`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('cache-control'), 'no-cache');
  assert.match(res.headers.get('content-type'), /^text\/javascript/);
  const etag = res.headers.get('etag');
  assert.ok(etag);
  const body = await res.text();
  const again = await fetch(`${origin}/webmcp/chat.js`, { headers: { 'If-None-Match': etag } });
  assert.equal(again.status, 304);
  const loaded = [...new Set(body.match(/(chunk-[A-Z0-9]+\.js|chat-[0-9a-f]{12}\.css)/g))];
  assert.ok(loaded.some((f) => f.endsWith('.css')) && loaded.some((f) => f.endsWith('.js')), loaded.join(' '));
  for (const f of loaded) {
    const r = await fetch(`${origin}/webmcp/${f}`);
    assert.equal(r.status, 200, f);
    assert.equal(r.headers.get('cache-control'), 'public, max-age=31536000, immutable', f);
  }
});

test('agents find /mcp through the frontend: the AI catalog and the MCP server card name its origin', async () => {
  const catalog = await fetch(`${origin}/.well-known/ai-catalog.json`);
  assert.equal(catalog.status, 200);
  assert.equal(catalog.headers.get('content-type'), 'application/ai-catalog+json');
  assert.equal(catalog.headers.get('access-control-allow-origin'), '*');
  const [entry] = (await catalog.json()).entries;
  assert.equal(entry.type, 'application/mcp-server-card+json');
  assert.equal(entry.url, `${origin}/mcp/server-card`);
  assert.deepEqual(entry.capabilities, serverToolNames);
  const direct = await (await fetch(`${sitetools}/mcp/server-card`)).text();
  for (const p of ['/mcp/server-card', '/.well-known/mcp/server-card.json']) {
    const res = await fetch(`${origin}${p}`);
    assert.equal(res.status, 200, p);
    assert.equal(res.headers.get('content-type'), 'application/mcp-server-card+json', p);
    const body = await res.text();
    assert.equal(body, direct, `${p}: the bytes sitetools serves`);
    const card = JSON.parse(body);
    assert.equal(card.remotes[0].url, `${origin}/mcp`);
    assert.deepEqual(card._meta['io.github.sitetools/tools'].map((t) => t.name), serverToolNames);
    const again = await fetch(`${origin}${p}`, { headers: { 'If-None-Match': res.headers.get('etag') } });
    assert.equal(again.status, 304, `${p} revalidates through the proxy`);
  }
});

test('agents read the site as text through the frontend: llms.txt, page.md, Accept: text/markdown', async () => {
  const llms = await fetch(`${origin}/llms.txt`);
  assert.equal(llms.status, 200);
  assert.equal(llms.headers.get('content-type'), 'text/plain; charset=utf-8');
  const text = await llms.text();
  assert.equal(text, await (await fetch(`${sitetools}/llms.txt`)).text(), 'the bytes sitetools serves');
  assert.match(text, /^# Northwind Lane Consulting\n\n> We are a small engineering consultancy/);
  for (const name of serverToolNames) assert.match(text, new RegExp(`\n- \`${name}\`: .+\n`), name);
  assert.ok(text.includes(`](${origin}/pricing.md): We publish our prices`), 'the pages link their Markdown on the frontend');
  const again = await fetch(`${origin}/llms.txt`, { headers: { 'If-None-Match': llms.headers.get('etag') } });
  assert.equal(again.status, 304, 'llms.txt revalidates through the proxy');

  for (const [path, headers] of [
    ['/pricing.md', {}],
    ['/pricing', { Accept: 'text/markdown' }],
  ]) {
    const res = await fetch(`${origin}${path}`, { headers });
    assert.equal(res.status, 200, path);
    assert.equal(res.headers.get('content-type'), 'text/markdown; charset=utf-8', path);
    assert.match(await res.text(), new RegExp(`^# Pricing\n\nSource: <${origin}/pricing>\n\n.*\n## Day rate\n`, 's'), path);
  }
  const html = await fetch(`${origin}/pricing`);
  assert.equal(html.headers.get('content-type'), 'text/html; charset=utf-8', 'the page itself stays the frontend\'s');
  assert.equal((await fetch(`${origin}/nowhere.md`)).status, 404);
});

test('consent, then a question: the answer streams through the proxy, first word before the last', async () => {
  const calls = llm.calls;
  await openFlyout(page);
  assert.ok(await page.isVisible('#sitetools-chat-consent'));
  assert.ok(await page.isHidden('#sitetools-chat-form'));
  await page.click('#sitetools-chat-consent-accept');
  assert.ok(await page.isVisible('#sitetools-chat-input'));
  assert.equal(await deepFocus(page), 'sitetools-chat-input');

  // When the first words are on screen, and when the answer is complete.
  await page.evaluate(() => {
    const root = document.querySelector('sitetools-chat').shadowRoot;
    const log = root.querySelector('#sitetools-chat-log');
    window.__stream = { first: 0, firstBusy: null, done: 0 };
    const mo = new MutationObserver(() => {
      const s = window.__stream;
      const answers = log.querySelectorAll('.msg-assistant .msg-text');
      const last = answers[answers.length - 1];
      if (!s.first && last && last.textContent.trim() !== '') {
        s.first = performance.now();
        s.firstBusy = log.getAttribute('aria-busy') === 'true';
      }
      if (s.first && !s.done && log.getAttribute('aria-busy') !== 'true') {
        s.done = performance.now();
        mo.disconnect();
      }
    });
    mo.observe(log, { subtree: true, childList: true, characterData: true, attributes: true });
  });
  await page.fill('#sitetools-chat-input', 'Do you do accessibility audits, and what do they cost?');
  await page.press('#sitetools-chat-input', 'Enter');
  const s = await until('the answer to complete', () => page.evaluate(() => window.__stream.done && window.__stream), { timeout: 30000 });
  assert.equal(s.firstBusy, true, 'the first words appeared while the answer was still streaming');
  const words = ANSWER.split(' ').length;
  // Unbuffered, the first word is shown about (words - 1) gaps before the answer ends.
  assert.ok(s.done - s.first > GAP_MS * (words / 2), `first words ${Math.round(s.done - s.first)} ms before the end`);
  assert.equal(llm.calls, calls + 1, 'one model call');
  const t = await transcript();
  assert.deepEqual(
    t.messages.map((m) => m.role),
    ['user', 'assistant'],
  );
  assert.equal(t.messages[1].content, ANSWER);
  // The link of the answer points at the site's own page.
  // (as the same-origin guard gives it: the absolute URL)
  assert.equal(await page.getAttribute('#sitetools-chat-log .msg-assistant a', 'href'), `${origin}/pricing`);
});

test('a rating of the answer reaches sitetools through the frontend’s route', async () => {
  const before = seen.requests.length;
  await page.locator('.feedback').last().locator('[data-fb="up"]').click();
  const rated = (r) => r.method === 'POST' && r.url === `${origin}/api/feedback`;
  await until('the rating', () => seen.requests.slice(before).some(rated));
  const body = JSON.parse(seen.requests.slice(before).find(rated).body);
  assert.deepEqual(Object.keys(body).sort(), ['answerId', 'kind', 'rating']);
  assert.deepEqual([body.kind, body.rating], ['model', 'up']);
  await until('the rating counted (204 in the log)', () => requestLines(logs.serve).some((l) => l.route === '/api/feedback' && l.status === 204));
});

test('time to the first delta: through the Next.js proxy against direct (median of 20)', async (t) => {
  const slow = llm.gap;
  llm.gap = 10; // a fast model: what is left is the proxy's own time
  const direct = [];
  const proxied = [];
  try {
    for (let i = 0; i < 20; i++) {
      // Each from a client address of its own (the proxy and this test are trusted),
      // so that 40 turns stay inside the per-client rate limit.
      direct.push(await firstDelta(`${sitetools}/api/chat`, { headers: { 'X-Forwarded-For': `198.51.100.${i + 1}` } }));
      proxied.push(await firstDelta(`${origin}/api/chat`, { headers: { 'X-Forwarded-For': `198.51.100.${i + 101}` } }));
    }
  } finally {
    llm.gap = slow;
  }
  for (const r of [...direct, ...proxied]) assert.ok(r.first > 0 && r.done >= r.first, JSON.stringify(r));
  const d = median(direct.map((r) => r.first));
  const p = median(proxied.map((r) => r.first));
  t.diagnostic(`first message.delta, median of 20: direct ${d.toFixed(1)} ms, through next start ${p.toFixed(1)} ms (+${(p - d).toFixed(1)} ms)`);
  t.diagnostic(`message.done, median of 20: direct ${median(direct.map((r) => r.done)).toFixed(1)} ms, through next start ${median(proxied.map((r) => r.done)).toFixed(1)} ms`);
});

test('the relay reaches sitetools through the Next.js origin', async () => {
  assert.equal(await page.getAttribute('#sitetools-webmcp-pill', 'data-state'), 'disconnected');
  await run.connectPill(page);
  assert.match(await page.textContent('#sitetools-webmcp-pill'), new RegExp(`MCP: on · ${serverToolNames.length + LOCAL_TOOLS.length} tools`));
  await page.click('#sitetools-webmcp-pill'); // close the card

  await run.untilListed([...serverToolNames, ...LOCAL_TOOLS]);

  const args = { query: 'accessibility audit with screen reader testing', limit: 3 };
  const before = seen.requests.length;
  const viaRelay = await run.callTool('search_site', args);
  assert.equal(viaRelay.isError, false, resultText(viaRelay));
  assert.deepEqual(mcpShape(viaRelay), mcpShape(await callDirect('search_site', args)));
  assert.ok(viaRelay.structuredContent.results.length > 0);
  assert.ok(viaRelay.structuredContent.results.every((r) => r.url.startsWith(origin + '/')));
  // The tab made the call on its own origin: the Next.js proxy carried it.
  assert.ok(seen.requests.slice(before).some((r) => r.url === `${origin}/api/chat/tools` && r.method === 'POST'));
});

test('open_page navigates through Next’s client router, answers once the page is shown; the widget stays as it was', async () => {
  await page.evaluate(() => {
    window.__marker = 'same document';
    document.querySelector('sitetools-chat').dataset.marker = 'same element';
  });
  await recordAnswers(page);
  const r = await run.callTool('open_page', { url: '/services/web-platforms' });
  assert.equal(r.isError, false, resultText(r));
  assert.equal(r.structuredContent.status, 200);
  assert.equal(r.structuredContent.url, '/services/web-platforms');
  assert.deepEqual(await answeredOn(page), { path: '/services/web-platforms', h1: 'Web platforms' }, 'what the tab showed when it answered');
  await showsPath(page, '/services/web-platforms');
  assert.equal((await page.textContent('main h1')).trim(), 'Web platforms');
  assert.equal(await page.evaluate(() => window.__marker), 'same document');
  assert.equal(await page.evaluate(() => document.querySelector('sitetools-chat')?.dataset.marker), 'same element');
  assert.equal(await page.locator('sitetools-chat').count(), 1);
  assert.equal(await page.getAttribute('#sitetools-webmcp-pill', 'data-state'), 'connected');
  assert.ok(await page.isVisible('#sitetools-chat-panel'), 'the flyout stayed open');
  assert.equal(await page.locator('#sitetools-chat-log .msg-user').count(), 1, 'the conversation is still on screen');

  const missing = await run.callTool('open_page', { url: '/no-such-page' });
  assert.equal(missing.isError, true);
  assert.match(resultText(missing), /search_site/);
  assert.equal((await answeredOn(page)).path, '/no-such-page', 'Next shows its not-found page there');
  assert.equal(await page.evaluate(() => window.__marker), 'same document');

  const refused = await run.callTool('open_page', { url: 'https://evil.example/' });
  assert.equal(refused.isError, true);
  assert.match(resultText(refused), /^Refused: /);
});

test('a link in an answer goes through the router too', async () => {
  await page.click(`#sitetools-chat-log .msg-assistant a[href="${origin}/pricing"]`);
  await showsPath(page, '/pricing');
  await page.waitForFunction(() => document.querySelector('main h1')?.textContent.trim() === 'Pricing');
  assert.equal(await page.evaluate(() => window.__marker), 'same document');
  assert.equal(await page.getAttribute('#sitetools-webmcp-pill', 'data-state'), 'connected');
});

test('prefill_contact_form fills the Next.js contact form and overwrites nothing', async () => {
  const before = seen.requests.length;
  const made = await checkPrefill(run, page);
  // One count-only notice of the hand-over, through the frontend's route to sitetools (204).
  const handover = (r) => r.method === 'POST' && r.url === `${origin}/api/handover`;
  await until('the hand-over count', () => seen.requests.slice(before).some(handover));
  assert.deepEqual(seen.requests.slice(before).filter(handover).map((r) => r.body), ['{"tool":"prefill_contact_form"}']);
  await until('the hand-over in the log', () => requestLines(logs.serve).some((l) => l.route === '/api/handover' && l.status === 204));
  // Next's router prefetches the pages its links point to (?_rsc=…) whenever they come
  // into view; apart from those, the prefill made no other request.
  assert.deepEqual(
    made.filter((r) => !new URL(r.url).searchParams.has('_rsc') && !handover(r)),
    [],
    'the prefill made requests',
  );
  assert.equal(await page.evaluate(() => window.__marker), 'same document');
});

/**
 * hiddenAsBefore adds to p's body an element hidden the way the bridge used to hide the
 * relay's UI (the hidden attribute and an inline display: none), which a hostile sheet
 * shows: the proof that the sheet would show the relay's UI had the bridge not kept it
 * out of the page's reach. It says whether the element is rendered, and removes it.
 */
function hiddenAsBefore(p) {
  return p.evaluate(() => {
    const el = document.createElement('div');
    el.textContent = 'Disconnect';
    el.hidden = true;
    el.style.display = 'none';
    document.body.appendChild(el);
    const rendered = el.getClientRects().length > 0;
    el.remove();
    return rendered;
  });
}

test('a hostile host stylesheet leaves the widget as it was and the relay’s UI hidden, connected', async () => {
  await openFlyout(page);
  assert.equal(await page.getAttribute('#sitetools-webmcp-pill', 'data-state'), 'connected');
  assert.deepEqual(await relayUI(page), { present: true, rendered: [] }, 'before the hostile stylesheet');
  const hostBefore = await hostStyles(page);
  const before = await widgetStyles(page);
  assert.ok(Object.keys(before).length >= 8, Object.keys(before).join(' '));
  await addHostileSheet(page);
  // The stylesheet did hit the page itself…
  const hostAfter = await hostStyles(page);
  assert.notDeepEqual(hostAfter.button, hostBefore.button, 'the hostile stylesheet changed nothing on the page: the check proves nothing');
  assert.notEqual(hostAfter.h1['font-family'], hostBefore.h1['font-family']);
  assert.ok(await hiddenAsBefore(page), 'the hostile stylesheet shows no hidden element: the check proves nothing');
  // …and nothing of the widget, nor of the relay's widget, which still works.
  assert.deepEqual(await widgetStyles(page), before);
  assert.deepEqual(await panelFits(page), []);
  assert.deepEqual(await relayUI(page), { present: true, rendered: [] }, 'the relay’s UI under the hostile stylesheet');
  const r = await run.callTool('search_site', { query: 'pricing' });
  assert.equal(r.isError, false, resultText(r));
  await page.evaluate(() => document.getElementById('hostile').remove());
});

test('a hostile host stylesheet leaves the relay’s UI hidden before the visitor connects', async () => {
  await inFreshTab(run.browser, `${origin}/`, async (p) => {
    await addHostileSheet(p);
    assert.ok(await hiddenAsBefore(p), 'the hostile stylesheet shows no hidden element: the check proves nothing');
    // The bridge makes the relay's widget once the tab is idle.
    await p.waitForSelector('[data-webmcp-widget]', { state: 'attached' });
    assert.equal(await p.getAttribute('#sitetools-webmcp-pill', 'data-state'), 'disconnected');
    assert.deepEqual(await relayUI(p), { present: true, rendered: [] });
    // The tab looks as it did: nothing of the relay's in the corner.
    assert.equal(await p.getByText('Disconnect', { exact: true }).filter({ visible: true }).count(), 0);
  });
});

test('the widget’s styles do not leak into the page', async () => {
  const ctx = await run.browser.newContext({ viewport: DESKTOP });
  try {
    const without = await ctx.newPage();
    await without.route('**/webmcp/chat.js', (r) => r.abort());
    await without.goto(`${origin}/contact`);
    const bare = await hostStyles(without);
    const withWidget = await ctx.newPage();
    await withWidget.goto(`${origin}/contact`);
    await withWidget.waitForSelector('#sitetools-chat-launcher', { state: 'visible' });
    assert.deepEqual(await hostStyles(withWidget), bare);
    const sheets = await withWidget.evaluate(() => [...document.styleSheets].map((s) => s.href ?? 'inline'));
    assert.deepEqual(
      sheets.filter((h) => h.includes('/webmcp/')),
      [],
      'the widget added a stylesheet to the page',
    );
  } finally {
    await ctx.close();
  }
});

test('a site themes the widget with custom properties and ::part()', async () => {
  await inFreshTab(run.browser, `${origin}/`, async (p) => {
    const launcher = () =>
      p.evaluate(() => {
        const cs = getComputedStyle(document.querySelector('sitetools-chat').shadowRoot.querySelector('#sitetools-chat-launcher'));
        return { bg: cs.backgroundColor, radius: cs.borderTopLeftRadius, font: cs.fontFamily, right: cs.right, left: cs.left, shadow: cs.boxShadow };
      });
    const before = await launcher();
    // Through the CSSOM, which a strict CSP allows, as a site's own stylesheet would.
    await p.evaluate(() => {
      const root = document.documentElement.style;
      root.setProperty('--sitetools-chat-accent', 'rgb(10, 120, 60)');
      root.setProperty('--sitetools-chat-font', 'serif');
      document.styleSheets[0].insertRule('sitetools-chat::part(launcher) { border-radius: 3px; box-shadow: none }');
    });
    const after = await launcher();
    assert.equal(after.bg, 'rgb(10, 120, 60)');
    assert.equal(after.font, 'serif');
    assert.equal(after.radius, '3px');
    assert.equal(after.shadow, 'none');
    assert.notEqual(before.bg, after.bg);
    // The left corner instead of the right.
    await p.evaluate(() => {
      document.documentElement.style.setProperty('--sitetools-chat-left', '12px');
      document.documentElement.style.setProperty('--sitetools-chat-right', 'auto');
    });
    const box = await p.evaluate(() => document.querySelector('sitetools-chat').shadowRoot.querySelector('#sitetools-chat-launcher').getBoundingClientRect().left);
    assert.equal(Math.round(box), 12);
  });
});

test('a page places its own <sitetools-chat inline>: it replaces the corner launcher', async () => {
  await inFreshTab(run.browser, `${origin}/contact`, async (p) => {
    await p.evaluate(() => {
      const el = document.createElement('sitetools-chat');
      el.setAttribute('inline', '');
      el.setAttribute('label', 'Questions? Ask here');
      el.id = 'placed';
      document.querySelector('main').appendChild(el);
    });
    await until('one widget, the placed one', async () => (await p.locator('sitetools-chat').count()) === 1);
    assert.equal(await p.evaluate(() => document.querySelector('sitetools-chat').id), 'placed');
    assert.ok(await p.isVisible('#sitetools-chat-panel'));
    assert.ok(await p.isHidden('#sitetools-chat-launcher'));
    assert.ok(await p.isHidden('#sitetools-chat-close'));
    assert.equal((await p.textContent('#sitetools-chat-title')).trim(), 'Questions? Ask here');
    // It sits in the page's flow, inside <main>, not in a corner.
    const inMain = await p.evaluate(() => {
      const panel = document.querySelector('sitetools-chat').shadowRoot.querySelector('#sitetools-chat-panel').getBoundingClientRect();
      const main = document.querySelector('main').getBoundingClientRect();
      return panel.left >= main.left - 1 && panel.right <= main.right + 1;
    });
    assert.ok(inMain, 'the inline chat is not inside <main>');
    await p.keyboard.press('Escape');
    assert.ok(await p.isVisible('#sitetools-chat-panel'), 'Escape does not close an inline chat');
  });
});

test('axe-core: no serious or critical violation, flyout closed and open', async () => {
  // axe adds a style element of its own while it runs, which the CSP refuses: it runs
  // where the CSP is not enforced (the other tests hold the widget to it).
  await inFreshTab(
    run.browser,
    `${origin}/`,
    async (p) => {
      assert.deepEqual(await axeViolations(p), [], 'flyout closed');
      await p.click('#sitetools-chat-launcher');
      assert.deepEqual(await axeViolations(p), [], 'flyout open, privacy notice');
      await p.click('#sitetools-chat-consent-accept');
      await p.click('#sitetools-webmcp-pill');
      assert.deepEqual(await axeViolations(p), [], 'flyout open, token card');
    },
    { bypassCSP: true },
  );
});

test('the keyboard: Escape closes the card, then the flyout, and focus returns', async () => {
  await openFlyout(page);
  await page.click('#sitetools-webmcp-pill');
  assert.ok(await page.isVisible('#sitetools-webmcp-card'));
  await page.keyboard.press('Escape');
  assert.ok(await page.isHidden('#sitetools-webmcp-card'));
  assert.equal(await deepFocus(page), 'sitetools-webmcp-pill');
  await page.keyboard.press('Escape');
  assert.ok(await page.isHidden('#sitetools-chat-panel'));
  assert.equal(await deepFocus(page), 'sitetools-chat-launcher');
  await page.keyboard.press('Enter');
  assert.ok(await page.isVisible('#sitetools-chat-panel'));
  assert.equal(await deepFocus(page), 'sitetools-chat-input');
  // Tab moves through the flyout's controls in order.
  await page.focus('#sitetools-webmcp-pill');
  await page.keyboard.press('Tab');
  assert.equal(await deepFocus(page), 'sitetools-chat-clear');
  await page.keyboard.press('Tab');
  assert.equal(await deepFocus(page), 'sitetools-chat-close');
});

test('a 360 px wide phone and 200 % zoom: the flyout fits and works', async (t) => {
  for (const [name, viewport, scale] of [
    ['360 px phone', { width: 360, height: 740 }, 3],
    ['200 % zoom of 1280×900', { width: 640, height: 450 }, 2],
  ]) {
    const fits = async (p) => {
      await openFlyout(p);
      await p.click('#sitetools-chat-consent-accept');
      assert.deepEqual(await panelFits(p), [], name);
      await ask(p, 'What does an audit cost?');
      assert.deepEqual(await panelFits(p), [], `${name}, with an answer`);
    };
    await inFreshTab(run.browser, `${origin}/`, fits, { viewport, deviceScaleFactor: scale });
    t.diagnostic(`${name}: the flyout fits`);
  }
});

test('screenshots: the widget on the Next.js site, desktop and a 390 px phone', async (t) => {
  fs.mkdirSync(SHOTS, { recursive: true });
  const desktop = path.join(SHOTS, 'nextjs-desktop.png');
  const home = await run.callTool('open_page', { url: '/' });
  assert.equal(home.isError, false, resultText(home));
  await openFlyout(page);
  assert.equal(await page.getAttribute('#sitetools-webmcp-pill', 'data-state'), 'connected');
  await page.screenshot({ path: desktop });
  t.diagnostic(`desktop: ${desktop}`);

  const closed = path.join(SHOTS, 'nextjs-mobile-closed.png');
  const open = path.join(SHOTS, 'nextjs-mobile.png');
  const phone = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
  await inFreshTab(
    run.browser,
    `${origin}/pricing`,
    async (p) => {
      await p.screenshot({ path: closed });
      await p.click('#sitetools-chat-launcher');
      await p.click('#sitetools-chat-consent-accept');
      await ask(p, 'Do you do accessibility audits?');
      await p.screenshot({ path: open });
    },
    phone,
  );
  t.diagnostic(`390 px phone: ${closed}, ${open}`);
});

/**
 * untilLimited makes call(i) for i = 0, 1, … until the rate limit answers 429, at most
 * 3 × RATE_LIMIT times. It returns how many calls were allowed before the first 429 (-1
 * when none came), the most a limit of RATE_LIMIT a minute may allow in the time they
 * took (the burst, and what refilled meanwhile: a loaded machine is slow), and the 429's
 * Retry-After.
 */
async function untilLimited(call) {
  const started = performance.now();
  for (let i = 0; i < 3 * RATE_LIMIT; i++) {
    const res = await call(i);
    await res.arrayBuffer();
    if (res.status === 429) {
      const refilled = Math.floor((performance.now() - started) / (60000 / RATE_LIMIT));
      return { allowed: i, most: RATE_LIMIT + refilled, retryAfter: Number(res.headers.get('retry-after')) };
    }
    assert.equal(res.status, 200, `call ${i}`);
  }
  return { allowed: -1, most: RATE_LIMIT, retryAfter: 0 };
}

test('client addresses pass through the proxy to the per-client rate limit', async () => {
  const call = (ip) =>
    fetch(`${origin}/api/chat/tools`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': ip },
      body: JSON.stringify({ name: 'search_site', arguments: { query: 'pricing' } }),
    });
  const one = await untilLimited(() => call('203.0.113.9'));
  assert.ok(one.allowed >= RATE_LIMIT && one.allowed <= one.most, `one client was allowed ${one.allowed} calls; the limit allows ${RATE_LIMIT} to ${one.most}`);
  assert.ok(one.retryAfter > 0);
  // Another visitor behind the same proxy has a bucket of their own.
  assert.equal((await call('203.0.113.10')).status, 200);

  // Only the last address of X-Forwarded-For, the one the proxy in front wrote, is the
  // client: entries the client put before it, and an X-Real-IP of its own, count for nothing.
  const appended = (forged) =>
    fetch(`${origin}/api/chat/tools`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Real-IP': forged, 'X-Forwarded-For': `${forged}, 203.0.113.50` },
      body: JSON.stringify({ name: 'search_site', arguments: { query: 'pricing' } }),
    });
  const forging = await untilLimited((i) => appended(`198.51.100.${i + 1}`));
  assert.ok(
    forging.allowed >= RATE_LIMIT && forging.allowed <= forging.most,
    `a forged X-Real-IP or X-Forwarded-For entry gave the client a fresh bucket: ${forging.allowed} calls allowed; the limit allows ${RATE_LIMIT} to ${forging.most}`,
  );
});

test('the tab spoke only to its own origin and the relay', async () => {
  run.assertTabStayedHome();
  // sitetools saw the tab's calls through the proxy, and nothing failed.
  run.assertServedCleanly();
});
