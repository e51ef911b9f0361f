// <sitetools-search>: the site's search for its visitors, with results as they type.
//
//   <script type="module" src="/webmcp/search.js"></script>
//   <sitetools-search></sitetools-search>        a search field, its results below it
//   <sitetools-search modal></sitetools-search>  a "Search" button that opens a dialog
//
// Attributes: `lang` (as the chat's), `label` (the button's text), `placeholder`,
// `modal`, `path-prefix` (only pages under it, e.g. /blog/). Ctrl-K (⌘-K on a Mac), or
// `/` outside a text field, opens the first modal one on the page, else focuses the
// first field. It is the WAI-ARIA combobox: the field owns a listbox of results, the
// active one named by aria-activedescendant; ↑ ↓ choose, Enter opens (with none chosen,
// it searches by meaning too), Escape closes.
//
// Every search is the registry's search_site through POST /api/chat/tools, as for the
// chat and the bridge. A keystroke asks at once (keys closer together than INSTANT_MS
// share one request), mode "instant": by words
// alone, the last one as the start of a word; no paid call, a quarter of a call of the
// rate limit. Enter, or PAUSE_MS without typing, asks the full search (words and meaning:
// the query's embedding goes through the site's cost guard and cache), once per text.
// A newer keystroke aborts the requests of an older text, an answer for a text no longer
// in the field is dropped, and a 429 pauses searching for its Retry-After, quietly.
//
// With a <sitetools-chat> on the page, the last option hands the query to the chat (its
// ask()). Open shadow root, one content-hashed stylesheet, no inline script or style: the
// chat's isolation, theming (its --sitetools-chat-* custom properties) and CSP; the
// parts are listed in search.css.

import { callServerTool, guardSameOrigin } from './core.js';
import { h, icon } from './dom.js';
import { answerViews, viewOf } from './forms.js';
import { fill, languageOf, stringsFor } from './strings.js';

export const TAG = 'sitetools-search';
export const MIN_CHARS = 2; // a shorter query shows nothing and asks nothing
export const INSTANT_MS = 16; // keys closer together than this (a frame) share one request
export const PAUSE_MS = 700; // without typing: the full search
export const LIMIT = 8;
const RETRY_MS = 2000; // a 429 without Retry-After
const CACHED = 100; // answers kept per element, by mode and text

/* global __SITETOOLS_SEARCH_CSS__ */
const CSS_URL = new URL(`./${typeof __SITETOOLS_SEARCH_CSS__ === 'string' ? __SITETOOLS_SEARCH_CSS__ : 'search.css'}`, import.meta.url).href;
const SEARCH_ICON = 'M10 3a7 7 0 0 1 5.6 11.2l4.6 4.6-1.4 1.4-4.6-4.6A7 7 0 1 1 10 3zm0 2a5 5 0 1 0 0 10 5 5 0 0 0 0-10z';
const CHAT_ICON = 'M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2z';

// ---------------------------------------------------------------------------------------
// What to ask, and what to show of the answers: no DOM, so `node --test` runs it.

/** normalize is the field's text as searched: spaces collapsed, none in front. */
export function normalize(text) {
  return String(text ?? '').replace(/\s+/g, ' ').trimStart();
}

/** The query of each mode for a text: the word being typed matters to instant only. */
const queryOf = (mode, text) => (mode === 'full' ? text.trim() : text);

/**
 * snippetParts splits a snippet whose matches are marked **like this** into
 * [{text, mark}]: the marks without their asterisks, everything else as it is.
 */
export function snippetParts(snippet) {
  const s = String(snippet ?? '');
  const out = [];
  let at = 0;
  for (const m of s.matchAll(/\*\*([^*]+?)\*\*/g)) {
    if (m.index > at) out.push({ text: s.slice(at, m.index), mark: false });
    out.push({ text: m[1], mark: true });
    at = m.index + m[0].length;
  }
  if (at < s.length) out.push({ text: s.slice(at), mark: false });
  return out;
}

