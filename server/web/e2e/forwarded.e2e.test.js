// Who a visitor is, behind the site's own frontend: the client address sitetools keys its
// rate limit (and a tool's Idempotency-Key) by is the one the socket peer of the
// frontend's proxy chain established, never one the client wrote. Real parts only, on
// loopback:
//
//   a client on 127.0.0.2 or 127.0.0.3 → nginx (deploy/proxy/nginx.conf, only its
//   addresses changed) → `next start` (deploy/nextjs, told to read X-Forwarded-For)
//   → `sitetools serve` → PostgreSQL
//
// and `next start` exposed on its own, as it comes. The one stand-in is an HTTP server
// in sitetools' place that records which request headers the frontend passes on.
//
//   cd server/web && TEST_DATABASE_URL=… SITETOOLS_BIN=…/bin/sitetools node --test e2e/forwarded.e2e.test.js
//
// Needs bin/sitetools (make build), deploy/dev/browser.sh (npm packages, deploy/nextjs
// built), deploy/dev/proxies.sh (nginx) and deploy/dev/postgres.sh.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { Run, freePort, portOpen, repo, until } from './harness.js';

const NEXT_DIR = path.join(repo, 'deploy/nextjs');
const NEXT_BIN = path.join(NEXT_DIR, 'node_modules/.bin/next');
const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => fs.existsSync(p)) ?? '/usr/sbin/nginx';
const LIMIT = 5;
// Visitors of the nginx origin, each from a loopback address of its own. The Next.js
// servers, nginx and sitetools are all on 127.0.0.1, the one trusted proxy address.
const VISITOR = '127.0.0.2';
const NEIGHBOUR = '127.0.0.3';

const run = new Run({ console: [] }, 'next', 'bare', 'recorded');
let edge; // http://127.0.0.1:<port>: nginx in front of `next start`, the site's origin
let bare; // `next start` on its own, as it comes
let recorded; // `next start` on its own, with the recorder in sitetools' place
const seen = []; // the requests the recorder got: {url, headers}

/** startNext starts `next start` of deploy/nextjs on port (a free one if none); its origin. */
async function startNext(name, env, port) {
  port ??= await freePort();
  run.procs.start(
    name,
    NEXT_BIN,
    ['start', '--port', String(port), '--hostname', '127.0.0.1'],
    { cwd: NEXT_DIR, env: { PATH: process.env.PATH, HOME: run.home, NODE_ENV: 'production', NEXT_TELEMETRY_DISABLED: '1', ...env } },
    run.logs[name],
  );
  const origin = `http://127.0.0.1:${port}`;
  await until(`${name}: next start to answer`, async () => (await fetch(`${origin}/`)).ok, { timeout: 30000 });
  return origin;
}

/**
 * startNginx runs deploy/proxy/nginx.conf with only its addresses changed: it listens on
 * a free loopback port and passes every path to upstream (the frontend, which passes the
 * sitetools paths on itself). Its origin.
 */
async function startNginx(upstream) {
  let conf = fs.readFileSync(path.join(repo, 'deploy/proxy/nginx.conf'), 'utf8');
  const port = await freePort();
  assert.match(conf, /^\s*listen 8080;$/m);
  conf = conf.replace(/^(\s*)listen 8080;$/m, `$1listen 127.0.0.1:${port};`);
  const upstreams = /^(\s*)set \$(\w+) http:\/\/sitetools:8080;$/gm;
  assert.match(conf, upstreams);
  conf = conf.replace(upstreams, `$1set $$$2 ${upstream};`);
  const dir = path.join(run.home, 'nginx');
  // Workers may run as another user (nobody, when started as root).
  fs.mkdirSync(dir, { mode: 0o755 });
  fs.chmodSync(run.home, 0o755);
  fs.writeFileSync(path.join(dir, 'nginx.conf'), conf);
  // Its output to a file, not a pipe: nginx opens /dev/stdout for its access log, which
  // fails on the socket Node gives a child for a pipe.
  const out = fs.openSync(path.join(dir, 'output'), 'a');
  const p = spawn(NGINX, ['-p', `${dir}/`, '-e', 'stderr', '-c', path.join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: ['ignore', out, out] });
  fs.closeSync(out);
  run.procs.list.push({ name: 'nginx', p, sink: [] });
  await until('nginx to listen', () => {
    assert.equal(p.exitCode, null, `nginx exited: ${fs.readFileSync(path.join(dir, 'output'), 'utf8')}`);
    return portOpen(port);
  });
  return `http://127.0.0.1:${port}`;
}

