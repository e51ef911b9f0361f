// End to end in real Chromium's own WebMCP (launched with --enable-features=WebMCP:
// document.modelContext), on the demo pages of the real `sitetools serve` on PostgreSQL,
// with the relay path beside it in the same tab. The paid providers are fakes that speak
// the OpenAI wire format: embeddings (one query word answers slowly, and the fake counts
// the clients that went away) and a chat model whose answer is full of hostile links.
//
//   cd server/web && TEST_DATABASE_URL=… SITETOOLS_BIN=…/bin/sitetools node --test e2e/native.e2e.test.js
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { hostileURLs } from '../test/hostile-urls.js';
import {
  DEMO_SITE,
  LOCAL_TOOLS,
  Run,
  freePort,
  mcpShape,
  requestLines,
  resultText,
  startFakeEmbeddings,
  startFakeLLM,
  until,
} from './harness.js';
import { showsPath } from './steps.js';

const run = new Run({ console: [], pageErrors: [] });
const { logs, seen } = run;
let site;
let embed;
let page;
let catalog = [];
let llm;

const callDirect = (name, args) => run.callDirect(name, args);

/** A tool call the way the browser's agent makes it. */
async function callNative(p, name, input) {
  return p.webmcp.callTool(name, input, { timeout: 30000 });
}

before(
  async () => {
    run.begin('native-e2e');
    const port = await freePort();
    site = `http://127.0.0.1:${port}`;
    embed = await run.fake(startFakeEmbeddings());
    // The model answers with a link for every hostile url, and one good link.
    const answer = ['See', '[the pricing page](/pricing).', ...hostileURLs(site).map((u, i) => `[h${i}](${u})`)].join(' ');
    // A question with "slowpoke" gets a round of search_site (whose embedding the fake
    // provider answers slowly), one with "backwards" a get_free_slots call that fails.
    // (The service hands the model the conversation in one message, the visitor's new
    // message last.)
    const toolCalls = (body) => {
      const last = body.messages.at(-1);
      if (last?.role !== 'user') return null;
      const asked = last.content.slice(last.content.lastIndexOf('VISITOR_MESSAGE'));
      if (/slowpoke/.test(asked)) return [{ name: 'search_site', arguments: { query: 'slowpoke accessibility audits' } }];
      if (/backwards/.test(asked)) return [{ name: 'get_free_slots', arguments: { from: '2030-01-10', to: '2030-01-01' } }];
      return null;
    };
    llm = await run.fake(startFakeLLM({ words: answer.split(' '), gap: 0, toolCalls }));
    const relay = await run.startRelay();
    const env = {
      SITE_PAGES_DIR: DEMO_SITE,
      WEBMCP_RELAY_PORT: String(relay.port),
      RATE_LIMIT_PER_MINUTE: '0',
      EMBEDDINGS_PROVIDER: 'openai',
      EMBEDDINGS_BASE_URL: embed.url,
      EMBEDDINGS_MODEL: 'fake-embed',
      EMBEDDINGS_DIMENSIONS: String(embed.dims),
      LLM_BASE_URL: llm.url,
      LLM_MODEL: 'fake-model',
    };
    catalog = await run.startSitetools({ port, site, database: 'sitetools_native_e2e', env });

    page = await run.openTab(['--enable-features=WebMCP']);
    await page.goto(`${site}/`);
    await until('the bridge to register with the browser', async () => (await page.webmcp.tools()).length >= catalog.length + LOCAL_TOOLS.length);
  },
  { timeout: 180000 },
);

after(() => run.stop());