/**
 * optionsOf is the results of search_site that are pages of the site at origin, as
 * options: {key, url, path, title, snippet}, url with the section's anchor. Anything
 * the same-origin guard refuses is left out.
 */
export function optionsOf(results, origin) {
  const out = [];
  for (const r of Array.isArray(results) ? results : []) {
    if (!r || typeof r.url !== 'string' || typeof r.title !== 'string') continue;
    const anchor = typeof r.anchor === 'string' && r.anchor ? `#${r.anchor}` : '';
    let g = guardSameOrigin(r.url + anchor, origin);
    if (!g.ok && anchor) g = guardSameOrigin(r.url, origin);
    if (!g.ok || out.some((o) => o.key === g.url)) continue;
    const path = g.path.split('#')[0];
    out.push({ key: g.url, url: g.url, path, title: r.title.trim() || path, snippet: typeof r.snippet === 'string' ? r.snippet : '' });
  }
  return out;
}

/** rowsOf is the listbox's rows: the pages, then the hand-over to the chat when there is one. */
export function rowsOf(options, query, hasChat) {
  const q = query.trim();
  return hasChat && q.length >= MIN_CHARS ? [...options, { key: 'ask', ask: true, query: q }] : options;
}

/** moveActive is the active row after key, of count rows, from active (-1: none). */
export function moveActive(active, count, key) {
  if (count === 0) return -1;
  switch (key) {
    case 'ArrowDown':
      return active < 0 || active >= count - 1 ? 0 : active + 1;
    case 'ArrowUp':
      return active <= 0 ? count - 1 : active - 1;
    default:
      return active;
  }
}

/**
 * searchSite calls search_site with args through the site's tool endpoint: {status,
 * results} (results null when it failed), or for a 429 {status, retryMs}. An aborted
 * call rejects.
 */
export async function searchSite(args, signal, fetchImpl = globalThis.fetch) {
  let res = null;
  const r = await callServerTool('search_site', args, { fetch: (url, init) => fetchImpl(url, init).then((x) => (res = x)), signal });
  const status = res?.status ?? 0;
  if (status === 429) {
    const s = Number.parseInt(res.headers.get('Retry-After') ?? '', 10);
    return { status, results: null, retryMs: s > 0 ? Math.min(s, 60) * 1000 : RETRY_MS };
  }
  const results = r.isError ? null : r.structuredContent?.results;
  return { status, results: Array.isArray(results) ? results : null };
}

/**
 * Typeahead decides what to ask and when: input(text) on every change of the field,
 * enter() for Enter with no option chosen. It calls search(args, signal) and then
 * show(text, mode, results, failed) for the text in the field only, never an older
 * answer after a newer one; busy(bool) says whether a request is under way. Answers are
 * kept: a text searched before is shown without asking again.
 */
export class Typeahead {
  #search;
  #show;
  #busy;
  #timers;
  #now;
  #args;
  #text = '';
  #cache = new Map();
  #flight = { instant: null, full: null };
  #due = { instant: 0, full: 0 };
  #seq = 0;
  #shown = 0;
  #until = 0; // no request before this (a 429's Retry-After)
  #lastInstant = -Infinity; // when the last instant search was asked

  constructor({ search, show, busy = () => {}, timers = globalThis, now = () => Date.now(), args = {} }) {
    this.#search = search;
    this.#show = show;
    this.#busy = busy;
    this.#timers = timers;
    this.#now = now;
    this.#args = args;
  }

  get text() {
    return this.#text;
  }

