// The WebMCP bridge: it offers this site's tools to the visitor's own MCP client through
// the @jason.today/webmcp relay running on the visitor's computer.
//
//   MCP client ⇄ relay (localhost) ⇄ WebSocket ⇄ this tab ⇄ same-origin /api/chat/tools
//
// When the browser is idle it fetches the catalog (GET /api/chat/tools) and registers
// every tool, plus the browser-local tools, with the relay's widget and, where the
// browser has it, with document.modelContext (native.js); forms that are views of a tool
// get their declarative WebMCP attributes from it (forms.js). A call POSTs back to the
// site and returns the MCP-shaped result. The widget runs headless: its own UI is hidden
// and its status is re-dispatched as DOM events on document:
//
//   sitetools:webmcp-status      detail {state, message, reason, tools}; state is one of
//                                unavailable | disconnected | connecting | connected;
//                                message is English, reason what the relay said went
//                                wrong ("no_token" for a missing token; "" when nothing did)
//   sitetools:webmcp-connect     (listened to) detail {token}: connect with a relay token
//   sitetools:webmcp-disconnect  (listened to)
//   sitetools:navigate           (dispatched, cancelable) detail {url, done}: a client-side
//                                router calls preventDefault() and sets done to a promise
//                                of {status, url, title}; open_page answers once that
//                                promise has resolved and the tab shows url (within 10 s);
//                                unhandled, the tab loads the url
//   sitetools:transcript-changed (dispatched) after save_conversation wrote the transcript
//
// Include it as <script type="module" src="/webmcp/bridge.js"></script>. It starts by
// itself unless <html data-sitetools-bridge="manual">; then call startBridge().

import {
  CONTACT_FIELDS,
  LOCAL_TOOLS,
  callServerTool,
  chooseOption,
  errorResult,
  guardSameOrigin,
  planPrefill,
  resumeConversation,
  saveConversation,
  textResult,
  validatePrefill,
} from './core.js';
import { answerViews, bridgeRegisters, catalog, declareViews, fetchCatalog, redeclare, whenIdle, whenViewsLeave } from './forms.js';
import { fillGaps, modelContext, registerNative, withdrawNative } from './native.js';

const WIDGET_URL = new URL('./widget.js', import.meta.url).href;
const HANDOVER_URL = '/api/handover';
// The widget disconnects after this long without mouse or keyboard activity in the tab
// (its default is 5 minutes: too short for a client working while the visitor reads).
// setTimeout's limit is about 24.8 days; 12 hours stays far below it.
const INACTIVITY_MS = 12 * 60 * 60 * 1000;

let state = { state: 'disconnected', message: 'Not connected.', reason: '', tools: 0 };
let widget = null;
let started = null;

function emit(next) {
  state = { ...state, ...next };
  document.dispatchEvent(new CustomEvent('sitetools:webmcp-status', { detail: { ...state } }));
}

/** The bridge's current status, as the last sitetools:webmcp-status event said. */
export function bridgeStatus() {
  return { ...state };
}

/** clearWidgetSession removes the widget's webmcp_* keys: it cannot resume from them. */
export function clearWidgetSession(storage = globalThis.sessionStorage) {
  try {
    const stale = [];
    for (let i = 0; i < storage.length; i++) {
      const k = storage.key(i);
      if (k && k.startsWith('webmcp_')) stale.push(k);
    }
    stale.forEach((k) => storage.removeItem(k));
  } catch {
    // Storage may be off (privacy settings): then there is nothing stale either.
  }
}

// Before anything else: a stale session from an earlier page would make the widget try
// to resume and fail.
clearWidgetSession();

function widgetClass() {
  // The widget is a classic script declaring `class WebMCP`: a global binding, though
  // not a property of window.
  // eslint-disable-next-line no-undef
  if (typeof WebMCP === 'function') return WebMCP; // global from the classic script
  return typeof globalThis.WebMCP === 'function' ? globalThis.WebMCP : null;
}

