// The chat's proof of work, end to end: `sitetools serve` with CHAT_PROOF_OF_WORK=always
// at the default difficulty and a fake model, on PostgreSQL, in real Chromium under the
// pages' CSP. Before each question the widget fetches a challenge, solves it in its Web
// Worker (/webmcp/pow-worker.js, allowed by the pages' script-src 'self') and sends the
// turn with the solution in the Altcha header; the answer streams. A solution the site
// refuses makes the widget fetch a new challenge and send the turn once more, and the
// model is asked once. Nothing is stored for it: no cookie, no key of its own in
// localStorage, and the service's log does not carry the solution.
//
//   cd server/web && TEST_DATABASE_URL=… SITETOOLS_BIN=…/bin/sitetools node --test e2e/pow.e2e.test.js
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { DEMO_SITE, Run, freePort, requestLines, startFakeLLM, until } from './harness.js';

const ANSWER = 'Yes, we do accessibility audits: see the services page.';

const run = new Run({ requests: [], console: [], pageErrors: [] });
const { logs, seen } = run;
let site;
let llm;
let page;
const workers = [];
const altcha = []; // the Altcha header of every POST /api/chat, in order
const challenges = []; // every challenge the tab was given

before(
  async () => {
    run.begin('pow-e2e');
    const port = await freePort();
    site = `http://127.0.0.1:${port}`;
    llm = await run.fake(startFakeLLM({ words: ANSWER.split(' '), gap: 0 }));
    await run.startSitetools({
      port,
      site,
      database: 'sitetools_pow_e2e',
      env: {
        SITE_PAGES_DIR: DEMO_SITE,
        RATE_LIMIT_PER_MINUTE: '0',
        LLM_BASE_URL: llm.url,
        LLM_MODEL: 'fake-model',
        CHAT_PROOF_OF_WORK: 'always',
      },
    });
    page = await run.openTab();
    page.on('worker', (w) => workers.push(w.url()));
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url() === `${site}/api/chat`) altcha.push(r.headers().altcha ?? null);
    });
    page.on('response', async (r) => {
      if (r.url() === `${site}/api/chat/challenge`) challenges.push(await r.json());
    });
  },
  { timeout: 180000 },
);

after(() => run.stop());

/** inWidget runs fn(shadowRoot) in the page. */
const inWidget = (fn) => page.evaluate((src) => new Function('root', `return (${src})(root)`)(document.querySelector('sitetools-chat').shadowRoot), fn.toString());

/** ask sends question and waits for the widget to show the whole answer; its text. */
async function ask(question) {
  const before = await inWidget((root) => root.querySelectorAll('.msg-assistant').length);
  await page.fill('#sitetools-chat-input', question);
  await page.press('#sitetools-chat-input', 'Enter');
  await until(
    'the answer',
    async () => (await inWidget((root) => !root.querySelector('#sitetools-chat-log[aria-busy]') && root.querySelectorAll('.msg-assistant').length)) > before,
    { timeout: 20000 },
  );
  return inWidget((root) => [...root.querySelectorAll('.msg-assistant .msg-text')].at(-1).textContent.trim());
}

const chatRequests = (from) => seen.requests.slice(from).filter((r) => r.url.startsWith(`${site}/api/chat`) && !r.url.startsWith(`${site}/api/chat/tools`));

test('the widget solves the challenge in its Worker and the chat answers', async () => {
  await page.goto(`${site}/`);
  await page.waitForSelector('#sitetools-chat-launcher', { state: 'attached' });
  if (await page.isHidden('#sitetools-chat-panel')) await page.click('#sitetools-chat-launcher');
  await page.click('#sitetools-chat-consent-accept');

  const from = seen.requests.length;
  assert.equal(await ask('Do you do accessibility audits?'), ANSWER);
  assert.deepEqual(
    chatRequests(from).map((r) => `${r.method} ${new URL(r.url).pathname}`),
    ['GET /api/chat/challenge', 'POST /api/chat'],
  );
  const solution = JSON.parse(Buffer.from(altcha.at(-1), 'base64').toString());
  assert.deepEqual(Object.keys(solution).sort(), ['algorithm', 'challenge', 'number', 'salt', 'signature']);
  // The default difficulty, CHAT_PROOF_OF_WORK_MAX_NUMBER unset.
  const given = challenges.at(-1);
  assert.equal(given.maxnumber, 100000);
  assert.equal(solution.challenge, given.challenge);
  assert.ok(Number.isInteger(solution.number) && solution.number >= 0 && solution.number <= given.maxnumber, JSON.stringify(solution));
  assert.deepEqual(workers, [`${site}/webmcp/pow-worker.js`]);
  assert.equal(llm.calls, 1);

  // The next question solves a new challenge in the same Worker.
  assert.equal(await ask('And what do they cost?'), ANSWER);
  assert.notEqual(altcha.at(-1), altcha.at(-2));
  assert.equal(workers.length, 1);
  assert.equal(llm.calls, 2);
});

test('a refused solution makes the widget solve a new challenge and ask once more; the model is asked once', async () => {
  // The first turn goes out with the last turn's solution, spent already.
  const spent = altcha.at(-1);
  let forged = false;
  await page.route(`${site}/api/chat`, (route) => {
    if (forged) return route.continue();
    forged = true;
    return route.continue({ headers: { ...route.request().headers(), altcha: spent } });
  });
  const from = seen.requests.length;
  const calls = llm.calls;
  try {
    assert.equal(await ask('Do you test with screen readers?'), ANSWER);
  } finally {
    await page.unroute(`${site}/api/chat`);
  }
  assert.deepEqual(
    chatRequests(from).map((r) => `${r.method} ${new URL(r.url).pathname}`),
    ['GET /api/chat/challenge', 'POST /api/chat', 'GET /api/chat/challenge', 'POST /api/chat'],
  );
  assert.equal(llm.calls, calls + 1);
  const refused = requestLines(logs.serve).filter((l) => l.route === '/api/chat' && l.status === 403);
  assert.deepEqual(
    refused.map((l) => l.code),
    ['proof_of_work_invalid'],
  );
});

test('nothing is stored for it, nothing blocked, and the log does not carry a solution', async () => {
  assert.deepEqual(await page.context().cookies(), []);
  const keys = await page.evaluate(() => Object.keys(localStorage).sort());
  assert.deepEqual(
    keys.filter((k) => !['sitetools.chat.transcript', 'sitetools.chat.consent'].includes(k)),
    [],
  );
  assert.deepEqual(seen.pageErrors, []);
  assert.deepEqual(seen.console.filter((l) => /Content Security Policy|Worker/i.test(l)), []);
  const log = logs.serve.join('\n');
  for (const a of altcha) assert.ok(!log.includes(a) && !log.includes(JSON.parse(Buffer.from(a, 'base64').toString()).challenge), 'a solution in the log');
});