  /** input takes the field's text after a keystroke. */
  input(value) {
    const text = normalize(value);
    if (text === this.#text) return;
    this.#text = text;
    this.#cancel('instant', 'full');
    for (const mode of ['instant', 'full']) {
      if (this.#flight[mode] && this.#flight[mode].query !== queryOf(mode, text)) this.#abort(mode);
    }
    if (text.trim().length < MIN_CHARS) {
      this.#shown = ++this.#seq;
      this.#show(text, null, null, false);
      return;
    }
    const full = this.#cache.get(`full\n${text.trim()}`);
    if (full) {
      this.#shown = ++this.#seq;
      this.#show(text, 'full', full, false);
      return;
    }
    // While a 429 holds, the text waits for the full search alone: one request, when allowed.
    if (this.#until > this.#now()) {
      this.#later('full', PAUSE_MS);
      return;
    }
    const instant = this.#cache.get(`instant\n${text}`);
    if (instant) {
      this.#shown = ++this.#seq;
      this.#show(text, 'instant', instant, false);
    } else {
      // The first key after a quiet moment asks at once; keys closer together than
      // INSTANT_MS share one request, at the end of that moment.
      const since = this.#now() - this.#lastInstant;
      if (since >= INSTANT_MS) this.#run('instant');
      else this.#later('instant', INSTANT_MS - since);
    }
    this.#later('full', PAUSE_MS);
  }

  /** stop cancels what is due and under way: the visitor chose, or closed the search. */
  stop() {
    this.#cancel('instant', 'full');
    this.#abort('instant');
    this.#abort('full');
    this.#busy(false);
  }

  /** enter asks the full search for the text now, unless it is asked or known already. */
  enter() {
    this.#cancel('instant', 'full');
    this.#run('full');
  }

  #later(mode, ms) {
    this.#cancel(mode);
    this.#due[mode] = this.#timers.setTimeout(() => {
      this.#due[mode] = 0;
      this.#run(mode);
    }, Math.max(ms, this.#until - this.#now()));
  }

  #cancel(...modes) {
    for (const mode of modes) {
      if (this.#due[mode]) this.#timers.clearTimeout(this.#due[mode]);
      this.#due[mode] = 0;
    }
  }

  #abort(mode) {
    this.#flight[mode]?.ctrl.abort();
    this.#flight[mode] = null;
  }

