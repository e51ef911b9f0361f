// What the end-to-end tests share: processes they start and stop, a fresh database,
// the relay with the visitor's MCP client, Chromium, a Run that holds them for a test
// file, and fake LLM and embeddings providers. Real parts only, on loopback; the fakes are
// the paid providers, which speak the real OpenAI wire format and count their calls.
// What the tests do in the tab and check of it is in steps.js.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
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
 * `database` and the demo site (or the Markdown folder `dir`) ingested with urls on site.
 * Nothing of the caller's environment leaks in: it gets the example availability, the
 * relay's widget, no admin listener, info logs, and `env` on top (the ingest too: an
 * embeddings provider there embeds the pages). It returns the catalog's tools once it is
 * ready.
 */
export async function startSitetools(procs, { home, port, site, database, env = {}, dir = DEMO_SITE }, logs) {
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
  await run(BIN, ['ingest', '--dir', dir, '--base-url', site], { env: full, cwd: repo, maxBuffer: 1 << 26 });
  procs.start('serve', BIN, ['serve'], { env: full, cwd: repo }, logs);
  const base = `http://${full.LISTEN_ADDR}`;
  await until('sitetools to be ready', async () => (await fetch(`${base}/readyz`)).ok, { timeout: 30000 });
  return (await (await fetch(`${base}/api/chat/tools`)).json()).tools;
}

export const NEXT_DIR = path.join(repo, 'deploy/nextjs');
export const NEXT_BIN = path.join(NEXT_DIR, 'node_modules/.bin/next');
/** What startNext needs, for requireInstalled. */
export const NEXT_BUILT = [
  ['Next.js (deploy/dev/browser.sh nextjs)', NEXT_BIN],
  ['the built frontend (deploy/dev/browser.sh nextjs)', path.join(NEXT_DIR, '.next/BUILD_ID')],
];

/**
 * startNext starts `next start` of deploy/nextjs (built) on 127.0.0.1:port in front of
 * sitetools at `sitetools`, with `env` on top, and returns its origin once it answers.
 */
export async function startNext(procs, { port, sitetools, home, env = {} }, logs) {
  procs.start(
    'next',
    NEXT_BIN,
    ['start', '--port', String(port), '--hostname', '127.0.0.1'],
    { cwd: NEXT_DIR, env: { PATH: process.env.PATH, HOME: home, NODE_ENV: 'production', NEXT_TELEMETRY_DISABLED: '1', SITETOOLS_URL: sitetools, ...env } },
    logs,
  );
  const origin = `http://127.0.0.1:${port}`;
  await until('next start to answer', async () => (await fetch(`${origin}/`)).ok, { timeout: 30000 });
  return origin;
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

/** relayPrefix is what the relay puts before the name of a tool of the tab on origin. */
export function relayPrefix(origin) {
  return `${new URL(origin).host.replace(/[.:]/g, '_')}-`;
}

// ---------------------------------------------------------------------------------------
// Chromium

/** launchBrowser starts headless Chromium with CHROMIUM_FLAGS and `flags`. */
export function launchBrowser(flags = []) {
  return chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_FLAGS, ...flags], headless: true });
}