function loadWidget() {
  if (widgetClass()) return Promise.resolve(widgetClass());
  return new Promise((resolve) => {
    const s = document.createElement('script');
    s.src = WIDGET_URL;
    s.async = true;
    s.onload = () => resolve(widgetClass());
    s.onerror = () => resolve(null);
    document.head.appendChild(s);
  });
}

// hideWidgetUI keeps the relay widget's own UI out of sight whatever the page's stylesheet
// says (a reset with `[hidden] { display: block !important }` or `div { display: block
// !important }` would show it). The widget finds its element with
// document.getElementById, so the element stays in the document, but as a child of a
// shadow host whose shadow root has no <slot>: a child that no slot takes is not
// rendered, and no rule of the page can change that. The host and the element are
// display:none as an inline !important declaration too, which beats any rule of a
// stylesheet, set through the CSSOM, which a strict Content-Security-Policy allows.
function hideWidgetUI() {
  const els = [...document.querySelectorAll('[data-webmcp-widget]')];
  if (!els.length) return;
  const host = document.createElement('sitetools-relay');
  host.attachShadow({ mode: 'open' });
  for (const el of [host, ...els]) {
    el.hidden = true;
    el.style.setProperty('display', 'none', 'important');
    el.setAttribute('aria-hidden', 'true');
    el.setAttribute('inert', '');
  }
  host.append(...els);
  document.body.appendChild(host);
}

const WIDGET_STATES = { connected: 'connected', connecting: 'connecting', 'pending-auth': 'connecting', disconnected: 'disconnected' };

// observe follows the widget's status, which it shows only in its own (hidden) UI.
function observe(w) {
  const update = w._updateStatus;
  if (typeof update === 'function') {
    w._updateStatus = function (status, message) {
      update.call(this, status, message);
      const s = WIDGET_STATES[status] ?? 'disconnected';
      emit({ state: s, message: statusMessage(s, message), reason: reasonOf(s, message), tools: w.availableTools?.size ?? state.tools });
    };
  }
  // A safety net should a later widget version change how it reports status.
  setInterval(() => {
    const connected = w.isConnected === true;
    if (connected !== (state.state === 'connected') && state.state !== 'connecting') {
      emit({ state: connected ? 'connected' : 'disconnected', message: statusMessage(connected ? 'connected' : 'disconnected'), reason: '' });
    }
  }, 2000);
}

// reasonOf is why the bridge is not connected, as the relay said it ('' when nothing
// went wrong), for a UI that words the status in its own language.
function reasonOf(s, raw) {
  if (s !== 'disconnected' || !raw || raw === 'Disconnected' || raw === 'disconnected') return '';
  return String(raw);
}

function statusMessage(s, raw) {
  switch (s) {
    case 'connected':
      return 'Connected: your MCP client can use this site’s tools.';
    case 'connecting':
      return 'Connecting to the relay…';
    default:
      return raw && raw !== 'Disconnected' && raw !== 'disconnected' ? `Not connected: ${raw}.` : 'Not connected.';
  }
}

// ---------------------------------------------------------------------------------------
// Navigation and the contact form: what the local tools do in the tab

/**
 * askRouter offers a page, as guardSameOrigin returned it, to the page's client-side
 * router (`sitetools:navigate`): {taken, done}, done being the router's promise of
 * {status, url, title} when it set one.
 */
export function askRouter(g) {
  const detail = { url: g.path, done: null };
  const ev = new CustomEvent('sitetools:navigate', { detail, cancelable: true });
  document.dispatchEvent(ev);
  return { taken: ev.defaultPrevented, done: detail.done };
}

// How long open_page waits for a page that the site's router took to be shown in the tab,
// from the call: past it, the agent is told the page is not shown rather than that it is.
const SHOW_MS = 10000;

/** tabPage is the page the tab shows: its path and query. */
function tabPage() {
  return location.pathname + location.search;
}

/** pageOf is the path and query of url on this site, or '' when it is not one. */
function pageOf(url) {
  try {
    const u = new URL(url, location.href);
    return u.origin === location.origin ? u.pathname + u.search : '';
  } catch {
    return '';
  }
}