test('the tab lists the 7 tools with their schemas and annotations', async () => {
  const tools = await page.webmcp.tools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...catalog.map((t) => t.name), ...LOCAL_TOOLS].sort());
  assert.equal(tools.length, 7);
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  for (const t of catalog) {
    assert.deepEqual(byName[t.name].inputSchema, t.inputSchema, `${t.name}: the registry's schema`);
    assert.equal(byName[t.name].description, t.description);
  }
  const ann = (name) => ({ readOnly: false, untrustedContent: false, consequential: false, ...byName[name].annotations });
  // Server tools: read-only as the registry says, their results untrusted content.
  for (const name of ['search_site', 'get_page', 'get_free_slots']) {
    assert.deepEqual(ann(name), { readOnly: true, untrustedContent: true, consequential: false }, name);
  }
  assert.deepEqual(ann('resume_conversation'), { readOnly: true, untrustedContent: true, consequential: false });
  assert.deepEqual(ann('save_conversation'), { readOnly: false, untrustedContent: false, consequential: true });
  assert.deepEqual(ann('open_page'), { readOnly: false, untrustedContent: false, consequential: false });
  assert.deepEqual(ann('prefill_contact_form'), { readOnly: false, untrustedContent: false, consequential: false });
  assert.equal(byName.save_conversation.inputSchema.properties.messages.maxItems, 50);
});

test('executeTool on search_site gives the JSON endpoint’s answer', async () => {
  const args = { query: 'accessibility audit with screen reader testing', limit: 3 };
  const native = await callNative(page, 'search_site', args);
  assert.equal(native.isError, false, resultText(native));
  assert.deepEqual(mcpShape(native), mcpShape(await callDirect('search_site', args)));
  assert.ok(native.structuredContent.results.length > 0);
});

test('an executeTool whose signal is aborted cancels the server request; the shared provider call goes on and fills the cache', async () => {
  const before = { cancelled: embed.cancelled, started: embed.slowStarted, lines: logs.serve.length };
  // The call starts in the tab; it is aborted once the question has reached the provider
  // (which holds it for 8 s).
  await page.evaluate(() => {
    const call = (window.__call = { ctl: new AbortController(), settled: '', aborted: 0, ms: 0 });
    (async () => {
      const tool = (await document.modelContext.getTools()).find((t) => t.name === 'search_site');
      try {
        await document.modelContext.executeTool(tool, { query: 'slowpoke question about audits' }, { signal: call.ctl.signal });
        call.settled = 'resolved';
      } catch (e) {
        call.settled = `rejected ${e.name}`;
      }
      call.ms = performance.now() - call.aborted;
    })();
  });
  await until('the query to reach the provider', async () => embed.slowStarted === before.started + 1);
  await page.evaluate(() => {
    window.__call.aborted = performance.now();
    window.__call.ctl.abort();
  });
  const outcome = await (await page.waitForFunction(() => window.__call.settled && { settled: window.__call.settled, ms: window.__call.ms })).jsonValue();
  assert.equal(outcome.settled, 'rejected AbortError');
  assert.ok(outcome.ms < 5000, `the call settled ${outcome.ms} ms after the abort`);
  assert.equal(embed.slowStarted, before.started + 1, 'the query reached the provider once');
  // The tab's fetch was aborted; sitetools noticed the disconnect and ended the request.
  // (Request lines are written a moment after their response: the earlier tests' calls
  // may still arrive, all answered 200.)
  const line = await until('sitetools to log the call', async () =>
    requestLines(logs.serve.slice(before.lines)).find((l) => l.tool === 'search_site' && l.status !== 200),
  );
  // Logged as the client's going away (499, as nginx has it), not as a failure.
  assert.equal(line.status, 499, JSON.stringify(line));
  assert.equal(line.code, 'client_closed', JSON.stringify(line));
  assert.equal(line.level, 'INFO', JSON.stringify(line));
  // The provider call is not the visitor's alone (identical queries share it) and is
  // paid for once sent: it goes on, and its answer fills the cache, so the same question
  // again costs no provider call.
  embed.release();
  const again = await callNative(page, 'search_site', { query: 'slowpoke question about audits' });
  assert.equal(again.isError, false, resultText(again));
  assert.ok(again.structuredContent.results.length > 0, JSON.stringify(again));
  assert.equal(again.structuredContent.degraded, undefined, JSON.stringify(again.structuredContent));
  assert.equal(embed.cancelled, before.cancelled, 'the abort cancelled the shared provider call');
  assert.equal(embed.slowStarted, before.started + 1, 'the same question again reached the provider');
});