/** startRecorder stands in for sitetools: it records each request's headers and answers 200. */
async function startRecorder() {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push({ url: req.url, headers: req.headers });
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ content: [{ type: 'text', text: 'recorded' }], isError: false }));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  run.fakes.push({ close: () => new Promise((r) => server.close(r)) });
  return `http://127.0.0.1:${server.address().port}`;
}

/**
 * request sends one request from the loopback address `from` (a connection of its own)
 * and resolves with its status, headers and body.
 */
function request(url, { from = '127.0.0.1', method = 'POST', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, localAddress: from, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** search calls search_site at origin from `from` with the headers a client forged. */
const search = (origin, from, forged = {}) =>
  request(`${origin}/api/chat/tools`, {
    from,
    headers: { 'Content-Type': 'application/json', ...forged },
    body: JSON.stringify({ name: 'search_site', arguments: { query: 'pricing' } }),
  });

/** forgeries is n pairs of a fresh X-Real-IP and X-Forwarded-For, none an address used here. */
const forgeries = (n) =>
  Array.from({ length: n }, (_, i) => ({
    'X-Real-IP': `203.0.113.${i + 1}`,
    'X-Forwarded-For': `198.51.100.${i + 1}, 192.0.2.${i + 1}`,
  }));

const statuses = (responses) => responses.map((r) => r.status);
const expected = (n) => [...Array(Math.min(n, LIMIT)).fill(200), ...Array(Math.max(0, n - LIMIT)).fill(429)];

// ---------------------------------------------------------------------------------------
// Set-up

before(
  async () => {
    run.begin('forwarded-e2e', [
      ['Next.js (deploy/dev/browser.sh nextjs)', NEXT_BIN],
      ['the built frontend (deploy/dev/browser.sh nextjs)', path.join(NEXT_DIR, '.next/BUILD_ID')],
      ['nginx (deploy/dev/proxies.sh)', NGINX],
    ]);
    const sitePort = await freePort();
    const sitetools = `http://127.0.0.1:${sitePort}`;
    const nextPort = await freePort();
    // The order matters only for the site's origin: nginx's port is not known yet, so
    // the index's urls and SITE_URL name the frontend behind it; requests without Origin
    // (these) pass either way.
    await run.startSitetools({
      port: sitePort,
      site: `http://127.0.0.1:${nextPort}`,
      database: 'sitetools_forwarded_e2e',
      env: { TRUSTED_PROXIES: '127.0.0.1/32', RATE_LIMIT_PER_MINUTE: String(LIMIT) },
    });
    const behind = await startNext('next', { SITETOOLS_URL: sitetools, SITETOOLS_CLIENT_ADDRESS_HEADER: 'x-forwarded-for' }, nextPort);
    edge = await startNginx(behind);
    bare = await startNext('bare', { SITETOOLS_URL: sitetools });
    recorded = await startNext('recorded', { SITETOOLS_URL: await startRecorder() });
  },
  { timeout: 180000 },
);

after(() => run.stop());

// ---------------------------------------------------------------------------------------
// The tests, in order: they share sitetools' rate limit.

test('through nginx and next start, a forged X-Real-IP or X-Forwarded-For buys no fresh allowance', async () => {
  const got = [];
  for (const forged of forgeries(LIMIT + 3)) got.push(await search(edge, VISITOR, forged));
  assert.deepEqual(statuses(got), expected(LIMIT + 3), 'eight calls, each with new forged addresses');
  assert.ok(Number(got.at(-1).headers['retry-after']) > 0, 'Retry-After on 429');
  assert.equal(JSON.parse(got.at(-1).body).error.code, 'rate_limited');
});

test('through nginx and next start, naming another visitor’s address neither spends nor borrows their allowance', async () => {
  // The neighbour names the visitor, whose allowance is spent: the neighbour's own is
  // full. Were the forged address believed, these would be 429, and the key of a tool
  // that changes state (scoped by the same client address) would be the visitor's.
  const asVisitor = { 'X-Real-IP': VISITOR, 'X-Forwarded-For': VISITOR };
  const neighbour = [];
  for (let i = 0; i < LIMIT + 1; i++) neighbour.push(await search(edge, NEIGHBOUR, asVisitor));
  assert.deepEqual(statuses(neighbour), expected(LIMIT + 1), 'the neighbour has an allowance of their own, and only one');

  // The visitor names an address nobody used: still their own spent allowance.
  const fresh = { 'X-Real-IP': '127.0.0.9', 'X-Forwarded-For': '127.0.0.9' };
  assert.equal((await search(edge, VISITOR, fresh)).status, 429);
});

test('a bare next start passes no client-written address on: every visitor is the frontend', async () => {
  const got = [];
  for (const forged of forgeries(LIMIT + 3)) got.push(await search(bare, '127.0.0.1', forged));
  assert.deepEqual(statuses(got), expected(LIMIT + 3), 'eight calls, each with new forged addresses');
});

test('the route handlers pass on only the request headers sitetools reads', async () => {
  const secrets = {
    Cookie: 'session=site-session-value',
    Authorization: 'Bearer site-api-token',
    'Proxy-Authorization': 'Basic c2l0ZTpwYXNz',
    'X-Real-IP': '203.0.113.77',
    'X-Forwarded-For': '203.0.113.78',
    Forwarded: 'for=203.0.113.79',
    'X-Site-Internal': 'internal-value',
  };
  const passed = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'Accept-Language': 'de-DE,de;q=0.9',
    Origin: recorded,
    'Idempotency-Key': 'key-1',
    'If-None-Match': '"etag-1"',
    'Mcp-Protocol-Version': '2025-06-18',
    'Mcp-Session-Id': 'session-1',
    'Last-Event-ID': 'event-1',
  };
  const body = JSON.stringify({ name: 'search_site', arguments: { query: 'pricing' } });
  for (const route of ['/api/chat/tools', '/mcp']) {
    seen.length = 0;
    const res = await request(`${recorded}${route}`, { headers: { ...secrets, ...passed }, body });
    assert.equal(res.status, 200, `${route}: ${res.body}`);
    assert.equal(seen.length, 1, `${route} reached the recorder once`);
    const got = seen[0].headers;
    for (const name of Object.keys(secrets)) assert.equal(got[name.toLowerCase()], undefined, `${route} passed ${name} on`);
    for (const [name, value] of Object.entries(passed)) assert.equal(got[name.toLowerCase()], value, `${route}: ${name}`);
    // Nothing else but what the handler sets and fetch adds of its own (cache: 'no-store'
    // adds Cache-Control and Pragma).
    const own = ['host', 'connection', 'content-length', 'transfer-encoding', 'user-agent', 'accept-encoding', 'sec-fetch-mode', 'cache-control', 'pragma', 'x-forwarded-proto', 'x-forwarded-host'];
    const allowed = new Set([...Object.keys(passed).map((n) => n.toLowerCase()), ...own]);
    assert.deepEqual(Object.keys(got).filter((n) => !allowed.has(n)), [], `${route}: headers beyond the allow-list`);
    assert.equal(got['accept-encoding'], 'identity');
  }
});