/**
 * untilShown resolves true once the tab's address is page (path and query) and, in a tab
 * the visitor can see, the browser has drawn a frame since; false at deadline (a
 * performance.now() time). A router may resolve before it has changed the address, and
 * history.pushState fires no event but the Navigation API's currententrychange: the
 * address is checked on that, on popstate and on every change to the document, and every
 * 100 ms where the browser has no Navigation API.
 */
function untilShown(page, deadline) {
  const nav = globalThis.navigation;
  const atPage = new Promise((resolve) => {
    const observer = new MutationObserver(check);
    const every = nav ? 0 : setInterval(check, 100);
    const timer = setTimeout(() => finish(false), Math.max(0, deadline - performance.now()));
    function finish(ok) {
      observer.disconnect();
      clearInterval(every);
      clearTimeout(timer);
      nav?.removeEventListener?.('currententrychange', check);
      removeEventListener('popstate', check);
      resolve(ok);
    }
    function check() {
      if (tabPage() === page) finish(true);
    }
    observer.observe(document.documentElement, { subtree: true, childList: true, characterData: true });
    nav?.addEventListener?.('currententrychange', check);
    addEventListener('popstate', check);
    check();
  });
  return atPage.then((ok) => ok && drawn(deadline));
}

/**
 * drawn resolves true after the browser's next frame (a hidden tab draws none: there it
 * resolves at once), false at deadline.
 */
function drawn(deadline) {
  if (document.visibilityState !== 'visible' || typeof requestAnimationFrame !== 'function') return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), Math.max(0, deadline - performance.now()));
    // The frame's callbacks run before it is drawn; a task queued from them runs after.
    requestAnimationFrame(() =>
      setTimeout(() => {
        clearTimeout(timer);
        resolve(true);
      }),
    );
  });
}

/** beforeDeadline is what p resolves to, or fallback once deadline has passed. */
function beforeDeadline(p, deadline, fallback) {
  let timer = 0;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve(fallback), Math.max(0, deadline - performance.now()));
  });
  return Promise.race([Promise.resolve(p), late]).finally(() => clearTimeout(timer));
}

/**
 * navigate shows a page in this tab, as guardSameOrigin returned it: through the page's
 * router if it has one, and then only once the tab shows it. It resolves to {status,
 * url, title, shown}; shown is false when the router took the page but the tab did not
 * show it in time.
 */
async function navigate(g) {
  const deadline = performance.now() + SHOW_MS;
  const path = g.path;
  const r = askRouter(g);
  if (r.taken && r.done) {
    const res = await beforeDeadline(r.done, deadline, null);
    if (!res) return { status: 0, url: path, title: '', shown: false };
    // Where the router says it went (a redirect may have taken it elsewhere).
    const page = pageOf(res.url || path) || pageOf(path);
    const shown = await untilShown(page, deadline);
    return { status: res.status, url: res.url || path, title: res.title || '', shown };
  }
  // No router: ask the site whether the page exists, answer, then load it.
  let status = 0;
  try {
    status = (await fetch(path, { method: 'HEAD', credentials: 'same-origin' })).status;
  } catch {
    status = 0;
  }
  setTimeout(() => location.assign(g.url), 50);
  return { status, url: path, title: '', shown: false, loading: true };
}