test('a new catalog (a new ETag) withdraws the registrations and registers the new set', async () => {
  const tab = await page.context().newPage();
  const errors = [];
  tab.on('pageerror', (e) => errors.push(String(e)));
  try {
    await tab.goto(`${site}/pricing`);
    await until('the tools', async () => (await tab.webmcp.tools()).length === 7);
    // The registry changes (a new version of sitetools): the catalog has a new ETag.
    let served = 0;
    await tab.route('**/api/chat/tools', async (route) => {
      if (route.request().method() !== 'GET') return route.continue();
      served++;
      const res = await route.fetch({ headers: { ...route.request().headers(), 'if-none-match': '' } });
      const body = await res.json();
      body.tools = body.tools.map((t) => (t.name === 'search_site' ? { ...t, description: 'Search the site (new version).' } : t));
      return route.fulfill({ response: res, json: body, headers: { ...res.headers(), etag: '"a-new-version"' } });
    });
    // The bridge revalidates when the visitor comes back to the tab.
    await tab.evaluate(() => document.dispatchEvent(new Event('visibilitychange')));
    await until('the new description', async () => (await tab.webmcp.tools()).find((t) => t.name === 'search_site')?.description === 'Search the site (new version).');
    const tools = await tab.webmcp.tools();
    assert.equal(tools.length, 7, tools.map((t) => t.name).join(' '));
    assert.ok(served >= 1);
    const r = await callNative(tab, 'search_site', { query: 'pricing', limit: 1 });
    assert.equal(r.isError, false, resultText(r));
    assert.deepEqual(errors, []);
  } finally {
    await tab.close();
  }
});

test('a host page that registered search_site first keeps it; every other tool registers', async () => {
  const tab = await page.context().newPage();
  const warnings = [];
  const errors = [];
  tab.on('console', (m) => m.type() === 'warning' && warnings.push(m.text()));
  tab.on('pageerror', (e) => errors.push(String(e)));
  try {
    await tab.addInitScript(() => {
      document.modelContext.registerTool({
        name: 'search_site',
        description: 'The host page’s own search',
        inputSchema: { type: 'object', properties: {} },
        execute: () => ({ content: [{ type: 'text', text: 'host' }] }),
      });
    });
    await tab.goto(`${site}/pricing`);
    await until('the bridge to register the other tools', async () => (await tab.webmcp.tools()).length === 7);
    const tools = await tab.webmcp.tools();
    assert.equal(tools.find((t) => t.name === 'search_site').description, 'The host page’s own search');
    assert.deepEqual(tools.map((t) => t.name).sort(), [...catalog.map((t) => t.name), ...LOCAL_TOOLS].sort());
    await until('the warning', async () => warnings.some((w) => w.includes('search_site') && /already/.test(w)));
    assert.deepEqual(errors, []);
    const r = await callNative(tab, 'get_page', { url: '/pricing' });
    assert.equal(r.isError, false, resultText(r));
  } finally {
    await tab.close();
  }
});

test('open_page refuses every hostile url in real Chromium; the tab stays on the site', async () => {
  await page.goto(`${site}/pricing`);
  await until('the tools again', async () => (await page.webmcp.tools()).length === 7);
  await page.evaluate(() => (window.__marker = 'same document'));
  const inputs = hostileURLs(site);
  assert.ok(inputs.length >= 30);
  for (const url of inputs) {
    const r = await callNative(page, 'open_page', { url });
    assert.equal(r.isError, true, `${JSON.stringify(url)}: ${resultText(r)}`);
    assert.match(resultText(r), /^Refused: /, JSON.stringify(url));
  }
  assert.equal(await page.evaluate(() => location.href), `${site}/pricing`, 'the tab itself, not what Playwright heard last');
  assert.equal(await page.evaluate(() => window.__marker), 'same document');
  // And a good one still navigates.
  const ok = await callNative(page, 'open_page', { url: '/services/' });
  assert.equal(ok.isError, false, resultText(ok));
  assert.equal(ok.structuredContent.url, '/services/');
  await showsPath(page, '/services/');
});

