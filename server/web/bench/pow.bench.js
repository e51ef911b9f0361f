// What the chat's proof of work (CHAT_PROOF_OF_WORK=always) adds to a visitor's wait for
// the first words of an answer, in Chromium on this machine, at several difficulties
// (CHAT_PROOF_OF_WORK_MAX_NUMBER). One `sitetools serve` per difficulty, and one with the
// proof of work off (the baseline, measured in the same run), each with the demo site and
// a fake model that answers at once; the turns go round the servers in turn, so that
// every difficulty sees the same machine. Each turn is the first question of a freshly
// opened page in a new browser context (as most visitors ask): from the question's Enter
// (keydown, the window's capture phase) to the answer's first words shown in the widget
// (a MutationObserver in the page). With the proof of work that includes fetching the
// challenge, starting the Worker and solving; without, the challenge route saying none
// is needed. *solve* is from the challenge's answer to the turn's request (Resource
// Timing): the Worker's start and the hashing; *hashes/s* is the number found, plus one,
// over that time.
//
//   cd server/web && TEST_DATABASE_URL=… SITETOOLS_BIN=…/bin/sitetools node bench/pow.bench.js
//
// POW_TURNS (default 20) turns per server; POW_MAX_NUMBERS (default 20000,50000,100000,
// 200000) the difficulties. It prints a Markdown report.
import os from 'node:os';

import { DEMO_SITE, Procs, freePort, launchBrowser, requireInstalled, run, startFakeLLM, startSitetools, until } from '../e2e/harness.js';

const TURNS = Number(process.env.POW_TURNS) || 20;
const MAX_NUMBERS = (process.env.POW_MAX_NUMBERS || '20000,50000,100000,200000').split(',').map(Number);
const PG = new URL('../../../deploy/dev/postgres.sh', import.meta.url).pathname;

const pct = (xs, p) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const ms = (x) => (Number.isFinite(x) ? x.toFixed(0) : '–');
const p50p95 = (xs) => `${ms(pct(xs, 50))} / ${ms(pct(xs, 95))}`;

/** instrument times, in the page, the Enter that asks and the first words shown. */
function instrument() {
  window.__pow = { asked: 0, shown: 0 };
  addEventListener('keydown', (e) => e.key === 'Enter' && !window.__pow.asked && (window.__pow.asked = performance.now()), true);
  const root = document.querySelector('sitetools-chat').shadowRoot;
  new MutationObserver(() => {
    const text = [...root.querySelectorAll('.msg-assistant .msg-text')].at(-1)?.textContent ?? '';
    if (window.__pow.asked && !window.__pow.shown && text.trim()) window.__pow.shown = performance.now();
  }).observe(root, { subtree: true, childList: true, characterData: true });
}

/** turn asks one question on a fresh page of server and returns its timings. */
async function turn(browser, server) {
  const ctx = await browser.newContext();
  try {
    const page = await ctx.newPage();
    let solution = null;
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url() === `${server.site}/api/chat`) solution = r.headers().altcha ?? null;
    });
    await page.goto(`${server.site}/`);
    await page.waitForSelector('#sitetools-chat-launcher', { state: 'attached' });
    if (await page.isHidden('#sitetools-chat-panel')) await page.click('#sitetools-chat-launcher');
    await page.click('#sitetools-chat-consent-accept');
    await page.evaluate(`(${instrument})()`);
    await page.fill('#sitetools-chat-input', 'Do you do accessibility audits?');
    await page.press('#sitetools-chat-input', 'Enter');
    await until('the first words', () => page.evaluate(() => window.__pow.shown > 0), { timeout: 30000, every: 20 });
    // The turn's Resource Timing entry is there once its stream ended.
    await until('the whole answer', () => page.evaluate(() => !document.querySelector('sitetools-chat').shadowRoot.querySelector('#sitetools-chat-log[aria-busy]')));
    const t = await page.evaluate(() => {
      const entry = (p) => performance.getEntriesByType('resource').find((e) => new URL(e.name).pathname === p);
      const challenge = entry('/api/chat/challenge');
      const chat = entry('/api/chat');
      return { first: window.__pow.shown - window.__pow.asked, solve: chat && challenge ? chat.startTime - challenge.responseEnd : NaN };
    });
    const number = solution ? JSON.parse(Buffer.from(solution, 'base64').toString()).number : null;
    return { ...t, number };
  } finally {
    await ctx.close();
  }
}

requireInstalled();
const procs = new Procs();
const llm = await startFakeLLM({ words: ['Yes,', 'we', 'do.'], gap: 0 });
const home = os.tmpdir();
const servers = [];
const browser = await launchBrowser();
const started = performance.now();
try {
  for (const max of [0, ...MAX_NUMBERS]) {
    const port = await freePort();
    const site = `http://127.0.0.1:${port}`;
    const env = { SITE_PAGES_DIR: DEMO_SITE, RATE_LIMIT_PER_MINUTE: '0', LLM_BASE_URL: llm.url, LLM_MODEL: 'fake-model' };
    if (max) Object.assign(env, { CHAT_PROOF_OF_WORK: 'always', CHAT_PROOF_OF_WORK_MAX_NUMBER: String(max) });
    const database = `sitetools_bench_pow_${max}`;
    await startSitetools(procs, { home, port, site, database, env }, []);
    servers.push({ name: max ? `always, max number ${max.toLocaleString('en')}` : 'off (baseline)', max, site, database, runs: [] });
  }
  // One turn of each first, not judged: Chromium's and the servers' first use.
  for (const s of servers) await turn(browser, s);
  for (let i = 0; i < TURNS; i++) {
    for (const s of servers) s.runs.push(await turn(browser, s));
  }
  const base = servers[0].runs.map((r) => r.first);
  const out = [];
  out.push(`cores: ${os.cpus().length} (${os.cpus()[0].model}), node ${process.version}, chromium ${browser.version()}, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`);
  out.push(`load average at the end: ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}; took ${Math.round((performance.now() - started) / 1000)} s; ${TURNS} turns per server`);
  out.push('');
  out.push('| CHAT_PROOF_OF_WORK | first words, p50 / p95 ms | added to the baseline, p50 / p95 ms | solve, p50 / p95 ms | hashes/s, p50 |');
  out.push('| --- | ---: | ---: | ---: | ---: |');
  for (const s of servers) {
    const first = s.runs.map((r) => r.first);
    const solved = s.runs.filter((r) => Number.isInteger(r.number));
    const rate = solved.map((r) => ((r.number + 1) / r.solve) * 1000);
    const added = s.max ? `${ms(pct(first, 50) - pct(base, 50))} / ${ms(pct(first, 95) - pct(base, 95))}` : '–';
    out.push(
      `| ${s.name} | ${p50p95(first)} | ${added} | ${s.max ? p50p95(solved.map((r) => r.solve)) : '–'} | ${s.max ? Math.round(pct(rate, 50)).toLocaleString('en') : '–'} |`,
    );
  }
  console.log(out.join('\n'));
} finally {
  await browser.close();
  await procs.stopAll();
  await llm.close();
  const url = (await run(PG, ['start'])).stdout.trim();
  for (const s of servers) await run('psql', [url, '-qc', `DROP DATABASE IF EXISTS ${s.database} WITH (FORCE)`]).catch(() => {});
}
