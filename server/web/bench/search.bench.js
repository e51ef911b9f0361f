// How long a visitor waits for <sitetools-search>'s results as they type, on a Next.js
// site: from a keystroke's keydown to the listbox laid out with the results for the text
// that keystroke left, in Chromium on /search of deploy/nextjs (`next start`) in front of
// `sitetools serve`, on the demo site and on the generated 10 000-page site of the Go
// benchmarks (`go run ./bench -write-scale-site DIR`, about 100 000 chunks), each
// ingested with the local embedder into a fresh database. Realistic queries are typed a
// character at a time, each on a freshly loaded page (so that no keystroke is answered
// from the element's own cache of answers), and every keystroke from the second
// character on is timed. Goal: p50 ≤ 50 ms.
//
// The baseline, measured in the same run, is sitetools' own share: the same instant
// searches (the queries the keystrokes asked) sent again from Node straight to
// sitetools, with the handler's own time as sitetools logs it, each followed by the same
// request through `next start`. The report splits a keystroke into the element's wait
// before it asks, the request as the browser's Resource Timing sees it, and the answer
// to the results laid out.
//
//   cd server/web && TEST_DATABASE_URL=… SITETOOLS_BIN=…/bin/sitetools node bench/search.bench.js
//   (make bench runs it after render.bench.js)
//
// It prints the report as Markdown and writes it to docs/benchmarks-browser-search.md. A
// missed goal is reported, not a failure; a keystroke whose results are not shown, or
// not its own, fails the run.
// Needs bin/sitetools (make build), deploy/dev/browser.sh (Chromium, npm packages and
// deploy/nextjs built), deploy/dev/postgres.sh and Go (for the generated site).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  DEMO_SITE,
  NEXT_BUILT,
  Procs,
  freePort,
  launchBrowser,
  repo,
  requestLines,
  requireInstalled,
  run,
  startNext,
  startSitetools,
  until,
} from '../e2e/harness.js';

const GOAL_MS = 50;
const GAP_MS = 120; // a keystroke every 120 ms at most: a fast typist's pace
const TIMEOUT_MS = 5000; // a keystroke whose results take longer fails the run
const REPORT = path.join(repo, 'docs/benchmarks-browser-search.md');
const GO = process.env.GO || 'go';
const HOST = 'main sitetools-search';
const PG = path.join(repo, 'deploy/dev/postgres.sh');

// What visitors of the demo site would type (about 300 keystrokes from the second
// character on).
const DEMO_QUERIES = [
  'accessibility audit cost',
  'cloud cost review',
  'headless cms migration',
  'pgvector hybrid search',
  'cookieless analytics',
  'data engineering',
  'privacy engineering gdpr',
  'book an appointment',
  'performance budgets',
  'wcag 2.2 changes',
  'kubernetes nodes',
  'nat gateway',
  'screen reader testing',
  'international transfers',
  'case study freight',
  'dental practice',
  'who is on the team',
  'contact email',
];

/**
 * scaleQueries reads n pages spread over the generated site and makes a visitor's query
 * of each: the first two words of its title or of one of its section headings, as
 * someone who saw the page would remember it.
 */
