// End to end: the forms that are views of a tool of the registry (declarative WebMCP,
// widget/forms.js and server/web/forms.go), in real Chromium launched with
// --enable-features=WebMCP, on the demo pages of the real `sitetools serve` on PostgreSQL.
//
// The tab that plays the browser's agent holds the bridge back (<html
// data-sitetools-bridge="manual">, written into every page it loads): its imperative
// registrations would take the tools' names, and the tab's tools are then the forms
// themselves. Another tab, with the bridge running, calls the imperative tools to compare.
//
//   cd server/web && TEST_DATABASE_URL=… SITETOOLS_BIN=…/bin/sitetools node --test e2e/declarative.e2e.test.js
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { LOCAL_TOOLS as LOCAL_DEFS } from '../widget/core.js';
import { DEMO_SITE, Run, freePort, mcpShape, requestLines, resultText, until, watchedPage } from './harness.js';

const run = new Run({ requests: [], console: [], pageErrors: [], dialogs: [] });
const { seen, logs } = run;
let site;
let page; // the agent's tab: the bridge held back
let issues = []; // the DevTools issues of the forms' declarations, as Lighthouse reads them
let definitions = {}; // by name: the registry's tools, and the browser-local ones it lacks

const FIELD = (name) => `form[data-contact-form] [name="${name}"]`;
const TYPED = 'Typed By The Visitor';
const PREFILL = { name: 'Name The Agent Guessed', email: 'visitor@example.org', topic: 'Privacy', message: 'We would like a privacy review.' };

// A form of the site owner's own on /pricing, marked as a view of get_free_slots and
// nothing else: its attributes are the bridge's to write.
const OWNER_FORM =
  '<form id="owner-slots" data-sitetools-tool="get_free_slots"><label>From <input name="from" type="date"></label>' +
  '<label>To <input name="to" type="date"></label><label>Minutes <input name="durationMinutes" type="number"></label><button>Find</button></form>';

/** manualBridge makes every page p loads hold the bridge back; /pricing gets OWNER_FORM. */
async function manualBridge(p) {
  await p.route('**/*', async (route) => {
    if (route.request().resourceType() !== 'document') return route.continue();
    const res = await route.fetch();
    let body = (await res.text()).replace('<html lang=', '<html data-sitetools-bridge="manual" lang=');
    if (new URL(route.request().url()).pathname === '/pricing') body = body.replace('</main>', `${OWNER_FORM}</main>`);
    return route.fulfill({ response: res, body });
  });
}

/** forms is every <form> of the page, in shadow roots too, with its declarative attributes. */
function forms(p) {
  return p.evaluate(() => {
    const out = [];
    const walk = (root) => {
      for (const el of root.querySelectorAll('*')) {
        if (el.localName === 'form') {
          const attr = (k) => el.getAttribute(k);
          const fields = [...el.elements]
            .filter((f) => f.name && !['submit', 'button', 'reset'].includes(f.type))
            .map((f) => ({ name: f.name, maxlength: f.getAttribute('maxlength'), select: f.localName === 'select' }));
          out.push({ id: el.id, toolname: attr('toolname'), tooldescription: attr('tooldescription'), view: attr('data-sitetools-tool'), none: el.hasAttribute('data-sitetools-no-tool'), autosubmit: el.hasAttribute('toolautosubmit'), fields });
        }
        if (el.shadowRoot) walk(el.shadowRoot);
      }
    };
    walk(document);
    return out;
  });
}

/** sameTool checks a tool the browser made of a form against the tool's definition. */
function sameTool(listed, def) {
  assert.equal(listed.description, def.description, `${def.name}: description`);
  const props = def.inputSchema.properties;
  const got = listed.inputSchema?.properties ?? {};
  for (const [name, p] of Object.entries(got)) {
    assert.ok(Object.hasOwn(props, name), `${def.name}: the form's field "${name}" is no parameter`);
    // Chromium adds a note of its own to a date field's description.
    const said = p.description?.replace(/ \(Dates MUST be provided in 'YYYY-MM-DD' format\.\)$/, '');
    assert.equal(said, props[name].description, `${def.name}.${name}: description`);
    if (props[name].enum) for (const v of p.enum ?? []) assert.ok(v === '' || props[name].enum.includes(v), `${def.name}.${name}: option ${v}`);
  }
  assert.deepEqual([...(listed.inputSchema?.required ?? [])].sort(), [...(def.inputSchema.required ?? [])].sort(), `${def.name}: required`);
}

