// What the end-to-end tests share: processes they start and stop, a fresh database,
// the relay with the visitor's MCP client, Chromium, axe-core, and a fake LLM provider.
// Real parts only, on loopback; the one fake is the paid model, which speaks the real
// OpenAI wire format and counts its calls.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { chromium } from 'playwright-core';

export const run = promisify(execFile);
export const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const repo = path.resolve(webDir, '../..');
export const BIN = process.env.SITETOOLS_BIN || path.join(repo, 'bin/sitetools');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const RELAY = path.join(webDir, 'node_modules/@jason.today/webmcp/build/index.js');
export const WIDGET = path.join(webDir, 'node_modules/@jason.today/webmcp/src/webmcp.js');
export const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const LOCAL_TOOLS = ['open_page', 'prefill_contact_form', 'resume_conversation', 'save_conversation'];
export const DEMO_SITE = path.join(repo, 'deploy/demo/site');
export const DESKTOP = { width: 1280, height: 900 };

/**
 * requireInstalled fails, naming what installs it, on the first that is missing of the
 * sitetools binary, Chromium, the relay and `more` ([what, file] pairs).
 */
export function requireInstalled(more = []) {
  for (const [what, file] of [
    ['the sitetools binary (make build)', BIN],
    ['Chromium (deploy/dev/browser.sh)', CHROMIUM],
    ['the relay (deploy/dev/browser.sh npm)', RELAY],
    ...more,
  ]) {
    assert.ok(fs.existsSync(file), `missing ${what}: ${file}`);
  }
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** until polls fn until it returns something truthy, or fails after timeout ms. */
export async function until(what, fn, { timeout = 15000, every = 100 } = {}) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeout} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

export function portOpen(port) {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' }, () => {
      s.end();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/** Processes started by a test file, stopped in its `after`. */
export class Procs {
  list = [];

  start(name, cmd, args, opts, sink = []) {
    const p = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    this.list.push({ name, p, sink });
    for (const stream of [p.stdout, p.stderr]) {
      let buf = '';
      stream.setEncoding('utf8');
      stream.on('data', (d) => {
        buf += d;
        const lines = buf.split('\n');
        buf = lines.pop();
        sink.push(...lines);
      });
    }
    return p;
  }

  async stopAll() {
    for (const { p } of this.list.reverse()) {
      if (p.exitCode !== null || p.signalCode !== null) continue;
      p.kill('SIGTERM');
      await new Promise((r) => {
        const t = setTimeout(() => {
          p.kill('SIGKILL');
          r();
        }, 5000);
        p.once('exit', () => {
          clearTimeout(t);
          r();
        });
      });
    }
  }
}

/** freshDatabase drops and creates a database on the throwaway cluster; its URL. */
export async function freshDatabase(name) {
  const pg = path.join(repo, 'deploy/dev/postgres.sh');
  const base = (await run(pg, ['start'])).stdout.trim();
  await run('psql', [base, '-qc', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]);
  return (await run(pg, ['createdb', name])).stdout.trim();
}

/**
 * startRelay starts the relay's daemon on a free port with a HOME of its own, and the
 * visitor's MCP client speaking stdio to the relay's MCP side.
 */
export async function startRelay(procs, home, logs) {
  const port = await freePort();
  assert.notEqual(port, 4797);
  const env = { PATH: process.env.PATH, HOME: home };
  // The token between the relay's MCP side and its daemon, written before the daemon
  // starts: in the foreground it reads it only at start-up.
  fs.mkdirSync(path.join(home, '.webmcp'), { mode: 0o700, recursive: true });
  fs.writeFileSync(path.join(home, '.webmcp/.env'), `WEBMCP_SERVER_TOKEN=${randomBytes(16).toString('hex')}\n`, { mode: 0o600 });
  procs.start('relay', process.execPath, [RELAY, '--foreground', '--port', String(port)], { env, cwd: home }, logs.relay);
  await until('the relay to listen', () => portOpen(port));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [RELAY, '--mcp', '--port', String(port)],
    env,
    cwd: home,
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (d) => logs.mcp.push(...String(d).split('\n')));
  const client = new Client({ name: 'sitetools-e2e', version: '1.0.0' });
  await client.connect(transport);
  await until('the relay to offer its own tools', async () => {
    const { tools } = await client.listTools();
    return tools.some((t) => t.name === '_webmcp_get-token');
  });
  return { port, client };
}