function scaleQueries(dir, n) {
  const files = fs
    .readdirSync(dir, { recursive: true })
    .filter((f) => f.endsWith('.md'))
    .sort();
  const out = [];
  for (let i = 0; out.length < n; i++) {
    const src = fs.readFileSync(path.join(dir, files[Math.floor((i * files.length) / n) % files.length]), 'utf8');
    const headings = [...src.matchAll(/^#{1,2} (.+)$/gm)].map((m) => m[1].toLowerCase().split(' '));
    const words = headings[i % headings.length];
    out.push(words.slice(0, 2).join(' '));
  }
  return out;
}

const pct = (xs, p) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const ms = (x) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const p50p95 = (xs) => `${ms(pct(xs, 50))} / ${ms(pct(xs, 95))}`;
const sleep = (t) => new Promise((r) => setTimeout(r, t));

/**
 * instrument makes the page time each keystroke in the field of the element at host:
 * t0 at keydown (the window's capture phase, before any handler of the page), the text
 * the keystroke left, and the moment a render of the listbox shows that text's results,
 * laid out, and the frame after. The element shows only the answer for the text in the
 * field, and its hand-over row (or its no-results message) quotes the text: `ok` says
 * the render was that text's. The element's search requests are noted with their mode
 * (it calls the page's fetch), to pair them with their Resource Timing (see requestsOf).
 */
function instrument(host) {
  const root = document.querySelector(host).shadowRoot;
  const input = root.getElementById('sitetools-search-input');
  const list = root.getElementById('sitetools-search-results');
  const empty = root.querySelector('[part~="empty"]');
  const b = (window.__bench = { key: null, calls: [] });
  const pageFetch = window.fetch;
  window.fetch = function (url, init) {
    if (String(url).endsWith('/api/chat/tools') && typeof init?.body === 'string') {
      const mode = JSON.parse(init.body).arguments?.mode ?? 'full';
      b.calls.push({ t: performance.now(), mode });
    }
    return pageFetch.call(this, url, init);
  };
  addEventListener('keydown', () => (b.key = { t0: performance.now(), value: null }), true);
  // Before the element's own listener, which may show an answer it has at once.
  root.addEventListener('input', () => b.key && (b.key.value = input.value), true);
  const rendered = () => {
    const k = b.key;
    if (!k || k.value === null || k.laidOut || input.value !== k.value) return;
    void list.offsetHeight; // style and layout, as before the frame is painted
    k.laidOut = performance.now();
    const q = `“${k.value.trim()}”`;
    k.ok = (list.lastElementChild?.textContent ?? '').includes(q) || (!empty.hidden && empty.textContent.includes(q));
    k.pages = list.querySelectorAll('a[role="option"]').length;
    requestAnimationFrame(() => (k.frame = performance.now()));
  };
  const mo = new MutationObserver(rendered);
  mo.observe(list, { childList: true });
  mo.observe(empty, { childList: true, characterData: true, subtree: true });
}

/**
 * requestsOf is, once every search request made since t0 has its Resource Timing entry
 * (added when its answer is read), the instant one's start and end, and whether the
 * pause asked the full search too (the instant answer took that long); false before.
 */
function requestsOf(t0) {
  const calls = window.__bench.calls.filter((c) => c.t >= t0);
  const entries = performance
    .getEntriesByType('resource')
    .filter((e) => e.name.endsWith('/api/chat/tools') && e.startTime >= t0)
    .sort((a, b) => a.startTime - b.startTime);
  if (entries.length < calls.length) return false;
  const i = calls.findIndex((c) => c.mode === 'instant');
  return { full: calls.some((c) => c.mode !== 'instant'), sent: entries[i]?.startTime, received: entries[i]?.responseEnd };
}

/**
 * typeQueries types each query on a fresh /search, one key every GAP_MS at most, waiting
 * for each keystroke's results; it returns the timed keystrokes.
 */
async function typeQueries(page, origin, queries) {
  const keys = [];
  for (const query of queries) {
    await page.goto(`${origin}/search`);
    const input = page.locator(HOST).locator('#sitetools-search-input');
    await input.click();
    await page.evaluate(instrument, HOST);
    for (let i = 0; i < query.length; i++) {
      const started = performance.now();
      await page.keyboard.type(query[i]);
      const text = query.slice(0, i + 1);
      if (text.trim().length >= 2) {
        const wait = (fn, arg) =>
          page
            .waitForFunction(fn, arg, { timeout: TIMEOUT_MS, polling: 'raf' })
            .then((h) => h.jsonValue())
            .catch(() => null);
        const k = await wait(() => window.__bench.key?.frame && window.__bench.key);
        if (!k) throw new Error(`no results for ${JSON.stringify(text)} within ${TIMEOUT_MS} ms`);
        if (k.value !== text || !k.ok) throw new Error(`the results shown after typing ${JSON.stringify(text)} were not its own: ${JSON.stringify(k)}`);
        const r = await wait(requestsOf, k.t0);
        if (!r) throw new Error(`the requests for ${JSON.stringify(text)} did not finish within ${TIMEOUT_MS} ms`);
        keys.push({ ...k, ...r, query });
      }
      const spent = performance.now() - started;
      if (spent < GAP_MS) await sleep(GAP_MS - spent);
    }
  }
  return keys;
}

/** instantCall POSTs the instant search_site for query to base; the round trip in ms. */
async function instantCall(base, query) {
  const t0 = performance.now();
  const res = await fetch(`${base}/api/chat/tools`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'search_site', arguments: { query, mode: 'instant', limit: 8 } }),
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`POST ${base}/api/chat/tools: ${res.status}`);
  return performance.now() - t0;
}