before(
  async () => {
    run.begin('declarative-e2e');
    const port = await freePort();
    site = `http://127.0.0.1:${port}`;
    const catalog = await run.startSitetools({ port, site, database: 'sitetools_declarative_e2e', env: { SITE_PAGES_DIR: DEMO_SITE, RATE_LIMIT_PER_MINUTE: '0' } });
    definitions = Object.fromEntries([...LOCAL_DEFS, ...catalog].map((t) => [t.name, t]));
    page = await run.openTab(['--enable-features=WebMCP']);
    await manualBridge(page);
    const cdp = await page.context().newCDPSession(page);
    cdp.on('Audits.issueAdded', (e) => {
      const d = e.issue.details?.genericIssueDetails;
      if (d?.errorType?.startsWith('FormModelContext')) issues.push(d.errorType);
    });
    await cdp.send('Audits.enable');
  },
  { timeout: 180000 },
);

after(() => run.stop());

for (const [path, want] of [
  ['/', ['search_site']],
  ['/contact', ['prefill_contact_form', 'search_site']],
  ['/de/contact', ['prefill_contact_form', 'search_site']],
]) {
  test(`${path}: every form is a view of its tool or says it is none, and the browser's tools are the registry's`, async () => {
    issues = [];
    await page.goto(`${site}${path}`);
    assert.equal(await page.evaluate(() => document.documentElement.dataset.sitetoolsBridge), 'manual');
    await until('the forms to be declared', async () => (await page.webmcp.tools()).length === want.length);
    const all = await forms(page);
    for (const f of all) {
      if (f.none) {
        assert.equal(f.toolname, null, `#${f.id} says it is no tool`);
        continue;
      }
      const def = definitions[f.view];
      assert.ok(def, `#${f.id}: a view of ${f.view}, which the site has`);
      assert.equal(f.toolname, def.name);
      assert.equal(f.tooldescription, def.description);
      assert.ok(f.autosubmit, `#${f.id}: toolautosubmit`);
      for (const field of f.fields) {
        const p = def.inputSchema.properties[field.name];
        assert.equal(field.maxlength, p.maxLength && !field.select ? String(p.maxLength) : null, `${def.name}.${field.name}: maxlength`);
      }
    }
    // The chat's question box and relay token are the forms that are no tool.
    assert.deepEqual(all.filter((f) => f.none).map((f) => f.id).sort(), ['sitetools-chat-form', 'sitetools-webmcp-connect-form']);
    const tools = await page.webmcp.tools();
    assert.deepEqual(tools.map((t) => t.name).sort(), want);
    for (const t of tools) sameTool(t, definitions[t.name]);
    // What Lighthouse's webmcp-schema-validity reads: Chrome found nothing to say.
    assert.deepEqual(issues, []);
  });
}

test('a form the owner only marked gets its attributes from the registry, and an agent’s submit calls the tool', async () => {
  issues = [];
  await page.goto(`${site}/pricing`);
  await until('the owner’s form to be declared', async () => (await page.webmcp.tools()).some((t) => t.name === 'get_free_slots'));
  const owner = (await forms(page)).find((f) => f.id === 'owner-slots');
  assert.equal(owner.tooldescription, definitions.get_free_slots.description);
  sameTool((await page.webmcp.tools()).find((t) => t.name === 'get_free_slots'), definitions.get_free_slots);
  assert.deepEqual(issues, [], 'declared without a moment of one attribute without the other');
  const day = (n) => new Date(Date.now() + n * 86400000).toISOString().slice(0, 10);
  const args = { from: day(7), to: day(10), durationMinutes: 30 };
  const viaForm = await page.webmcp.callTool('get_free_slots', args, { timeout: 30000 });
  assert.equal(viaForm.isError, false, resultText(viaForm));
  assert.ok(viaForm.structuredContent.slots.length > 0, resultText(viaForm));
  assert.deepEqual(mcpShape(viaForm), mcpShape(await run.callDirect('get_free_slots', args)));
});