test('a streamed answer full of hostile links renders none of them as a link off the site', async () => {
  await page.click('#sitetools-chat-launcher');
  if (await page.isVisible('#sitetools-chat-consent-accept')) await page.click('#sitetools-chat-consent-accept');
  await page.fill('#sitetools-chat-input', 'Where can I read more?');
  await page.press('#sitetools-chat-input', 'Enter');
  await until('the answer', async () =>
    page.evaluate(() => {
      const log = document.querySelector('sitetools-chat').shadowRoot.querySelector('#sitetools-chat-log');
      return log.getAttribute('aria-busy') !== 'true' && log.querySelectorAll('.msg-assistant').length > 0;
    }),
  );
  const links = await page.evaluate(() =>
    [...document.querySelector('sitetools-chat').shadowRoot.querySelectorAll('#sitetools-chat-log a')].map((a) => ({ href: a.href, attr: a.getAttribute('href') })),
  );
  assert.ok(links.some((l) => l.href === `${site}/pricing`), JSON.stringify(links));
  for (const l of links) {
    assert.equal(new URL(l.href).origin, site, JSON.stringify(l));
    assert.ok(!l.attr.startsWith('//') && !/^[a-z]+:/i.test(l.attr.replace(/^https?:\/\/[^/]+/, '')), JSON.stringify(l));
  }
  // Clicking the one real link stays in the tab, through the site's router.
  await page.evaluate(() => (window.__marker = 'before the link'));
  await page.click('#sitetools-chat-log .msg-assistant a');
  await showsPath(page, '/pricing');
  assert.equal(await page.evaluate(() => window.__marker), 'before the link');
});

test('the relay path and the native path work at the same time in one tab', async () => {
  if (await page.isHidden('#sitetools-chat-panel')) await page.click('#sitetools-chat-launcher');
  await run.connectPill(page);
  await run.untilListed(['search_site']);
  const args = { query: 'cloud cost review', limit: 2 };
  const [viaRelay, viaNative] = await Promise.all([
    run.callTool('search_site', args),
    callNative(page, 'search_site', args),
  ]);
  const direct = await callDirect('search_site', args);
  assert.deepEqual(mcpShape(viaRelay), mcpShape(direct));
  assert.deepEqual(mcpShape(viaNative), mcpShape(direct));
  assert.equal((await page.webmcp.tools()).length, 7);
  assert.deepEqual(seen.pageErrors, []);
  assert.deepEqual(seen.console.filter((l) => /Content Security Policy/i.test(l)), []);
});

// ---------------------------------------------------------------------------------------
// Tool activity in the chat

/** The chat's tool lines and its status region, as the visitor's screen reader meets them. */
const chatActivity = (p) =>
  p.evaluate(() => {
    const root = document.querySelector('sitetools-chat').shadowRoot;
    const status = root.querySelector('#sitetools-chat-status');
    const last = [...root.querySelectorAll('#sitetools-chat-log .msg-assistant')].at(-1);
    return {
      busy: root.querySelector('#sitetools-chat-log').getAttribute('aria-busy') === 'true',
      status: { text: status.textContent, live: status.getAttribute('aria-live'), role: status.getAttribute('role') },
      lines: [...(last?.querySelectorAll('.activity > .tool') ?? [])].map((li) => ({
        state: li.dataset.state,
        ariaBusy: li.getAttribute('aria-busy'),
        summary: li.querySelector('summary').textContent,
        open: li.querySelector('details').open,
        detail: li.querySelector('.tool-detail').textContent,
        detailVisible: li.querySelector('.tool-detail').checkVisibility(),
        beforeText: !!(li.closest('.activity').compareDocumentPosition(last.querySelector('.msg-text')) & Node.DOCUMENT_POSITION_FOLLOWING),
      })),
      listLabel: last?.querySelector('.activity')?.getAttribute('aria-label') ?? null,
    };
  });