/**
 * startSitetools starts `sitetools serve` on 127.0.0.1:port with a fresh database named
 * `database` and the demo site ingested with urls on site. Nothing of the caller's
 * environment leaks in: it gets the example availability, the relay's widget, no admin
 * listener, info logs, and `env` on top. It returns the catalog's tools once it is ready.
 */
export async function startSitetools(procs, { home, port, site, database, env = {} }, logs) {
  const full = {
    PATH: process.env.PATH,
    HOME: home,
    DATABASE_URL: await freshDatabase(database),
    LISTEN_ADDR: `127.0.0.1:${port}`,
    ADMIN_LISTEN_ADDR: 'off',
    SITE_URL: site,
    AVAILABILITY_CONFIG: path.join(repo, 'deploy/availability.example.yaml'),
    WEBMCP_WIDGET_PATH: WIDGET,
    LOG_LEVEL: 'info',
    ...env,
  };
  await run(BIN, ['migrate'], { env: full, cwd: repo });
  await run(BIN, ['ingest', '--dir', DEMO_SITE, '--base-url', site], { env: full, cwd: repo, maxBuffer: 1 << 24 });
  procs.start('serve', BIN, ['serve'], { env: full, cwd: repo }, logs);
  const base = `http://${full.LISTEN_ADDR}`;
  await until('sitetools to be ready', async () => (await fetch(`${base}/readyz`)).ok, { timeout: 30000 });
  return (await (await fetch(`${base}/api/chat/tools`)).json()).tools;
}

/** requestLines is the request lines of sitetools' JSON log. */
export function requestLines(serveLog) {
  return serveLog
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .filter((l) => l.msg === 'request');
}

/** callJSON calls a tool on sitetools' JSON endpoint at base, as a server does. */
export async function callJSON(base, name, args, headers = {}) {
  const res = await fetch(`${base}/api/chat/tools`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify({ name, arguments: args }),
  });
  assert.equal(res.status, 200, `POST /api/chat/tools ${name}`);
  return res.json();
}

export function resultText(r) {
  return r.content.map((c) => c.text).join('\n');
}

export function mcpShape(r) {
  const out = { content: r.content, isError: r.isError === true };
  if (r.structuredContent !== undefined) out.structuredContent = r.structuredContent;
  return out;
}

/** mintToken asks the relay, as the visitor's client does, for a WebMCP token. */
export async function mintToken(client) {
  const minted = await client.callTool({ name: '_webmcp_get-token', arguments: {} });
  const token = resultText(minted).trim().split(/\s+/).pop();
  assert.match(token, /^[A-Za-z0-9+/=]{20,}$/);
  return token;
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
// The browser and the tab

/** launchBrowser starts headless Chromium with CHROMIUM_FLAGS and `flags`. */
export function launchBrowser(flags = []) {
  return chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_FLAGS, ...flags], headless: true });
}

// What watchedPage records, by the name of its array in `seen`.
const recorders = [
  ['requests', 'request', (r) => ({ url: r.url(), method: r.method(), origin: r.headers().origin })],
  ['sockets', 'websocket', (ws) => ws.url()],
  ['console', 'console', (m) => `${m.type()}: ${m.text()}`],
  ['pageErrors', 'pageerror', (e) => String(e)],
  ['dialogs', 'dialog', (d) => d.message()],
];

/**
 * watchedPage opens a desktop-sized tab in a new context of browser and records what it
 * does in those of seen's arrays that exist: requests, WebSocket urls, console lines,
 * page errors, dialogs (a tab that is watched for dialogs must answer each itself).
 */
export async function watchedPage(browser, seen) {
  const page = await (await browser.newContext({ viewport: DESKTOP })).newPage();
  for (const [name, event, record] of recorders) {
    if (seen[name]) page.on(event, (x) => seen[name].push(record(x)));
  }
  return page;
}

/**
 * connectPill does what the visitor does with the open flyout: opens the pill's card,
 * pastes a token their MCP client minted, connects, and waits for the pill to turn green.
 */
export async function connectPill(page, client) {
  const token = await mintToken(client);
  await page.click('#sitetools-webmcp-pill');
  assert.equal(await page.getAttribute('#sitetools-webmcp-pill', 'aria-expanded'), 'true');
  await page.fill('#sitetools-webmcp-token', token);
  await page.click('#sitetools-webmcp-connect');
  await until('the pill to turn green', async () => (await page.getAttribute('#sitetools-webmcp-pill', 'data-state')) === 'connected');
}

