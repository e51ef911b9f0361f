// Declarative WebMCP: a <form> that is a view of one tool of the registry.
//
//   <form data-sitetools-tool="search_site"> … <input name="query"> … </form>
//
// The form's toolname, tooldescription and toolautosubmit, and each named field's
// toolparamdescription, maxlength and required, are written from the tool's definition
// (GET /api/chat/tools, or local-tools.json for a browser-local tool), never by hand; the
// pages sitetools renders carry them from the same definition already (forms.go). An
// agent's submit (SubmitEvent.agentInvoked) runs the tool with what the agent filled in
// and answers with its result (respondWith): the call, guard and gates of the tool's
// imperative registration. Names as in the declarative explainer of
// webmachinelearning/webmcp (0b676d2, June 2026), which Chromium 156 implements.
//
// Every view has toolautosubmit: the agent's submit is the tool call, and a tool that must
// ask the visitor asks itself (as save_conversation does), as on every other channel.
// Without it the visitor's own click would be the agent's submit: the contact form's Send
// would fill the form instead of sending it.
//
// A form that is no tool (the chat's question box and relay token) carries
// data-sitetools-no-tool. The draft has no way for a form to opt out, so Lighthouse's
// webmcp-form-coverage lists such forms as unannotated, which is what they are.
//
// A tool's name is registered once in a document, by whoever comes first: a view or the
// bridge's registration with document.modelContext (native.js). Either way it is the same
// definition and the same call. A widget's field makes no form of its own for a tool the
// bridge registers (viewOf): the registration has the registry's whole schema.

import { LOCAL_TOOLS, callServerTool, errorResult } from './core.js';

export const VIEW_ATTR = 'data-sitetools-tool';
const CATALOG_URL = '/api/chat/tools';

let latest = null; // the registry's tools as last fetched
let etag = '';
let pending = null;
const served = new Map(); // root → names of the browser-local tools its views may be
const warned = new WeakSet();
const leaving = []; // called when a view leaves the document
let bridged = false; // the bridge registers the registry's tools with document.modelContext

/**
 * fetchCatalog revalidates the registry's tools: the list when it is new, null when it is
 * unchanged (its ETag) or cannot be had. The views follow a new list on redeclare().
 */
export async function fetchCatalog() {
  let tools;
  try {
    const headers = { Accept: 'application/json' };
    if (etag) headers['If-None-Match'] = etag;
    const res = await fetch(CATALOG_URL, { headers, credentials: 'same-origin', cache: 'no-cache' });
    if (res.status === 304 || !res.ok) return null;
    const body = await res.json();
    etag = res.headers.get('ETag') ?? '';
    tools = Array.isArray(body.tools) ? body.tools.filter((t) => t && typeof t.name === 'string') : [];
  } catch {
    return null;
  }
  latest = tools;
  return tools;
}

/**
 * redeclare makes every view follow the catalog as last fetched. The bridge calls it once
 * it has registered the new catalog with document.modelContext: a view changed while the
 * names are free would take them, and the bridge's registrations would be refused.
 */
export function redeclare() {
  for (const root of served.keys()) declareAll(root);
}

/** whenIdle resolves when the browser is idle (within 3 s): the catalog waits for the page. */
export function whenIdle() {
  return new Promise((resolve) => {
    if (typeof requestIdleCallback === 'function') requestIdleCallback(() => resolve(), { timeout: 3000 });
    else setTimeout(resolve, 200);
  });
}

/** catalog is the registry's tools as last fetched, fetched once if never ([] when it cannot be had). */
export function catalog() {
  if (latest) return Promise.resolve(latest);
  pending ??= fetchCatalog().then((t) => {
    pending = null;
    return t ?? latest ?? [];
  });
  return pending;
}

// ---------------------------------------------------------------------------------------
// The attributes: no DOM, so `node --test` runs it.

const own = (o, k) => !!o && typeof o === 'object' && Object.hasOwn(o, k);

/** formAttributes are a view's own attributes for tool. */
export function formAttributes(tool) {
  return { toolname: tool.name, tooldescription: String(tool.description ?? ''), toolautosubmit: '' };
}

/**
 * paramAttributes are the attributes of the field named name for tool's parameter of that
 * name (a null value: no such attribute), or null when the tool has no such parameter. A
 * <select> (choice) has no maxlength: its options are the choice.
 */
export function paramAttributes(tool, name, choice = false) {
  const schema = tool.inputSchema ?? {};
  if (!own(schema.properties, name) || !schema.properties[name] || typeof schema.properties[name] !== 'object') return null;
  const p = schema.properties[name];
  return {
    toolparamdescription: typeof p.description === 'string' ? p.description : null,
    maxlength: Number.isInteger(p.maxLength) && !choice ? String(p.maxLength) : null,
    required: Array.isArray(schema.required) && schema.required.includes(name) ? '' : null,
  };
}

/**
 * argsOf is the tool's arguments from the fields an agent filled in ({name: value}): a
 * number where the schema wants one, everything else as the field had it.
 */