async function openPage(args) {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return errorResult('arguments must be an object with "url"');
  const extra = Object.keys(args).filter((k) => k !== 'url');
  if (extra.length) return errorResult(`unknown argument "${extra[0]}"`);
  const g = guardSameOrigin(args.url, location.origin);
  if (!g.ok) return errorResult(`Refused: ${g.reason}. open_page shows pages of ${location.origin} only.`);
  const r = await navigate(g);
  if (r.status === 404) {
    return errorResult(
      `There is no page at ${g.path}. Use search_site to find the right page, then open its url.`,
      { url: g.path, status: 404 },
    );
  }
  if (r.status && r.status >= 400) return errorResult(`The site answered HTTP ${r.status} for ${g.path}.`, { url: g.path, status: r.status });
  if (r.loading) {
    // The tab loads the page anew, which ends this script: the answer goes first.
    return textResult(`The tab is loading ${r.url}.`, { url: r.url, title: '', status: r.status });
  }
  if (!r.shown) {
    return errorResult(
      `The site did not show ${g.path} within ${SHOW_MS / 1000} s; the tab still shows ${tabPage()}. Try again, or give the visitor the link.`,
      { url: g.path, status: r.status, tab: tabPage() },
    );
  }
  return textResult(`The tab now shows ${r.url}${r.title ? ` (“${r.title}”)` : ''}.`, { url: r.url, title: r.title, status: r.status });
}

function contactPage() {
  const meta = document.querySelector('meta[name="sitetools:contact"]');
  const g = guardSameOrigin(meta?.content || '/contact', location.origin);
  return g.ok ? g : guardSameOrigin('/contact', location.origin);
}

async function prefillContactForm(args, form = document.querySelector('[data-contact-form]')) {
  const v = validatePrefill(args);
  if (!v.ok) return errorResult(`Nothing was filled in. Fix the arguments:\n- ${v.errors.join('\n- ')}`);
  if (!form) {
    const page = contactPage();
    const r = await navigate(page);
    form = document.querySelector('[data-contact-form]');
    if (!form && r.shown === false && !r.loading) return errorResult(`The site did not show its contact page ${page.path} within ${SHOW_MS / 1000} s; nothing was filled in.`);
    if (!form) return errorResult(`This site has no contact form${r.status === 404 ? '' : ' on ' + page.path}.`);
  }
  const fields = {};
  for (const name of Object.keys(CONTACT_FIELDS)) {
    const el = form.elements.namedItem(name);
    if (el && 'value' in el) fields[name] = el;
  }
  if (fields.topic?.localName === 'select' && v.values.topic !== undefined) {
    const c = chooseOption('topic', v.values.topic, [...fields.topic.options].map((o) => ({ value: o.value, label: o.text })));
    if (!c.ok) return errorResult(`Nothing was filled in: ${c.error}.`);
    v.values.topic = c.value;
  }
  const current = Object.fromEntries(Object.entries(fields).map(([k, el]) => [k, el.value]));
  const plan = planPrefill(
    Object.fromEntries(Object.entries(v.values).filter(([k]) => fields[k])),
    current,
  );
  for (const [name, value] of Object.entries(plan.fill)) {
    fields[name].value = value;
    fields[name].dispatchEvent(new Event('input', { bubbles: true }));
  }
  form.scrollIntoView({ block: 'start' });
  const filled = Object.keys(plan.fill);
  const parts = [];
  parts.push(filled.length ? `Filled in: ${filled.join(', ')}.` : 'Filled in nothing.');
  if (plan.kept.length) parts.push(`Kept what the visitor had typed in: ${plan.kept.join(', ')}.`);
  parts.push('Nothing was sent: the visitor reviews the form and sends it themselves.');
  countHandover('prefill_contact_form');
  return textResult(parts.join(' '), { filled, kept: plan.kept, submitted: false, page: location.pathname });
}

/**
 * countHandover tells the site that the visitor's assistant handed them over to the
 * contact form: the tool's name and nothing else (no argument, no field), so that the
 * site can count handovers. The bridge runs the tool for the visitor's own assistant
 * (relay or the browser's WebMCP), never inside a turn of the site's chat, so it has no
 * answer id to send (POST /api/handover takes one as "answerId" when a caller has it):
 * the site counts it once per visitor and day, and a retry or a replay counts nothing.
 * Its answer does not matter, and it outlives the page.
 */
function countHandover(tool) {
  fetch(HANDOVER_URL, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ tool }),
    credentials: 'omit',
    keepalive: true,
  }).catch(() => {});
}