test('an agent’s submit of the search form is search_site’s call through POST /api/chat/tools', async () => {
  await page.goto(`${site}/pricing`);
  await until('the search form', async () => (await page.webmcp.tools()).some((t) => t.name === 'search_site'));
  const lines = logs.serve.length;
  const args = { query: 'accessibility audit with screen reader testing' };
  const viaForm = await page.webmcp.callTool('search_site', args, { timeout: 30000 });
  assert.equal(viaForm.isError, false, resultText(viaForm));
  assert.ok(viaForm.structuredContent.results.length > 0);
  assert.deepEqual(mcpShape(viaForm), mcpShape(await run.callDirect('search_site', args)));
  const calls = await until('sitetools to log the call', async () => {
    const l = requestLines(logs.serve.slice(lines)).filter((x) => x.route === '/api/chat/tools' && x.method === 'POST' && x.tool === 'search_site');
    return l.length >= 2 && l;
  });
  assert.ok(calls.every((l) => l.status === 200), JSON.stringify(calls));
  // The registry's guard: a query over the cap is refused as it is on every channel.
  const tooLong = await page.webmcp.callTool('search_site', { query: 'x '.repeat(400) }, { timeout: 30000 });
  assert.equal(tooLong.isError, true);
  assert.equal(tooLong.structuredContent.error.code, 'invalid_arguments', resultText(tooLong));
  assert.equal(new URL(page.url()).pathname, '/pricing', 'the form does not navigate');
});

/** visitorTyped shows /contact in p (already there, or opened) and types a name into the form, as the visitor does. */
async function visitorTyped(p) {
  if (new URL(p.url()).pathname !== '/contact') await p.goto(`${site}/contact`);
  await p.click(FIELD('name'));
  await p.keyboard.type(TYPED);
  await p.evaluate(() => {
    window.__submits = 0;
    document.addEventListener('submit', () => window.__submits++);
  });
}