  async #run(mode) {
    const query = queryOf(mode, this.#text);
    if (query.trim().length < MIN_CHARS) return;
    const key = `${mode}\n${query}`;
    if (this.#cache.has(key)) {
      this.#shown = ++this.#seq;
      this.#show(this.#text, mode, this.#cache.get(key), false);
      return;
    }
    if (this.#flight[mode]?.query === query) return;
    if (this.#until > this.#now()) {
      this.#later(mode, 0);
      return;
    }
    this.#abort(mode);
    if (mode === 'instant') this.#lastInstant = this.#now();
    const ctrl = new AbortController();
    const seq = ++this.#seq;
    const flight = { query, ctrl };
    this.#flight[mode] = flight;
    this.#busy(true);
    const args = { query, ...this.#args, limit: LIMIT };
    if (mode === 'instant') args.mode = 'instant';
    let r = null;
    try {
      r = await this.#search(args, ctrl.signal);
    } catch {
      // aborted: a newer text took its place
    }
    if (this.#flight[mode] === flight) this.#flight[mode] = null;
    this.#busy(!!(this.#flight.instant || this.#flight.full));
    if (ctrl.signal.aborted || !r) return;
    if (r.status === 429) {
      // Quietly: what is shown stays, and the text is asked again once allowed.
      this.#until = this.#now() + r.retryMs;
      if (queryOf(mode, this.#text) === query) this.#later(mode, 0);
      return;
    }
    if (r.results) {
      if (this.#cache.size >= CACHED) this.#cache.delete(this.#cache.keys().next().value);
      this.#cache.set(key, r.results);
    }
    if (queryOf(mode, this.#text) !== query || seq < this.#shown) return;
    this.#shown = seq;
    this.#show(this.#text, mode, r.results ?? [], !r.results);
  }
}

// ---------------------------------------------------------------------------------------
// The keyboard shortcut

const MAC = /mac|iphone|ipad/i.test(globalThis.navigator?.userAgentData?.platform || globalThis.navigator?.platform || '');

/** isShortcut says whether a keydown opens the search: Ctrl-K (⌘-K on a Mac), or `/` outside a text field. */
export function isShortcut(ev, editing, mac = MAC) {
  if (ev.defaultPrevented || ev.isComposing || ev.altKey) return false;
  if (String(ev.key).toLowerCase() === 'k') return !ev.shiftKey && (mac ? ev.metaKey && !ev.ctrlKey : ev.ctrlKey && !ev.metaKey);
  return ev.key === '/' && !ev.ctrlKey && !ev.metaKey && !editing;
}

/** deepActive is the focused element, inside shadow roots too. */
function deepActive() {
  let a = document.activeElement;
  while (a?.shadowRoot?.activeElement) a = a.shadowRoot.activeElement;
  return a;
}

function isEditing(el) {
  return !!el && (el.isContentEditable || ['input', 'textarea', 'select'].includes(el.localName));
}

// ---------------------------------------------------------------------------------------
// The element

/** snippetNodes are a snippet's text nodes, its matches in <mark>s: never parsed as HTML. */
function snippetNodes(snippet) {
  return snippetParts(snippet).map((p) => (p.mark ? h('mark', { part: 'mark' }, p.text) : document.createTextNode(p.text)));
}

/**
 * navigate shows a page of this site, as guardSameOrigin returned it: through the page's
 * router when it takes `sitetools:navigate` (as bridge.js's askRouter asks), else as an
 * ordinary page load. Not bridge.js's own: loading it would start the bridge.
 */
function navigate(g) {
  const ev = new CustomEvent('sitetools:navigate', { detail: { url: g.path, done: null }, cancelable: true });
  document.dispatchEvent(ev);
  if (!ev.defaultPrevented) location.assign(g.url);
}

function defineElement() {
  class SitetoolsSearch extends HTMLElement {
    static observedAttributes = ['lang', 'label', 'placeholder', 'modal', 'path-prefix'];

    #el = null;
    #t = stringsFor('en');
    #lang = '';
    #overrides = null;
    #typeahead = null;
    #rows = []; // what the listbox shows: options and the hand-over to the chat
    #active = -1;
    #found = null; // the last answer shown: {text, options, failed}, or null
    #announce = 0;
    #returnFocus = true;
    #dismissed = false; // Escape hid the results: they stay hidden until the visitor types

    connectedCallback() {
      if (!this.#el) this.#build();
      this.#applyMode();
      this.#applyLanguage();
    }

    disconnectedCallback() {
      this.#typeahead?.stop();
    }

    attributeChangedCallback(name) {
      if (!this.#el) return;
      if (name === 'modal') this.#applyMode();
      if (name === 'path-prefix') this.#newTypeahead();
      this.#applyLanguage();
    }

    /** The site's own words, as the chat's `strings` (see strings.js, keys search*). */
    get strings() {
      return this.#overrides;
    }

    set strings(v) {
      this.#overrides = v && typeof v === 'object' ? v : null;
      if (this.#el) this.#applyLanguage();
    }

    /** The language the element speaks now: "en" or "de". */
    get language() {
      return this.#lang;
    }

    /** Opens the dialog (modal) or focuses the field, its text selected. */
    open() {
      const e = this.#el;
      if (!e) return;
      if (this.#modal && !e.dialog.open) {
        this.#returnFocus = true;
        e.dialog.showModal();
      }
      e.input.focus();
      e.input.select();
      this.#expand(true);
    }

    /** Closes the dialog and returns focus to its button; collapses the results. */
    close() {
      this.#close(true);
    }

    #close(returnFocus) {
      const e = this.#el;
      if (!e) return;
      this.#typeahead.stop();
      this.#expand(false);
      // The dialog's close event comes later: it returns focus, or leaves it to the page
      // or the chat the visitor went on to.
      this.#returnFocus = returnFocus;
      if (this.#modal && e.dialog.open) e.dialog.close();
    }

    get #modal() {
      return this.hasAttribute('modal');
    }

    // -----------------------------------------------------------------------------------
    // Building

    #build() {
      const root = this.attachShadow({ mode: 'open' });
      const el = {};
      const sheet = h('link', { rel: 'stylesheet', href: CSS_URL });
      el.root = h('div', { class: 'root', part: 'root', hidden: true });
      // Shown once the stylesheet is there (or failed: then unstyled but usable).
      const reveal = () => {
        el.root.hidden = false;
      };
      sheet.addEventListener('load', reveal, { once: true });
      sheet.addEventListener('error', reveal, { once: true });

      el.label = h('label', { class: 'visually-hidden', for: 'sitetools-search-input' });
      el.input = h('input', {
        type: 'text',
        id: 'sitetools-search-input',
        class: 'input',
        part: 'input',
        role: 'combobox',
        'aria-autocomplete': 'list',
        'aria-expanded': 'false',
        'aria-controls': 'sitetools-search-results',
        autocomplete: 'off',
        autocapitalize: 'off',
        spellcheck: 'false',
        enterkeyhint: 'search',
        name: 'query',
      });
      el.busy = h('span', { class: 'busy', 'aria-hidden': 'true' });
      el.close = h('button', { type: 'button', class: 'close', part: 'close', id: 'sitetools-search-close' }, '✕');
      el.field = h('div', { class: 'field', part: 'field' }, icon(SEARCH_ICON), el.label, el.input, el.busy, el.close);
      el.list = h('div', { class: 'results', part: 'results', id: 'sitetools-search-results', role: 'listbox', hidden: true });
      el.empty = h('p', { class: 'empty', part: 'empty', hidden: true });
      el.keys = h('p', { class: 'keys', 'aria-hidden': 'true' });
      el.popup = h('div', { class: 'popup', part: 'popup', hidden: true }, el.empty, el.list, el.keys);
      el.status = h('p', { class: 'visually-hidden', id: 'sitetools-search-status', role: 'status' });
      el.box = h('div', { class: 'box', part: 'box' }, el.field, el.popup, el.status);

      el.triggerLabel = h('span', { class: 'trigger-label' });
      el.kbd = h('kbd', { class: 'shortcut', part: 'shortcut', 'aria-hidden': 'true' });
      el.trigger = h(
        'button',
        { type: 'button', class: 'trigger', part: 'trigger', id: 'sitetools-search-trigger', 'aria-haspopup': 'dialog', 'aria-keyshortcuts': MAC ? 'Meta+K' : 'Control+K' },
        icon(SEARCH_ICON),
        el.triggerLabel,
        el.kbd,
      );
      el.dialog = h('dialog', { class: 'dialog', part: 'dialog', id: 'sitetools-search-dialog' });
      el.root.append(el.box);
      root.append(sheet, el.root);
      // For the browser's agent the field is a view of search_site (forms.js), from the registry.
      answerViews(root);
      viewOf(root, 'sitetools-search-form', 'search_site', [el.input]);
      this.#el = el;
      this.#newTypeahead();
      this.#wire();
    }

    #newTypeahead() {
      const prefix = this.getAttribute('path-prefix');
      this.#typeahead = new Typeahead({
        search: (args, signal) => searchSite(args, signal),
        show: (text, mode, results, failed) => this.#showFound(text, results, failed),
        busy: (on) => this.#el.box.classList.toggle('searching', on),
        args: prefix && prefix.startsWith('/') ? { pathPrefix: prefix } : {},
      });
      if (this.#el.input.value) this.#typeahead.input(this.#el.input.value);
    }

    // applyMode puts the combobox in the page, or in the dialog behind the button.
    #applyMode() {
      const e = this.#el;
      const modal = this.#modal;
      e.root.classList.toggle('modal', modal);
      e.close.hidden = !modal;
      if (modal) {
        e.dialog.append(e.box);
        e.root.replaceChildren(e.trigger, e.dialog);
      } else {
        if (e.dialog.open) e.dialog.close();
        e.root.replaceChildren(e.box);
      }
      this.#expand(false);
    }

    #wire() {
      const e = this.#el;
      e.input.addEventListener('input', () => {
        this.#dismissed = false;
        this.#typeahead.input(e.input.value);
      });
      e.input.addEventListener('focus', () => this.#expand(true));
      e.input.addEventListener('keydown', (ev) => this.#key(ev));
      // Focus stays in the field while the pointer chooses.
      e.popup.addEventListener('mousedown', (ev) => ev.preventDefault());
      e.list.addEventListener('click', (ev) => {
        const option = ev.target instanceof Element ? ev.target.closest('[role="option"]') : null;
        const i = option ? Number(option.dataset.row) : -1;
        if (!(i >= 0 && i < this.#rows.length)) return;
        // Ctrl-, ⌘-, Shift- or middle-click: the browser's, as for any link.
        if (!this.#rows[i].ask && (ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey)) return;
        ev.preventDefault();
        this.#choose(i);
      });
      this.shadowRoot.addEventListener('focusout', (ev) => {
        if (!this.#modal && !(ev.relatedTarget instanceof Node && this.shadowRoot.contains(ev.relatedTarget))) this.#expand(false);
      });
      e.trigger.addEventListener('click', () => this.open());
      e.close.addEventListener('click', () => this.close());
      // A click on the backdrop (the dialog itself, outside its box) closes it.
      e.dialog.addEventListener('click', (ev) => {
        if (ev.target === e.dialog) this.close();
      });
      e.dialog.addEventListener('close', () => {
        this.#expand(false);
        if (this.#returnFocus) e.trigger.focus();
      });
    }

    #key(ev) {
      const e = this.#el;
      if (ev.isComposing) return;
      switch (ev.key) {
        case 'ArrowDown':
        case 'ArrowUp':
          if (!this.#rows.length) return;
          ev.preventDefault();
          this.#dismissed = false;
          this.#expand(true);
          this.#setActive(moveActive(this.#active, this.#rows.length, ev.key));
          return;
        case 'Enter':
          ev.preventDefault();
          if (this.#active >= 0 && this.#expanded) this.#choose(this.#active);
          else if (this.#typeahead.text.trim().length >= MIN_CHARS) {
            this.#dismissed = false;
            this.#expand(true);
            this.#typeahead.enter();
          }
          return;
        case 'Escape':
          ev.preventDefault();
          if (this.#modal) this.close();
          else if (!this.#el.popup.hidden) {
            this.#dismissed = true;
            this.#expand(false);
          }
          else if (e.input.value) {
            e.input.value = '';
            this.#typeahead.input('');
          }
          return;
        default:
      }
    }

    // -----------------------------------------------------------------------------------
    // The listbox

    get #expanded() {
      return this.#el.input.getAttribute('aria-expanded') === 'true';
    }

    // expand shows the results (when there is anything to show and the field has focus or
    // the dialog is open), or hides them.
    #expand(on) {
      const e = this.#el;
      const shown = on && !this.#dismissed && this.#found !== null && (this.#modal ? e.dialog.open : this.shadowRoot.activeElement === e.input);
      e.popup.hidden = !shown;
      e.input.setAttribute('aria-expanded', String(shown && this.#rows.length > 0));
      if (!shown) this.#setActive(-1);
    }

    #setActive(i) {
      const e = this.#el;
      this.#active = i;
      for (const [n, node] of [...e.list.children].entries()) node.setAttribute('aria-selected', String(n === i));
      const node = i >= 0 ? e.list.children[i] : null;
      if (node) {
        e.input.setAttribute('aria-activedescendant', node.id);
        node.scrollIntoView({ block: 'nearest' });
      } else {
        e.input.removeAttribute('aria-activedescendant');
      }
    }

    // showFound shows the answer for text: the pages found, or none, or that search failed.
    #showFound(text, results, failed) {
      if (text.trim().length < MIN_CHARS) {
        this.#found = null;
        this.#render();
        return;
      }
      const options = failed ? this.#found?.options ?? [] : optionsOf(results, location.origin);
      this.#found = { text, options, failed };
      this.#render();
      this.#expand(true);
    }

    // render builds the rows from what was found, keeping the active one when it is still there.
    #render() {
      const e = this.#el;
      const t = this.#t;
      const f = this.#found;
      const before = this.#rows[this.#active]?.key;
      const chat = document.querySelector('sitetools-chat');
      this.#rows = f ? rowsOf(f.options, f.text, typeof chat?.ask === 'function') : [];
      e.list.replaceChildren(
        ...this.#rows.map((row, i) => {
          const id = `sitetools-search-option-${i}`;
          if (row.ask) {
            return h('div', { role: 'option', id, 'data-row': i, class: 'option ask', part: 'result ask' }, icon(CHAT_ICON), h('span', {}, fill(t.searchAsk, { q: row.query })));
          }
          return h(
            'a',
            { role: 'option', id, 'data-row': i, class: 'option', part: 'result', href: row.url, tabindex: '-1' },
            h('span', { class: 'title', part: 'result-title' }, row.title),
            h('span', { class: 'path' }, row.path),
            h('span', { class: 'snippet', part: 'snippet' }, ...snippetNodes(row.snippet)),
          );
        }),
      );
      e.list.hidden = this.#rows.length === 0;
      const none = !!f && (f.failed || f.options.length === 0);
      e.empty.hidden = !none;
      e.empty.textContent = !f ? '' : f.failed ? t.searchFailed : fill(t.searchNoneFor, { q: f.text.trim() });
      this.#setActive(this.#rows.findIndex((r) => r.key === before));
      this.#expand(!e.popup.hidden);
      // Said once typing settles, not at every keystroke.
      clearTimeout(this.#announce);
      const n = f?.options.length ?? 0;
      const say = !f ? '' : f.failed ? t.searchFailed : n === 0 ? t.searchNone : n === 1 ? t.searchResult : fill(t.searchResults, { n });
      this.#announce = setTimeout(() => {
        e.status.textContent = say;
      }, 400);
    }

    #choose(i) {
      const row = this.#rows[i];
      if (!row) return;
      this.#close(false);
      if (row.ask) {
        document.querySelector('sitetools-chat')?.ask?.(row.query);
        return;
      }
      const g = guardSameOrigin(row.url, location.origin);
      if (g.ok) navigate(g);
    }

    // -----------------------------------------------------------------------------------
    // Language

    #applyLanguage() {
      const tag = this.getAttribute('lang') || this.parentElement?.closest('[lang]')?.getAttribute('lang') || document.documentElement.lang;
      const lang = languageOf(tag);
      const t = (this.#t = stringsFor(lang, this.#overrides));
      const e = this.#el;
      this.#lang = lang;
      e.root.lang = lang;
      e.label.textContent = t.searchLabel;
      e.input.placeholder = this.getAttribute('placeholder') || t.searchPlaceholder;
      e.list.setAttribute('aria-label', t.searchList);
      e.dialog.setAttribute('aria-label', t.searchLabel);
      e.close.setAttribute('aria-label', t.searchClose);
      e.triggerLabel.textContent = this.getAttribute('label') || t.searchTrigger;
      e.kbd.textContent = MAC ? '⌘ K' : `${t.searchCtrl} K`;
      e.keys.textContent = t.searchKeys;
      if (this.#found) this.#render();
    }
  }
  return SitetoolsSearch;
}

// ---------------------------------------------------------------------------------------
// Start-up: define the element, follow the document's language, take the shortcut.

if (globalThis.customElements && !customElements.get(TAG)) {
  customElements.define(TAG, defineElement());

  new MutationObserver(() => {
    for (const el of document.querySelectorAll(TAG)) el.attributeChangedCallback('lang');
  }).observe(document.documentElement, { attributes: true, attributeFilter: ['lang'] });

  // One element takes the shortcut: the first modal one, else the first.
  document.addEventListener('keydown', (ev) => {
    if (!isShortcut(ev, isEditing(deepActive()))) return;
    const all = [...document.querySelectorAll(TAG)];
    const el = all.find((x) => x.hasAttribute('modal')) ?? all[0];
    if (!el) return;
    ev.preventDefault();
    el.open();
  });
}
