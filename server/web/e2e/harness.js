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
 * startSitetools migrates env's database, ingests the demo site with urls on site,
 * starts `sitetools serve` with env, and returns its catalog's tools once it is ready.
 */
export async function startSitetools(procs, env, site, logs) {
  await run(BIN, ['migrate'], { env, cwd: repo });
  await run(BIN, ['ingest', '--dir', 'deploy/demo/site', '--base-url', site], { env, cwd: repo, maxBuffer: 1 << 24 });
  procs.start('serve', BIN, ['serve'], { env, cwd: repo }, logs);
  const base = `http://${env.LISTEN_ADDR}`;
  await until('sitetools to be ready', async () => (await fetch(`${base}/readyz`)).ok, { timeout: 30000 });
  return (await (await fetch(`${base}/api/chat/tools`)).json()).tools;
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