export function argsOf(tool, filled) {
  const props = tool?.inputSchema?.properties;
  const out = {};
  for (const [k, v] of Object.entries(filled)) {
    const type = own(props, k) ? props[k]?.type : undefined;
    if ((type === 'integer' || type === 'number') && typeof v === 'string') {
      if (v.trim() === '') continue;
      out[k] = Number.isFinite(Number(v)) ? Number(v) : v;
    } else {
      out[k] = v;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// The DOM

const NOT_PARAMS = new Set(['submit', 'button', 'reset', 'image', 'fieldset', 'output', 'object']);

/** fieldsOf are a form's named fields: the parameters an agent sees. */
export function fieldsOf(form) {
  return [...form.elements].filter((el) => el.name && !NOT_PARAMS.has(el.type) && !NOT_PARAMS.has(el.localName));
}

function setAttributes(el, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    // Unchanged attributes stay untouched: a change re-registers the tool and cancels a call under way.
    if (v === null) el.removeAttribute(k);
    else if (el.getAttribute(k) !== v) el.setAttribute(k, v);
  }
}

/**
 * declare writes form's attributes from tool and returns where the two disagree: a field
 * that is no parameter, a required parameter without a field, an option outside an enum.
 */
export function declare(form, tool) {
  const problems = [];
  const fields = fieldsOf(form);
  setAttributes(form, formAttributes(tool));
  for (const el of fields) {
    const attrs = paramAttributes(tool, el.name, el.localName === 'select');
    if (!attrs) {
      problems.push(`the field "${el.name}" is no parameter of ${tool.name}`);
      continue;
    }
    setAttributes(el, attrs);
    const values = tool.inputSchema.properties[el.name].enum;
    if (el.localName !== 'select' || !Array.isArray(values)) continue;
    for (const o of el.options) if (o.value !== '' && !values.includes(o.value)) problems.push(`the option "${o.value}" of "${el.name}" is not one of ${tool.name}'s`);
  }
  for (const name of tool.inputSchema?.required ?? []) {
    if (!fields.some((el) => el.name === name)) problems.push(`${tool.name} needs "${name}", for which the form has no field`);
  }
  return problems;
}

/** toolFor is the definition a view of name in root follows: the registry's, else a local tool root allows. */
function toolFor(root, name) {
  return latest?.find((t) => t.name === name) ?? (served.get(root)?.has(name) ? LOCAL_TOOLS.find((t) => t.name === name) : undefined);
}

// declareAll declares root's views. A form that has neither toolname nor tooldescription
// yet leaves the document while it gets them, in the same task (nothing is drawn
// meanwhile): set one by one in place, one would be there without the other, which Chrome
// reports as broken. It waits while a field of it has focus, which leaving would take.
function declareAll(root) {
  for (const form of root.querySelectorAll(`form[${VIEW_ATTR}]`)) {
    const tool = toolFor(root, form.getAttribute(VIEW_ATTR));
    const bare = tool && form.isConnected && !form.hasAttribute('toolname') && !form.hasAttribute('tooldescription');
    if (bare && form.contains(root.activeElement)) {
      form.addEventListener('focusout', () => setTimeout(() => declareAll(root)), { once: true });
      continue;
    }
    const [parent, next] = [form.parentNode, form.nextSibling];
    if (bare) form.remove();
    const problems = tool ? declare(form, tool) : [`the site has no tool "${form.getAttribute(VIEW_ATTR)}"`];
    if (bare) parent.insertBefore(form, next);
    if (problems.length && !warned.has(form)) {
      warned.add(form);
      console.warn(`sitetools: a form is not the tool it says it is: ${problems.join('; ')}.`, form);
    }
  }
}

/** bridgeRegisters says the bridge registers the registry's tools with the browser on this page. */
export function bridgeRegisters() {
  bridged = true;
}

/** hasView says whether a declared form in the document, or in a widget's root, is a view of name. */
export function hasView(name) {
  const sel = `form[${VIEW_ATTR}][toolname]`;
  return [...served.keys()].some((root) => [...root.querySelectorAll(sel)].some((f) => f.getAttribute('toolname') === name));
}

/** whenViewsLeave calls fn whenever a view leaves the document (declareViews watches it). */
export function whenViewsLeave(fn) {
  leaving.push(fn);
}

/**
 * viewOf makes fields, named controls a widget built in root, a view of the registry's
 * tool name: a hidden <form> that has the tool's attributes when it joins root, which the
 * fields then join through their form attribute. Chrome reports a form with one of
 * toolname and tooldescription but not the other as broken, and Lighthouse with it; set
 * one by one on a form in place, they would be. Until the registry answers, the fields
 * belong to no form.
 */
export function viewOf(root, id, name, fields) {
  if (!served.has(root)) served.set(root, new Set());
  whenIdle()
    .then(catalog)
    .then((tools) => {
      const tool = tools.find((t) => t.name === name);
      if (!tool || bridged || root.getElementById(id)) return;
      const form = document.createElement('form');
      form.id = id;
      form.hidden = true;
      form.setAttribute(VIEW_ATTR, name);
      setAttributes(form, formAttributes(tool));
      root.append(form);
      // Each field is complete before it joins the form, as the form before it joins root.
      for (const el of fields) {
        setAttributes(el, paramAttributes(tool, el.name, el.localName === 'select') ?? {});
        el.setAttribute('form', id);
      }
      declare(form, tool);
    });
}

/**
 * declareViews declares the views in root (a document or a shadow root) from the registry
 * once it is fetched, again whenever it changes, and every view added later.
 */
export function declareViews(root) {
  if (!served.has(root)) served.set(root, new Set());
  whenIdle()
    .then(catalog)
    .then(() => declareAll(root));
  let due = false;
  const isView = (n) => n.nodeType === 1 && (n.matches(`form[${VIEW_ATTR}]`) || n.querySelector(`form[${VIEW_ATTR}]`));
  new MutationObserver((records) => {
    if (records.some((r) => [...r.removedNodes].some(isView))) for (const fn of leaving) fn();
    if (due || !latest) return;
    due = true;
    queueMicrotask(() => {
      due = false;
      declareAll(root);
    });
  }).observe(root, { childList: true, subtree: true });
}

// ---------------------------------------------------------------------------------------
// An agent's submit

const settled = new WeakMap(); // form → {field: value} as the visitor or a script left it
const touched = new WeakMap(); // form → fields set in the task under way other than by typing
const due = new WeakSet();

const valueOf = (el) => (el.type === 'checkbox' ? el.checked : el.value);

function setValue(el, v) {
  if (el.type === 'checkbox') el.checked = v;
  else el.value = v;
}

function defaultOf(el) {
  if (el.type === 'checkbox') return el.defaultChecked;
  if (el.localName === 'select') return ([...el.options].find((o) => o.defaultSelected) ?? el.options[0])?.value ?? '';
  return el.defaultValue ?? '';
}

// watch keeps, for each view in root, what its fields held before an agent's fill. A
// visitor's typing, pasting or dictation is an InputEvent; the browser filling a form for
// an agent sends plain input events, as a script does, and submits in the same task.
function watch(root) {
  root.addEventListener(
    'input',
    (e) => {
      const el = e.target;
      const form = el?.form;
      if (!form?.hasAttribute(VIEW_ATTR) || !el.name) return;
      if (e instanceof InputEvent) {
        settled.set(form, { ...settled.get(form), [el.name]: valueOf(el) });
        return;
      }
      if (!touched.has(form)) touched.set(form, new Set());
      touched.get(form).add(el.name);
      if (due.has(form)) return;
      due.add(form);
      setTimeout(() => {
        due.delete(form);
        touched.delete(form);
        settled.set(form, Object.fromEntries(fieldsOf(form).map((f) => [f.name, valueOf(f)])));
      });
    },
    true,
  );
  // An agent's submit the browser refused (a field it finds invalid, such as an e-mail
  // address without @) leaves the fields as they were.
  root.addEventListener(
    'invalid',
    (e) => {
      const form = e.target?.form;
      if (!form?.hasAttribute(VIEW_ATTR) || !touched.has(form)) return;
      restore(form, agentFill(form).replaced);
      touched.delete(form);
    },
    true,
  );
}

function restore(form, replaced) {
  for (const el of fieldsOf(form)) if (own(replaced, el.name)) setValue(el, replaced[el.name]);
}

/** agentFill is what the agent put in form's fields in the task under way, and what they held before. */
function agentFill(form) {
  const filled = {};
  const replaced = {};
  for (const el of fieldsOf(form)) {
    if (!touched.get(form)?.has(el.name)) continue;
    filled[el.name] = valueOf(el);
    replaced[el.name] = own(settled.get(form), el.name) ? settled.get(form)[el.name] : defaultOf(el);
  }
  return { filled, replaced };
}

/**
 * answerViews answers agents' submits of the views in root: a view of a browser-local tool
 * in local ({name: run(filled, form)}) runs there, any other through POST /api/chat/tools,
 * with filled, what the agent put in the fields, as its arguments. A local tool writes
 * into the page itself (prefill_contact_form: only into empty fields), so its view's
 * fields first get back what they held before the agent's fill. A registry tool of a
 * local tool's name wins, as it does for the bridge.
 */
export function answerViews(root, local = {}) {
  if (!served.has(root)) served.set(root, new Set());
  for (const name of Object.keys(local)) served.get(root).add(name);
  watch(root);
  root.addEventListener(
    'submit',
    (e) => {
      const form = e.target;
      const name = form instanceof HTMLFormElement ? form.getAttribute(VIEW_ATTR) : null;
      if (!e.agentInvoked || !name || form.getAttribute('toolname') !== name) return;
      const { filled, replaced } = agentFill(form);
      const run = async () => {
        const tool = latest?.some((t) => t.name === name) ? undefined : local[name];
        if (tool) {
          restore(form, replaced);
          return tool(filled, form);
        }
        const def = (await catalog()).find((t) => t.name === name);
        return callServerTool(name, argsOf(def, filled), { fetch: (...a) => fetch(...a) });
      };
      // The page's own submit handling sees defaultPrevented: the agent is answered.
      e.preventDefault();
      e.respondWith(run().catch((err) => errorResult(`The tool failed in the browser: ${err && err.message ? err.message : err}`)));
    },
    true,
  );
}