/**
 * measureSite ingests dir into a fresh database, starts sitetools and next start in
 * front of it, types queries in a fresh tab, and replays their instant searches from
 * Node; the figures of one row of the report.
 */
async function measureSite(browser, { name, dir, database, queries, home }) {
  const procs = new Procs();
  const logs = { serve: [], next: [] };
  try {
    const sitePort = await freePort();
    const nextPort = await freePort();
    const origin = `http://127.0.0.1:${nextPort}`;
    const sitetools = `http://127.0.0.1:${sitePort}`;
    const ingestStart = performance.now();
    process.stderr.write(`search.bench: ${name}: ingesting ${dir}\n`);
    // The local embedder (the default); no rate limit: one visitor types all the queries.
    await startSitetools(procs, { home, port: sitePort, site: origin, database, dir, env: { RATE_LIMIT_PER_MINUTE: '0' } }, logs.serve);
    const ingestSeconds = (performance.now() - ingestStart) / 1000;
    const dbURL = (await run(PG, ['createdb', database])).stdout.trim();
    const [pages, chunks] = (await run('psql', [dbURL, '-tAc', 'SELECT (SELECT count(*) FROM pages), (SELECT count(*) FROM chunks)'])).stdout.trim().split('|').map(Number);
    await startNext(procs, { port: nextPort, sitetools, home }, logs.next);

    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    const pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    // Not timed: the first page compiles the element's code, and sitetools and
    // PostgreSQL see their first searches.
    await typeQueries(page, origin, queries.slice(0, 2));
    const typing = performance.now();
    process.stderr.write(`search.bench: ${name}: typing ${queries.length} queries\n`);
    const keys = await typeQueries(page, origin, queries);
    await ctx.close();
    if (pageErrors.length) throw new Error(`page errors: ${pageErrors.join('; ')}`);

    // The same instant searches from Node straight to sitetools, which logs its own time
    // for each (all of them instant searches, unlike the browser's, among which a slow
    // keystroke's pause adds a full one); then through next start. Each round alternates
    // the two, so that a busy moment of the machine falls on both.
    const replay = performance.now();
    const direct = [];
    const proxied = [];
    const handler = [];
    for (const k of keys.filter((k) => k.sent !== undefined)) {
      const logFrom = logs.serve.length;
      direct.push(await instantCall(sitetools, k.value));
      await until('sitetools to log the search', () => logs.serve.length > logFrom, { every: 1 });
      handler.push(...requestLines(logs.serve.slice(logFrom)).filter((l) => l.tool === 'search_site').map((l) => l.latency_us / 1000));
      proxied.push(await instantCall(origin, k.value));
    }
    process.stderr.write(
      `search.bench: ${name}: ingest ${Math.round(ingestSeconds)} s, typing ${Math.round((replay - typing) / 1000)} s, replay ${Math.round((performance.now() - replay) / 1000)} s\n`,
    );
    const slowest = [...keys].sort((a, b) => b.laidOut - b.t0 - (a.laidOut - a.t0)).slice(0, 5);
    return {
      name,
      pages,
      chunks,
      ingestSeconds,
      keystrokes: keys.length,
      asked: keys.filter((k) => k.sent !== undefined).length,
      paused: keys.filter((k) => k.full).length,
      slowest: slowest.map((k) => ({ text: k.value, total: k.laidOut - k.t0, request: k.received - k.sent })),
      withPages: keys.filter((k) => k.pages > 0).length,
      laidOut: keys.map((k) => k.laidOut - k.t0),
      frame: keys.map((k) => k.frame - k.t0),
      wait: keys.filter((k) => k.sent !== undefined).map((k) => k.sent - k.t0),
      request: keys.filter((k) => k.sent !== undefined).map((k) => k.received - k.sent),
      toLayout: keys.filter((k) => k.sent !== undefined).map((k) => k.laidOut - k.received),
      handler,
      direct,
      proxied,
    };
  } finally {
    await procs.stopAll();
    // The index is rebuilt by every run: its space is not kept meanwhile.
    await run('psql', [(await run(PG, ['start'])).stdout.trim(), '-qc', `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`]).catch(() => {});
  }
}