/**
 * untilListed polls the relay client's tools until they include every name of want
 * (on Node 20 the relay's daemon never sends tools/list_changed); the names it listed.
 */
export function untilListed(client, want) {
  return until(
    'the tab’s tools to reach the client',
    async () => {
      const got = (await client.listTools()).tools.map((t) => t.name);
      return want.every((n) => got.includes(n)) && got;
    },
    { timeout: 20000, every: 300 },
  );
}

const TYPED_NAME = 'Typed By The Visitor';
const PREFILL = {
  name: 'Name The Client Guessed',
  email: 'visitor@example.org',
  message: 'We would like an accessibility audit of our booking flow.',
};

/**
 * checkPrefill has the MCP client open /contact, types a name into the contact form as
 * the visitor would, then has the client call prefill_contact_form: it must fill the
 * empty fields, keep the typed name and submit nothing. It returns the requests of
 * `requests` (what watchedPage records) that the tab made during the prefill.
 */
export async function checkPrefill(page, callTool, requests) {
  const field = (name) => `form[data-contact-form] [name="${name}"]`;
  const opened = await callTool('open_page', { url: '/contact' });
  assert.equal(opened.isError, false, resultText(opened));
  await page.waitForSelector('form[data-contact-form]');
  await page.fill(field('name'), TYPED_NAME);
  await page.evaluate(() => {
    window.__submits = 0;
    document.addEventListener('submit', () => window.__submits++, true);
  });
  const before = requests.length;
  const r = await callTool('prefill_contact_form', PREFILL);
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

/**
 * assertStayedHome checks what watchedPage recorded of a tab: every request went to
 * origin, every WebSocket (the relay's register and channel sockets at least) to the
 * relay on relayPort, and there was no page error or CSP violation.
 */
export function assertStayedHome(seen, origin, relayPort) {
  const foreign = seen.requests.filter((r) => new URL(r.url).origin !== origin);
  assert.deepEqual(foreign, [], 'requests to other origins');
  assert.ok(seen.sockets.length >= 2, 'register and channel sockets');
  assert.deepEqual(
    seen.sockets.filter((u) => !u.startsWith(`ws://localhost:${relayPort}/`)),
    [],
  );
  assert.deepEqual(seen.pageErrors, []);
  assert.deepEqual(seen.console.filter((l) => /Content Security Policy/i.test(l)), [], 'CSP violations');
}

/**
 * assertServedCleanly checks sitetools' log: the tab's search_site calls reached it, and
 * no request was refused for its origin or failed.
 */
export function assertServedCleanly(serveLog) {
  const requests = requestLines(serveLog);
  assert.ok(requests.some((l) => l.route === '/api/chat/tools' && l.method === 'POST' && l.tool === 'search_site'));
  assert.deepEqual(
    requests.filter((l) => l.code === 'origin_not_allowed' || l.status === 403 || l.status >= 500),
    [],
  );
}

/**
 * tearDown stops what a test file started: the MCP client, the browser, the processes,
 * the fake providers; removes its HOME; and with E2E_VERBOSE set prints the logs and the
 * tab's console.
 */
export async function tearDown({ client, browser, procs, fakes = [], home, logs, seen }) {
  await client?.close().catch(() => {});
  await browser?.close().catch(() => {});
  await procs.stopAll();
  for (const fake of fakes) await fake?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
  if (process.env.E2E_VERBOSE) {
    for (const [k, v] of Object.entries(logs)) console.log(`--- ${k}\n${v.join('\n')}`);
    console.log(`--- console\n${seen.console.join('\n')}`);
  }
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

// ---------------------------------------------------------------------------------------
// A fake LLM provider

/**
 * fakeProvider is an HTTP server that answers POST path with handle(body as JSON, res),
 * and everything else as OpenAI does: 404 for an unknown URL, 400 for a body that is not
 * JSON.
 */
function fakeProvider(path, handle) {
  const fail = (res, status, message) => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ error: { message, type: 'invalid_request_error' } }));
  };
  return http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== path) return fail(res, 404, `Unknown request URL: ${req.method} ${req.url}`);
      let parsed;
      try {
        parsed = JSON.parse(body);
      } catch {
        return fail(res, 400, 'invalid JSON');
      }
      return handle(parsed, res);
    });
  });
}