test('a slow tool round shows as one folded, busy line, announced politely; then done, and never sent to the model', async () => {
  if (await page.isHidden('#sitetools-chat-panel')) await page.click('#sitetools-chat-launcher');
  if (await page.isVisible('#sitetools-chat-consent-accept')) await page.click('#sitetools-chat-consent-accept');
  const calls = llm.calls;
  const slow = embed.slowStarted;
  const answered = page.waitForResponse((res) => res.url() === `${site}/api/chat`, { timeout: 30000 });
  await page.fill('#sitetools-chat-input', 'slowpoke: do you do accessibility audits?');
  await page.press('#sitetools-chat-input', 'Enter');

  // While the search waits for its embedding: one line, busy, folded, before the answer.
  const running = await until('a running tool line', async () => {
    const a = await chatActivity(page);
    // (the provider holds the search's embedding: the round is under way)
    const held = embed.slowStarted > slow;
    return held && a.lines.length === 1 && a.lines[0].state === 'running' && a.status.text === 'Searching the site…' && a;
  });
  assert.deepEqual(running.lines[0], {
    state: 'running', ariaBusy: 'true', summary: '…Searching the site…', open: false,
    detail: 'Tool search_site: running', detailVisible: false, beforeText: true,
  });
  assert.equal(running.listLabel, 'Tools used for this answer');
  assert.ok(running.busy, 'the log is busy while the turn runs');
  assert.deepEqual(running.status, { text: 'Searching the site…', live: 'polite', role: 'status' });
  // E2E_ACTIVITY_SCREENSHOT=/tmp/activity keeps pictures of the turn: -running.png, -done.png.
  const shot = process.env.E2E_ACTIVITY_SCREENSHOT;
  if (shot) await page.screenshot({ path: `${shot}-running.png` });

  // The visitor unfolds the line while it runs; then the embedding comes.
  await page.click('#sitetools-chat-log .msg-assistant:last-child .tool summary');
  embed.release();

  // Done: still one line, now done, still unfolded and focused: it names the tool and its
  // status.
  await answered;
  const done = await until('the turn to end', async () => {
    const a = await chatActivity(page);
    return !a.busy && a.lines.length === 1 && a.lines[0].state === 'done' && a;
  });
  assert.equal(done.lines[0].summary, '✓Searched the site');
  assert.equal(done.lines[0].ariaBusy, null);
  assert.deepEqual([done.lines[0].open, done.lines[0].detailVisible, done.lines[0].detail], [true, true, 'Tool search_site: done']);
  const focused = await page.evaluate(() => document.querySelector('sitetools-chat').shadowRoot.activeElement?.closest('.tool') !== null);
  assert.ok(focused, 'focus left the line the visitor had unfolded');
  if (shot) await page.screenshot({ path: `${shot}-done.png` });

  // The model saw the tool's result as a tool message and nothing of the line as text.
  assert.equal(llm.calls, calls + 2);
  const stored = (await page.evaluate(() => JSON.parse(localStorage.getItem('sitetools.chat.transcript')))).messages.at(-1);
  assert.deepEqual(stored.tools, [{ name: 'search_site', ok: true }]);
  // The next question sends the transcript: role and content only.
  const next = page.waitForRequest((r) => r.url() === `${site}/api/chat`);
  await page.fill('#sitetools-chat-input', 'Thanks, and what does it cost?');
  await page.press('#sitetools-chat-input', 'Enter');
  const body = JSON.parse((await next).postData());
  for (const m of body.messages) assert.deepEqual(Object.keys(m).sort(), ['content', 'role']);
  await until('the model to be asked again', async () => llm.calls === calls + 3);
  const sent = JSON.stringify(llm.bodies.slice(calls));
  for (const words of ['Searching the site', 'Searched the site', 'Tool search_site']) assert.ok(!sent.includes(words), words);
});

test('a failed tool shows as failed, in the visitor’s language, without internals', async () => {
  await until('the chat to be idle', async () => !(await chatActivity(page)).busy);
  await page.evaluate(() => (document.documentElement.lang = 'de'));
  try {
    await until('the German widget', async () => (await page.textContent('#sitetools-chat-send')).trim() === 'Senden');
    await page.fill('#sitetools-chat-input', 'backwards: welche Termine sind frei?');
    await page.press('#sitetools-chat-input', 'Enter');
    const failed = await until('a failed line', async () => {
      const a = await chatActivity(page);
      return !a.busy && a.lines.length === 1 && a.lines[0].state === 'failed' && a;
    });
    assert.equal(failed.lines[0].summary, '✕Suche nach freien Terminen fehlgeschlagen');
    assert.equal(failed.lines[0].detail, 'Tool get_free_slots: fehlgeschlagen');
    // The tool's own message ("ends before it starts") is for the model, not the line.
    assert.doesNotMatch(JSON.stringify(failed), /before it starts|invalid|error/i);
  } finally {
    await page.evaluate(() => (document.documentElement.lang = 'en'));
  }
});
