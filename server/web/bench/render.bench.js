// How long the chat widget takes to show a 20 000-character answer in Chromium:
// buildMarkdown (parse, build the DOM) plus attaching it to a message of the widget's
// scrolling log (its own stylesheet) and laying it out, for prose and for every
// adversarial shape of test/adversarial.js, and renderMarkdown showing a stored answer
// again (copied from its first build). The baseline, measured in the same run, is the
// same number of characters shown as one text node, its runs alternating with the
// render's. Goal: under 20 ms for each, as the median after one pass that is not judged
// (the parser's code not yet compiled); that first pass is printed too. An answer that
// needs more elements or blocks than render.js's BUDGET is shown as that many and one
// element holding the rest as text, as in the widget: the shapes of thousands of
// paragraphs, line breaks, items or links are timed so.
//
//   cd server/web && node bench/render.bench.js        (make bench runs it)
//
// MARKDOWN_JS=/path/to/markdown.js serves another parser in place of widget/markdown.js,
// to compare a change against what it replaces.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { adversarialAnswers } from '../test/adversarial.js';

const widgetDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../widget');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const RUNS = 15;
const GOAL_MS = 20;
const N = 20000;
const PROSE =
  'We do **accessibility audits** with `NVDA`; see [the pricing page](/pricing) for what they cost.\n\n- one\n- two, with [a link](https://evil.example/)\n\n'
    .repeat(200)
    .slice(0, N);
const cases = { prose: PROSE, ...adversarialAnswers(N) };
// Shown again from the transcript: renderMarkdown copies what it built the first time.
const again = { 'prose, shown again': PROSE, '[ then a long url, again': cases['[ then a long url'] };

const server = http.createServer((req, res) => {
  const name = path.basename(new URL(req.url, 'http://x').pathname);
  if (name === '' || name === 'bench.html') {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    // The widget's own stylesheet and structure: the answer in a message of the
    // conversation's scrolling log, as a visitor sees it.
    res.end(
      '<!doctype html><meta charset="utf-8"><title>render bench</title><link rel="stylesheet" href="chat.css">' +
        '<div class="root"><section class="panel"><div class="log"><ol class="messages"><li class="msg msg-assistant">' +
        '<div class="msg-text" id="out"></div></li></ol></div></section></div>',
    );
    return;
  }
  const file = name === 'markdown.js' && process.env.MARKDOWN_JS ? process.env.MARKDOWN_JS : path.join(widgetDir, name);
  if (!file.startsWith(widgetDir) && file !== process.env.MARKDOWN_JS) {
    res.writeHead(404).end();
    return;
  }
  fs.readFile(file, (err, b) => {
    if (err) return res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': name.endsWith('.css') ? 'text/css' : 'text/javascript' });
    return res.end(b);
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const origin = `http://127.0.0.1:${server.address().port}`;

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ['--js-flags=--expose-gc', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
let failed = false;
try {
  const page = await browser.newPage();
  await page.goto(`${origin}/bench.html`);
  await page.waitForFunction(() => [...document.styleSheets].some((s) => s.href && s.href.endsWith('chat.css')));
  const results = await page.evaluate(
    async ({ runs, cases, again }) => {
      const { buildMarkdown, renderMarkdown } = await import('./render.js');
      const out = document.getElementById('out');
      const show = {};
      for (const [name, src] of Object.entries(cases)) show[name] = () => out.replaceChildren(...buildMarkdown(src, location.origin));
      for (const [name, src] of Object.entries(again)) {
        renderMarkdown(src, location.origin);
        show[name] = () => out.replaceChildren(...renderMarkdown(src, location.origin));
        cases[name] = src;
      }
      // One run of fn, from an empty message to the laid-out answer.
      const once = (fn) => {
        out.replaceChildren();
        void out.offsetHeight;
        // The garbage of the run before is not this run's cost.
        if (window.gc) window.gc();
        const t0 = performance.now();
        fn();
        void out.offsetHeight; // layout
        return performance.now() - t0;
      };
      const median = (ms) => ms.sort((a, b) => a - b)[Math.floor(ms.length / 2)];
      // One pass first, not judged: the parser's code compiled, the fonts and styles in
      // use. Its render time is shown as the page's first answer of the kind.
      const first = {};
      for (const [name, src] of Object.entries(cases)) {
        first[name] = once(show[name]);
        once(() => {
          out.textContent = src;
        });
      }
      const rows = [];
      for (const [name, src] of Object.entries(cases)) {
        // Baseline and render runs alternate, so that a busy moment of the machine falls
        // on both sides rather than on one.
        const base = [];
        const render = [];
        for (let i = 0; i < runs; i++) {
          base.push(once(() => {
            out.textContent = src;
          }));
          render.push(once(show[name]));
        }
        rows.push({ name, chars: src.length, base: median(base), render: median(render), first: first[name] });
      }
      return rows;
    },
    { runs: RUNS, cases, again },
  );
  console.log(
    `render a chat answer in Chromium (median of ${RUNS} after one pass not judged, shown as first ms; baseline: the same text as one text node)`,
  );
  console.log(`${'case'.padEnd(26)}  chars   render ms  baseline ms  ratio  first ms`);
  for (const r of results) {
    const ok = r.render < GOAL_MS;
    if (!ok) failed = true;
    console.log(
      `${r.name.padEnd(26)} ${String(r.chars).padStart(6)} ${r.render.toFixed(2).padStart(10)} ${r.base.toFixed(2).padStart(12)} ${(r.render / Math.max(r.base, 0.01)).toFixed(1).padStart(6)} ${r.first.toFixed(2).padStart(9)}  ${ok ? 'ok' : `over the ${GOAL_MS} ms goal`}`,
    );
  }
} finally {
  await browser.close();
  server.close();
}
process.exitCode = failed ? 1 : 0;