/**
 * startFakeLLM serves POST /v1/chat/completions as OpenAI does when streaming: a role
 * chunk, the answer's words as content deltas (the first at once, the others `gap` ms
 * apart), a finish chunk, a usage chunk when asked, then [DONE]. It counts calls.
 */
export async function startFakeLLM({ words = 'Yes, we do accessibility audits: see the services page.'.split(' '), gap = 150 } = {}) {
  const state = { calls: 0, words, gap };
  const server = fakeProvider('/v1/chat/completions', async (reqBody, res) => {
    state.calls++;
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    const id = `chatcmpl-fake${state.calls}`;
    const created = Math.floor(Date.now() / 1000);
    let gone = false;
    res.on('close', () => (gone = true));
    const send = (choices, usage) => {
      const chunk = { id, object: 'chat.completion.chunk', created, model: reqBody.model, choices };
      if (reqBody.stream_options?.include_usage) chunk.usage = usage ?? null;
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    };
    const choice = (delta, finish = null) => [{ index: 0, delta, logprobs: null, finish_reason: finish }];
    send(choice({ role: 'assistant', content: '' }));
    for (let i = 0; i < state.words.length && !gone; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, state.gap));
      send(choice({ content: (i ? ' ' : '') + state.words[i] }));
    }
    if (gone) return;
    send(choice({}, 'stop'));
    if (reqBody.stream_options?.include_usage) send([], { prompt_tokens: 50, completion_tokens: state.words.length, total_tokens: 50 + state.words.length });
    res.end('data: [DONE]\n\n');
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  state.url = `http://127.0.0.1:${server.address().port}/v1`;
  state.close = () => new Promise((r) => server.close(r));
  return state;
}

/**
 * firstDelta POSTs one chat turn and measures, from sending the request, the time to
 * the first message.delta and to message.done (ms), reading the raw event stream.
 */
export async function firstDelta(url, { headers = {}, question = 'Do you do accessibility audits?' } = {}) {
  const t0 = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream', ...headers },
    body: JSON.stringify({ conversationId: 'e2e', consent: true, messages: [{ role: 'user', content: question }] }),
  });
  assert.equal(res.status, 200, `POST ${url}: ${res.status}`);
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  let first = -1;
  let done = -1;
  for (;;) {
    const { value, done: end } = await reader.read();
    if (end) break;
    buf += dec.decode(value, { stream: true });
    if (first < 0 && buf.includes('event: message.delta')) first = performance.now() - t0;
    if (buf.includes('event: message.done')) {
      done = performance.now() - t0;
      break;
    }
  }
  await reader.cancel().catch(() => {});
  return { first, done };
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// ---------------------------------------------------------------------------------------
// A fake embeddings provider

/**
 * startFakeEmbeddings serves POST /v1/embeddings as OpenAI does, with deterministic
 * vectors (from a hash of each input). An input containing `slowWord` is answered only
 * after `slowMs`; a client that goes away before then is counted in `cancelled`.
 */
export async function startFakeEmbeddings({ dims = 64, slowWord = 'slowpoke', slowMs = 8000 } = {}) {
  const state = { calls: 0, cancelled: 0, slowStarted: 0 };
  const vector = (text) => {
    const v = [];
    for (let i = 0; v.length < dims; i++) {
      for (const b of createHash('sha256').update(`${i}:${text}`).digest()) {
        if (v.length < dims) v.push(b / 127.5 - 1);
      }
    }
    const n = Math.hypot(...v);
    return v.map((x) => x / n);
  };
  const server = fakeProvider('/v1/embeddings', async (r, res) => {
    state.calls++;
    const inputs = Array.isArray(r.input) ? r.input : [r.input];
    if (inputs.some((s) => String(s).includes(slowWord))) {
      state.slowStarted++;
      const gone = await new Promise((resolve) => {
        const t = setTimeout(() => resolve(false), slowMs);
        res.on('close', () => {
          if (!res.writableEnded) {
            clearTimeout(t);
            resolve(true);
          }
        });
      });
      if (gone) {
        state.cancelled++;
        return;
      }
    }
    const tokens = inputs.reduce((n, s) => n + Math.ceil(String(s).length / 4), 0);
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(
      JSON.stringify({
        object: 'list',
        data: inputs.map((s, index) => ({ object: 'embedding', index, embedding: vector(String(s)) })),
        model: r.model,
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      }),
    );
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  state.url = `http://127.0.0.1:${server.address().port}/v1`;
  state.dims = dims;
  state.close = () => new Promise((r) => server.close(r));
  return state;
}