test('an agent’s submit of the contact form is prefill_contact_form: the same answer, empty fields only, nothing sent', async () => {
  // The imperative tool, in a tab of its own with the bridge running: registered on
  // /pricing, it keeps the name when the site's router shows /contact.
  const other = await watchedPage(run.browser, {});
  let imperative;
  try {
    await other.goto(`${site}/pricing`);
    await until('the bridge’s tools', async () => (await other.webmcp.tools()).length === Object.keys(definitions).length);
    await other.click('#sitetools-header a[href="/contact"]');
    await other.waitForSelector(FIELD('name'));
    assert.equal((await other.webmcp.tools()).find((t) => t.name === 'prefill_contact_form').inputSchema.additionalProperties, false, 'the bridge’s');
    await visitorTyped(other);
    imperative = await other.webmcp.callTool('prefill_contact_form', PREFILL, { timeout: 30000 });
  } finally {
    await other.close();
  }
  assert.equal(imperative.isError, false, resultText(imperative));

  await visitorTyped(page);
  await until('the contact form', async () => (await page.webmcp.tools()).some((t) => t.name === 'prefill_contact_form'));
  const handovers = seen.requests.filter((r) => r.url === `${site}/api/handover`).length;
  const viaForm = await page.webmcp.callTool('prefill_contact_form', PREFILL, { timeout: 30000 });
  assert.deepEqual(mcpShape(viaForm), mcpShape(imperative));
  assert.deepEqual(viaForm.structuredContent.filled, ['email', 'topic', 'message']);
  assert.deepEqual(viaForm.structuredContent.kept, ['name']);
  for (const [name, value] of Object.entries({ ...PREFILL, name: TYPED })) {
    assert.equal(await page.inputValue(FIELD(name)), value, name);
  }
  // The agent's submit reached the page prevented: the form was not sent.
  assert.equal(await page.evaluate(() => window.__submits), 1);
  assert.equal((await page.textContent('#sitetools-contact-form-status')).trim(), '');
  await until('the hand-over count', async () => seen.requests.filter((r) => r.url === `${site}/api/handover`).length === handovers + 1);

  // A topic the form does not offer: the browser itself refuses it (the options are the
  // form's enum), and nothing changes.
  await page.fill(FIELD('message'), '');
  await assert.rejects(page.webmcp.callTool('prefill_contact_form', { topic: 'Gardening', message: 'Hello' }, { timeout: 30000 }), /Invalid value "Gardening"/);
  assert.equal(await page.inputValue(FIELD('topic')), 'Privacy');
  assert.equal(await page.inputValue(FIELD('message')), '');
  // An e-mail address the browser finds invalid: it does not submit, and the fields it
  // wrote get back what they held.
  await assert.rejects(page.webmcp.callTool('prefill_contact_form', { email: 'not an address', message: 'Hello' }, { timeout: 30000 }), /Form validation failed/);
  assert.equal(await page.inputValue(FIELD('email')), PREFILL.email);
  assert.equal(await page.inputValue(FIELD('message')), '');
  // One the tool refuses and the browser does not: the tool's answer, and nothing changes.
  const refused = await page.webmcp.callTool('prefill_contact_form', { email: 'a@b', name: 'x'.repeat(300) }, { timeout: 30000 });
  assert.equal(refused.isError, true);
  assert.match(resultText(refused), /Nothing was filled in[\s\S]*"name" has 300 characters; at most 200/);
  assert.equal(await page.inputValue(FIELD('email')), PREFILL.email);
  assert.equal(await page.inputValue(FIELD('name')), TYPED);

  // The visitor sends: what they must fill is checked, and then the form is sent.
  await page.click('form[data-contact-form] button[type="submit"]');
  assert.equal((await page.textContent('#sitetools-contact-form-status')).trim(), '');
  assert.equal(await page.evaluate((sel) => document.querySelector(sel).validationMessage, FIELD('message')), 'Please fill in this field.');
  await page.fill(FIELD('message'), 'Hello from the visitor.');
  await page.click('form[data-contact-form] button[type="submit"]');
  assert.match(await page.textContent('#sitetools-contact-form-status'), /This demo form sent nothing/);
  assert.deepEqual(seen.pageErrors, []);
});

test('with the bridge running each name is registered once: the contact form holds its tool, and leaving the page gives it to the bridge', async () => {
  const other = await watchedPage(run.browser, { console: [] });
  const warnings = [];
  other.on('console', (m) => m.type() === 'warning' && warnings.push(m.text()));
  try {
    await other.goto(`${site}/contact`);
    await until('the bridge’s tools', async () => (await other.webmcp.tools()).length === Object.keys(definitions).length);
    let tools = await other.webmcp.tools();
    assert.deepEqual(tools.map((t) => t.name).sort(), Object.keys(definitions).sort());
    // The registry's tools are the bridge's, with their whole schemas: the search field
    // makes no form of its own beside them.
    assert.deepEqual(tools.find((t) => t.name === 'search_site').inputSchema, definitions.search_site.inputSchema);
    assert.deepEqual((await forms(other)).filter((f) => !f.none).map((f) => f.toolname), ['prefill_contact_form']);
    // The contact form came first: prefill_contact_form is the form (its topics are its enum).
    assert.ok(tools.find((t) => t.name === 'prefill_contact_form').inputSchema.properties.topic.enum.includes('Privacy'));
    assert.deepEqual(warnings.filter((w) => /prefill_contact_form/.test(w)), [], 'the bridge yields to the form in silence');
    // Another page, shown by the site's router: the form is gone, the bridge's tool takes its place.
    await other.click('#sitetools-header a[href="/pricing"]');
    await until('the bridge’s prefill_contact_form', async () => {
      const p = (await other.webmcp.tools()).find((t) => t.name === 'prefill_contact_form');
      return p?.inputSchema.additionalProperties === false;
    });
    tools = await other.webmcp.tools();
    assert.equal(tools.length, Object.keys(definitions).length);
    assert.deepEqual(tools.find((t) => t.name === 'prefill_contact_form').inputSchema, definitions.prefill_contact_form.inputSchema);
  } finally {
    await other.close();
  }
});