function localExecutors() {
  return {
    resume_conversation: async (args) => resumeConversation(args, { storage: localStorage, origin: location.origin }),
    save_conversation: async (args) => {
      const r = await saveConversation(args, { storage: localStorage, confirm: (msg) => window.confirm(msg) });
      if (!r.isError && r.structuredContent?.saved > 0) document.dispatchEvent(new CustomEvent('sitetools:transcript-changed'));
      return r;
    },
    open_page: openPage,
    prefill_contact_form: (args) => prefillContactForm(args),
  };
}

// ---------------------------------------------------------------------------------------
// Start-up

// How often the catalog is revalidated (a 304 while it is unchanged), and on returning
// to the tab; a new ETag registers the new set with the browser's WebMCP.
const CATALOG_RECHECK_MS = 5 * 60 * 1000;

function toolSet(serverTools) {
  const names = new Set(serverTools.map((t) => t.name));
  const exec = localExecutors();
  const tools = [
    ...serverTools.map((t) => ({
      ...t,
      local: false,
      execute: (args, signal) => callServerTool(t.name, args, { fetch: (...a) => fetch(...a), signal }),
    })),
    // A server tool of the same name wins: the registry is the contract.
    ...LOCAL_TOOLS.filter((t) => !names.has(t.name)).map((t) => ({ ...t, local: true, execute: exec[t.name] })),
  ];
  for (const t of tools) {
    t.run = async (args, signal) => {
      try {
        return await t.execute(args ?? {}, signal);
      } catch (e) {
        if (signal?.aborted) throw e;
        return errorResult(`The tool failed in the browser: ${e && e.message ? e.message : e}`);
      }
    };
  }
  return tools;
}

async function recheckCatalog() {
  const serverTools = await fetchCatalog();
  if (serverTools === null) return;
  await registerNative(toolSet(serverTools));
  redeclare();
}

async function start() {
  await whenIdle();
  const tools = toolSet(await catalog());
  await registerNative(tools);
  if (modelContext()) {
    whenViewsLeave(fillGaps);
    setInterval(recheckCatalog, CATALOG_RECHECK_MS);
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible') recheckCatalog();
    });
  }

  const Widget = await loadWidget();
  if (!Widget) {
    emit({ state: 'unavailable', message: 'The relay widget is not installed on this site.', tools: tools.length });
    return null;
  }
  clearWidgetSession();
  widget = new Widget({ inactivityTimeout: INACTIVITY_MS });
  hideWidgetUI();
  observe(widget);
  for (const t of tools) widget.registerTool(t.name, t.description, t.inputSchema, (args) => t.run(args));
  emit({ state: 'disconnected', message: 'Not connected.', tools: tools.length });
  return widget;
}

// The one same-origin guard, for a site's own router (see core.js).
export { guardSameOrigin, withdrawNative };

/** startBridge starts the bridge once; later calls return the same promise. */
export function startBridge() {
  // The registry's tools will be the browser's through the bridge (see forms.js viewOf).
  if (!started && modelContext()) bridgeRegisters();
  if (!started) started = start();
  return started;
}

document.addEventListener('sitetools:webmcp-connect', async (e) => {
  const token = String(e.detail?.token ?? '').trim();
  if (!token) {
    emit({ state: 'disconnected', message: 'Not connected: paste the token from your MCP client first.', reason: 'no_token' });
    return;
  }
  emit({ state: 'connecting', message: statusMessage('connecting'), reason: '' });
  const w = await startBridge();
  if (!w) {
    emit({ state: 'unavailable', message: 'The relay widget is not installed on this site.' });
    return;
  }
  if (w.isConnected) w.disconnect();
  clearWidgetSession();
  w.connect(token);
});

document.addEventListener('sitetools:webmcp-disconnect', async () => {
  const w = await startBridge();
  if (w) w.disconnect();
});

// The forms that are views of a tool are declared and answered even before the bridge
// starts, or without it ("manual"): the browser's agent may use them meanwhile.
answerViews(document, { prefill_contact_form: (filled, form) => prefillContactForm(filled, form) });
declareViews(document);

if (document.documentElement.dataset.sitetoolsBridge !== 'manual') startBridge();