function report(rows, { took, chromium }) {
  const when = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
  const out = [];
  out.push('# Browser benchmark: instant site search');
  out.push('');
  out.push(
    'This file is rewritten by every `make bench` (server/web/bench/search.bench.js); do not edit it by hand.',
  );
  out.push('');
  out.push(
    '**Method.** Chromium (headless) opens `/search` of the Next.js frontend (`deploy/nextjs`, `next start`), which proxies `/api/chat/tools` to `sitetools serve` on PostgreSQL; the index is the site ingested with the local embedder into a fresh database. ' +
      `Realistic queries are typed one character at a time, each on a freshly loaded page (no keystroke is answered from the element’s own cache), at most one key every ${GAP_MS} ms and never before the last key’s results are shown; the first two queries are typed once before, not timed. ` +
      'A keystroke is timed from its `keydown` (the window’s capture phase) to the listbox laid out with the results for the text it left: a MutationObserver in the page, which checks that the render is that text’s (the hand-over row or the no-results message quotes it). ' +
      '“next frame” is the `requestAnimationFrame` after it. Keystrokes that leave fewer than two characters ask nothing and are not timed; one whose text the element has an answer for already (a space typed after a word whose full search the pause asked) is timed but asks nothing.',
  );
  out.push('');
  out.push(
    '**Split.** *wait* is the keydown to the search request’s start (the element’s own wait, `INSTANT_MS` in search.js, and its work); *request* is that request as the browser’s Resource Timing sees it (the Next.js route handler, sitetools, loopback); *to layout* is the answer’s end to the results laid out (JSON, DOM, style, layout). ' +
      '*full searches (pause)* counts the keystrokes whose instant answer took so long that the element’s pause (`PAUSE_MS`) asked the full search before the results were shown. ' +
      'The baseline is sitetools’ own share: the keystrokes’ instant searches are sent again, one after another, from Node straight to sitetools (*Node → sitetools*, the round trip), and *handler* is the time sitetools logs for each (`latency_us` of its request log line); each is followed by the same request through `next start` (*Node → next start → sitetools*): what the Next.js route handler adds is the difference, and what the browser adds the rest of *request, in the browser*. ' +
      '**ratio** is the keystroke’s p50 ÷ the p50 straight to sitetools.',
  );
  out.push('');
  out.push('## Latest run');
  out.push('');
  out.push('```');
  out.push(`cores: ${os.cpus().length}, node ${process.version}, chromium ${chromium}, ${when} UTC`);
  out.push(`load average at the end: ${load}`);
  out.push('command: make bench  ≡  cd server/web && TEST_DATABASE_URL=… SITETOOLS_BIN=…/bin/sitetools node bench/search.bench.js');
  out.push(`took: ${Math.round(took)} s (ingests included: ${rows.map((r) => `${r.name} ${Math.round(r.ingestSeconds)} s`).join(', ')})`);
  out.push('```');
  out.push('');
  out.push(`| site | pages / chunks | keystrokes timed | with pages found | keystroke → results, p50 / p95 ms | → next frame, p50 / p95 ms | goal p50 ≤ ${GOAL_MS} ms | ratio to sitetools |`);
  out.push('| --- | ---: | ---: | ---: | ---: | ---: | :---: | ---: |');
  for (const r of rows) {
    const met = pct(r.laidOut, 50) <= GOAL_MS;
    out.push(
      `| ${r.name} | ${r.pages} / ${r.chunks} | ${r.keystrokes} | ${r.withPages} | ${p50p95(r.laidOut)} | ${p50p95(r.frame)} | ${met ? 'met' : `**missed** (p50 ${ms(pct(r.laidOut, 50))} ms)`} | ${(pct(r.laidOut, 50) / pct(r.direct, 50)).toFixed(1)} |`,
    );
  }
  out.push('');
  out.push('Where a keystroke’s time goes (p50 / p95 ms):');
  out.push('');
  out.push('| site | instant requests | wait | request, in the browser | to layout | full searches (pause) | Node → next start → sitetools | Node → sitetools | sitetools handler |');
  out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    out.push(
      `| ${r.name} | ${r.asked} | ${p50p95(r.wait)} | ${p50p95(r.request)} | ${p50p95(r.toLayout)} | ${r.paused} | ${p50p95(r.proxied)} | ${p50p95(r.direct)} | ${p50p95(r.handler)} |`,
    );
  }
  out.push('');
  for (const r of rows) {
    const [wait, request, layout, proxied, direct] = [r.wait, r.request, r.toLayout, r.proxied, r.direct].map((xs) => pct(xs, 50));
    out.push(
      `- ${r.name}, p50: wait ${ms(wait)} + request ${ms(request)} (sitetools ${ms(direct)}, the Next.js route handler +${ms(proxied - direct)}, the browser +${ms(request - proxied)}) + to layout ${ms(layout)} ≈ ${ms(wait + request + layout)} ms; sitetools’ share ${Math.round((100 * direct) / pct(r.laidOut, 50))} %`,
    );
  }
  out.push('');
  out.push('Slowest keystrokes (ms: keydown → results laid out; the instant request in the browser):');
  out.push('');
  for (const r of rows) {
    out.push(`- ${r.name}: ${r.slowest.map((k) => `${JSON.stringify(k.text)} ${ms(k.total)} (${ms(k.request)})`).join(', ')}`);
  }
  out.push('');
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------

requireInstalled(NEXT_BUILT);
const started = performance.now();
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'sitetools-search-bench-'));
const browser = await launchBrowser();
try {
  const rows = [];
  rows.push(await measureSite(browser, { name: 'demo', dir: DEMO_SITE, database: 'sitetools_bench_search_demo', queries: DEMO_QUERIES, home }));
  const scaleDir = path.join(home, 'scale-site');
  process.stderr.write(`search.bench: writing the generated site into ${scaleDir}\n`);
  await run(GO, ['run', './bench', '-write-scale-site', scaleDir], { cwd: repo, env: { ...process.env, PATH: `${process.env.PATH}:/usr/local/go/bin` } });
  const queries = scaleQueries(scaleDir, 14);
  rows.push(await measureSite(browser, { name: 'generated, 10 000 pages', dir: scaleDir, database: 'sitetools_bench_search_scale', queries, home }));
  const md = report(rows, { took: (performance.now() - started) / 1000, chromium: browser.version() });
  console.log(md);
  fs.writeFileSync(REPORT, md);
  process.stderr.write(`search.bench: wrote ${path.relative(repo, REPORT)}\n`);
} finally {
  await browser.close();
  fs.rmSync(home, { recursive: true, force: true });
}