// What watchedPage records, by the name of its array in `seen`.
const recorders = [
  ['requests', 'request', (r) => ({ url: r.url(), method: r.method(), origin: r.headers().origin, body: r.postData() ?? '' })],
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

// ---------------------------------------------------------------------------------------
// One test file's run

/**
 * A Run is what one test file starts and stops: its processes and their output (`logs`,
 * by process), a HOME of its own, the relay with the visitor's MCP client, sitetools, the
 * fake providers, and Chromium with the tab the tests share, whose doings go into `seen`
 * (see watchedPage).
 */
export class Run {
  procs = new Procs();
  fakes = [];

  /** seen: the arrays of watchedPage to record; moreLogs: the names of other processes. */
  constructor(seen, ...moreLogs) {
    this.seen = seen;
    this.logs = Object.fromEntries(['serve', 'relay', 'mcp', ...moreLogs].map((name) => [name, []]));
  }

  /** begin checks what the run needs is installed (see requireInstalled) and makes its HOME. */
  begin(name, more) {
    requireInstalled(more);
    this.home = fs.mkdtempSync(path.join(os.tmpdir(), `sitetools-${name}-`));
  }

  /** fake is the fake provider that starting gives, closed when the run stops. */
  async fake(starting) {
    const fake = await starting;
    this.fakes.push(fake);
    return fake;
  }

  /** startRelay starts the relay and the visitor's MCP client (see startRelay). */
  async startRelay() {
    this.relay = await startRelay(this.procs, this.home, this.logs);
    return this.relay;
  }

  /**
   * startSitetools starts sitetools in the run's HOME (see startSitetools); its tools. Its
   * site is the origin of the pages the tab shows, whose tools the relay offers.
   */
  startSitetools({ port, site, database, env, dir }) {
    this.sitetools = `http://127.0.0.1:${port}`;
    this.site = site;
    this.prefix = relayPrefix(site);
    return startSitetools(this.procs, { home: this.home, port, site, database, env, dir }, this.logs.serve);
  }

  /** callDirect calls a tool on sitetools' own JSON endpoint, as a server does. */
  callDirect(name, args, headers) {
    return callJSON(this.sitetools, name, args, headers);
  }

  /** callTool calls a tool of the tab through the relay, as the visitor's MCP client does. */
  callTool(name, args = {}) {
    return this.relay.client.callTool({ name: this.prefix + name, arguments: args }, undefined, { timeout: 45000 });
  }

  /**
   * untilListed polls the MCP client's tools until the tab's tools of those names are all
   * there (on Node 20 the relay's daemon never sends tools/list_changed); what it listed.
   */
  untilListed(names) {
    const want = names.map((n) => this.prefix + n);
    return until(
      'the tab’s tools to reach the client',
      async () => {
        const got = (await this.relay.client.listTools()).tools.map((t) => t.name);
        return want.every((n) => got.includes(n)) && got;
      },
      { timeout: 20000, every: 300 },
    );
  }

  /** openTab launches Chromium (see launchBrowser) and opens the watched tab. */
  async openTab(flags) {
    this.browser = await launchBrowser(flags);
    return watchedPage(this.browser, this.seen);
  }

  /**
   * connectPill does what the visitor does in the open flyout: opens the pill's card,
   * pastes a token their MCP client minted, connects, and waits for the pill to turn green.
   */
  async connectPill(page) {
    const token = await mintToken(this.relay.client);
    (this.tokens ??= []).push(token);
    await page.click('#sitetools-webmcp-pill');
    assert.equal(await page.getAttribute('#sitetools-webmcp-pill', 'aria-expanded'), 'true');
    await page.fill('#sitetools-webmcp-token', token);
    await page.click('#sitetools-webmcp-connect');
    await until('the pill to turn green', async () => (await page.getAttribute('#sitetools-webmcp-pill', 'data-state')) === 'connected');
  }

  /**
   * assertTabStayedHome checks what the tab did: every request went to the site, every
   * WebSocket (the register and channel sockets at least) to the relay, and there was no
   * page error or CSP violation.
   */
  assertTabStayedHome() {
    const { requests, sockets, pageErrors } = this.seen;
    assert.deepEqual(
      requests.filter((r) => new URL(r.url).origin !== this.site),
      [],
      'requests to other origins',
    );
    assert.ok(sockets.length >= 2, 'register and channel sockets');
    assert.deepEqual(
      sockets.filter((u) => !u.startsWith(`ws://localhost:${this.relay.port}/`)),
      [],
    );
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(this.seen.console.filter((l) => /Content Security Policy/i.test(l)), [], 'CSP violations');
  }

  /**
   * assertServedCleanly checks sitetools' log: the tab's search_site calls reached it, and
   * no request was refused for its origin or failed.
   */
  assertServedCleanly() {
    const requests = requestLines(this.logs.serve);
    assert.ok(requests.some((l) => l.route === '/api/chat/tools' && l.method === 'POST' && l.tool === 'search_site'));
    assert.deepEqual(
      requests.filter((l) => l.code === 'origin_not_allowed' || l.status === 403 || l.status >= 500),
      [],
    );
  }

  /**
   * stop stops everything the run started and removes its HOME; with E2E_VERBOSE set, it
   * prints the logs and the tab's console.
   */
  async stop() {
    await this.relay?.client.close().catch(() => {});
    await this.browser?.close().catch(() => {});
    await this.procs.stopAll();
    for (const fake of this.fakes) await fake.close();
    if (this.home) fs.rmSync(this.home, { recursive: true, force: true });
    if (process.env.E2E_VERBOSE) {
      for (const [k, v] of Object.entries(this.logs)) console.log(`--- ${k}\n${v.join('\n')}`);
      console.log(`--- console\n${this.seen.console.join('\n')}`);
    }
  }
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
 * apart), a finish chunk, a usage chunk when asked, then [DONE]. It counts calls and keeps
 * the request bodies. A script `toolCalls(body)` that returns calls ([{name, arguments}])
 * makes that answer a round of tool calls instead, streamed as OpenAI streams them.
 */
export async function startFakeLLM({ words = 'Yes, we do accessibility audits: see the services page.'.split(' '), gap = 150, toolCalls = () => null } = {}) {
  const state = { calls: 0, words, gap, toolCalls, bodies: [] };
  const server = fakeProvider('/v1/chat/completions', async (reqBody, res) => {
    state.calls++;
    state.bodies.push(reqBody);
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
    const calls = state.toolCalls(reqBody);
    if (calls?.length) {
      calls.forEach((c, index) =>
        send(choice({ tool_calls: [{ index, id: `call_${state.calls}_${index}`, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } }] })),
      );
      send(choice({}, 'tool_calls'));
      if (reqBody.stream_options?.include_usage) send([], { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 });
      res.end('data: [DONE]\n\n');
      return;
    }
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
 * after `slowMs` (the state's, which a test may change), or at once when the test calls
 * `release()`; a client that goes away before then is counted in `cancelled`.
 */
export async function startFakeEmbeddings({ dims = 64, slowWord = 'slowpoke', slowMs = 8000 } = {}) {
  const held = new Set();
  const state = {
    calls: 0,
    cancelled: 0,
    slowStarted: 0,
    slowMs,
    release() {
      for (const answer of held) answer();
    },
  };
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
        const answer = () => {
          clearTimeout(t);
          held.delete(answer);
          resolve(false);
        };
        const t = setTimeout(answer, state.slowMs);
        held.add(answer);
        res.on('close', () => {
          if (!res.writableEnded) {
            clearTimeout(t);
            held.delete(answer);
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
