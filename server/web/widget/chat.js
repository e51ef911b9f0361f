// The chat widget: one tag adds the site's assistant and the WebMCP bridge to any page,
//
//   <script type="module" src="/webmcp/chat.js"></script>
//
// optionally with a <sitetools-chat> element where the page wants it (attributes `lang`,
// `label`, `placeholder`, `guide` for the page that explains connecting an MCP client
// through the relay, and `inline` for a chat that sits in the page instead of a flyout in
// the corner). Without one, the widget adds one to <body> itself. Without `guide`, the
// page's <meta name="sitetools:guide" content="/try-it"> names the guide, if any. Its
// open(), close() and ask(text) (which <sitetools-search> hands a visitor's query to)
// are public.
//
// Everything lives in an open shadow root: the page's stylesheet cannot change it and
// its styles cannot leak out. Theming is by CSS custom properties and ::part() (see
// chat.css). It loads one content-hashed stylesheet and needs no inline script or style,
// so it runs under a strict Content-Security-Policy.
//
// The conversation lives in localStorage only, after the visitor accepted the privacy
// notice, and is sent with each question to POST /api/chat, whose answer streams back
// as server-sent events. Links in answers and open_page go through the page's router
// when it handles `sitetools:navigate` (see bridge.js), so the widget, its transcript and
// the relay connection survive client-side navigation. A finished answer can be rated
// with a thumb up or down (see feedback.js).

import { askRouter, bridgeStatus } from './bridge.js';
import {
  clearTranscript,
  guardSameOrigin,
  hasConsent,
  loadTranscript,
  newConversationId,
  setConsent,
  storeTranscript,
} from './core.js';
import { activityLine, labelOf, setActivity, storedActivity } from './activity.js';
import { h, icon } from './dom.js';
import { Feedback, answerOf, feedbackControls, feedbackOf, paintFeedback } from './feedback.js';
import { Prover } from './pow.js';
import { renderMarkdown, streamMarkdown } from './render.js';
import { readEventStream } from './sse.js';
import { fill, languageOf, stringsFor } from './strings.js';

/* global __SITETOOLS_CSS__ */
const CSS_URL = new URL(`./${typeof __SITETOOLS_CSS__ === 'string' ? __SITETOOLS_CSS__ : 'chat.css'}`, import.meta.url).href;
const CHAT_URL = '/api/chat';
const SENT_MESSAGES = 40; // the latest messages sent with a question
const OPEN_KEY = 'sitetools.chat.open'; // sessionStorage: the flyout stays open across page loads
const TAG = 'sitetools-chat';

const ICON =
  'M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm3 6v2h10V9H7zm0 4v2h7v-2H7z';

function storage() {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

function session() {
  try {
    return window.sessionStorage;
  } catch {
    return null;
  }
}

/**
 * navigateTo shows a page of this site, as guardSameOrigin returned it: through the
 * page's router when it takes `sitetools:navigate`, else as an ordinary page load.
 */
function navigateTo(g) {
  if (!askRouter(g).taken) location.assign(g.url);
}

class SitetoolsChat extends HTMLElement {
  static observedAttributes = ['lang', 'label', 'placeholder', 'inline', 'guide'];

  #el = null; // the nodes, once built
  #busy = false;
  #overrides = null;
  #t = stringsFor('en');
  #lang = '';
  #status = bridgeStatus();
  #feedback = null; // the ratings of answers, when the browser can store the transcript
  #prover = new Prover(); // the proof of work, when the site asks for one

  connectedCallback() {
    if (!this.#el) this.#build();
    this.#applyLanguage();
  }

  attributeChangedCallback(name) {
    if (!this.#el) return;
    if (name === 'inline') this.#applyMode();
    this.#applyLanguage();
  }

  /** The site's own words: {key: text} or {de: {key: text}}; see strings.js. */
  get strings() {
    return this.#overrides;
  }

  set strings(v) {
    this.#overrides = v && typeof v === 'object' ? v : null;
    if (this.#el) this.#applyLanguage();
  }

  /** The language the widget speaks now: "en" or "de". */
  get language() {
    return this.#lang;
  }

  /** Opens the flyout (or focuses the inline chat). */
  open() {
    const e = this.#el;
    if (!e) return;
    e.panel.hidden = false;
    e.launcher.setAttribute('aria-expanded', 'true');
    e.launcher.hidden = true;
    session()?.setItem(OPEN_KEY, '1');
    this.#render();
    this.#showConsentOrForm(true);
  }

  /** Closes the flyout and returns focus to the launcher. */
  close() {
    const e = this.#el;
    if (!e || this.#inline) return;
    this.#feedback?.flush();
    this.#closeCard(false);
    e.panel.hidden = true;
    e.launcher.hidden = false;
    e.launcher.setAttribute('aria-expanded', 'false');
    session()?.removeItem(OPEN_KEY);
    e.launcher.focus();
  }

  /**
   * Opens the chat with text in the question field (a hand-over from <sitetools-search>):
   * sent at once when the visitor has accepted the privacy notice and no answer is under
   * way, else left in the field, ready to send once they have.
   */
  ask(text) {
    const e = this.#el;
    const q = String(text ?? '').trim().slice(0, 2000);
    if (!e || !q) return;
    if (this.#inline) this.#showConsentOrForm(true);
    else this.open();
    e.input.value = q;
    const s = storage();
    if (s && hasConsent(s) && !this.#busy) e.form.requestSubmit();
  }

  get #inline() {
    return this.hasAttribute('inline');
  }

  // -------------------------------------------------------------------------------------
  // Building

  #build() {
    const root = this.attachShadow({ mode: 'open' });
    const el = {};
    const t = (key, node) => {
      node.dataset.s = key;
      return node;
    };

    const sheet = h('link', { rel: 'stylesheet', href: CSS_URL });
    el.root = h('div', { class: 'root', part: 'root', hidden: true });
    // Shown once the stylesheet is there (or failed: then unstyled but usable).
    const reveal = () => {
      el.root.hidden = false;
    };
    sheet.addEventListener('load', reveal, { once: true });
    sheet.addEventListener('error', reveal, { once: true });

    el.launcherLabel = h('span', {});
    el.launcher = h(
      'button',
      { type: 'button', class: 'launcher', part: 'launcher', id: 'sitetools-chat-launcher', 'aria-expanded': 'false', 'aria-controls': 'sitetools-chat-panel' },
      icon(ICON, { 'fill-rule': 'evenodd' }),
      el.launcherLabel,
    );

    el.title = h('h2', { class: 'title', part: 'title', id: 'sitetools-chat-title' });
    el.pillLabel = h('span', { class: 'pill-label', id: 'sitetools-webmcp-pill-label' });
    el.pill = h(
      'button',
      { type: 'button', class: 'pill', part: 'pill', id: 'sitetools-webmcp-pill', 'data-state': 'disconnected', 'aria-expanded': 'false', 'aria-controls': 'sitetools-webmcp-card' },
      h('span', { class: 'pill-dot', 'aria-hidden': 'true' }),
      el.pillLabel,
    );
    el.clear = t('clear', h('button', { type: 'button', class: 'icon-button', id: 'sitetools-chat-clear' }));
    el.close = h('button', { type: 'button', class: 'icon-button', id: 'sitetools-chat-close' }, '✕');
    const toolbar = h('header', { class: 'toolbar', part: 'header' }, el.title, el.pill, el.clear, el.close);

    el.cardTitle = t('cardTitle', h('h3', { id: 'sitetools-webmcp-card-title' }));
    el.token = h('input', { id: 'sitetools-webmcp-token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true, part: 'input' });
    // The site's step-by-step guide (attribute `guide` or <meta name="sitetools:guide">):
    // once under the card's note, once as the token field's help.
    el.guide = t('guide', h('a', { id: 'sitetools-webmcp-guide', part: 'guide-link' }));
    el.tokenHelp = h('p', { class: 'card-help', id: 'sitetools-webmcp-token-help' }, t('tokenHelp', h('span', {})), ' ');
    el.tokenHelpLink = t('tokenHelpLink', h('a', { id: 'sitetools-webmcp-token-help-link' }));
    el.tokenHelp.append(el.tokenHelpLink);
    el.connect = t('connect', h('button', { type: 'submit', class: 'button', id: 'sitetools-webmcp-connect' }));
    el.connectForm = h(
      'form',
      { class: 'card-form', id: 'sitetools-webmcp-connect-form', 'data-sitetools-no-tool': true },
      t('token', h('label', { for: 'sitetools-webmcp-token' })),
      el.token,
      el.connect,
      el.tokenHelp,
    );
    el.disconnect = t('disconnect', h('button', { type: 'button', class: 'button button-secondary', id: 'sitetools-webmcp-disconnect', hidden: true }));
    el.cardStatus = h('p', { class: 'card-status', id: 'sitetools-webmcp-status', role: 'status', 'aria-live': 'polite' });
    el.toolCount = h('span', { id: 'sitetools-webmcp-tool-count' }, '0');
    el.toolsOffered = h('p', { class: 'card-tools' });
    el.card = h(
      'div',
      { class: 'card', part: 'card', id: 'sitetools-webmcp-card', role: 'region', 'aria-labelledby': 'sitetools-webmcp-card-title', hidden: true },
      el.cardTitle,
      t('cardNote', h('p', { class: 'card-note' })),
      h('p', { class: 'card-note' }, el.guide),
      el.connectForm,
      el.disconnect,
      el.cardStatus,
      el.toolsOffered,
    );

    el.accept = t('accept', h('button', { type: 'button', class: 'button', id: 'sitetools-chat-consent-accept' }));
    el.decline = t('decline', h('button', { type: 'button', class: 'button button-secondary', id: 'sitetools-chat-consent-decline' }));
    el.consent = h(
      'div',
      { class: 'consent', id: 'sitetools-chat-consent', hidden: true },
      t('consentTitle', h('h3', {})),
      h('ul', {}, t('consent1', h('li', {})), t('consent2', h('li', {})), t('consent3', h('li', {}))),
      h('div', { class: 'actions' }, el.accept, el.decline),
    );

    // The conversation: a live region (role log) holding the list of messages. It scrolls,
    // so it takes focus: a keyboard can scroll it when nothing in it is a link.
    el.list = h('ol', { class: 'messages' });
    el.log = h('div', { class: 'log', part: 'log', id: 'sitetools-chat-log', role: 'log', tabindex: '0', 'aria-live': 'polite', 'aria-relevant': 'additions text' }, el.list);
    el.status = h('p', { class: 'visually-hidden', id: 'sitetools-chat-status', role: 'status', 'aria-live': 'polite' });
    el.input = h('textarea', { id: 'sitetools-chat-input', name: 'message', rows: '2', maxlength: '2000', required: true, part: 'input' });
    el.send = t('send', h('button', { type: 'submit', class: 'button', id: 'sitetools-chat-send', part: 'send' }));
    el.form = h(
      'form',
      { class: 'form', id: 'sitetools-chat-form', hidden: true, 'data-sitetools-no-tool': true },
      t('question', h('label', { class: 'visually-hidden', for: 'sitetools-chat-input' })),
      el.input,
      el.send,
    );

    el.panel = h(
      'section',
      { class: 'panel', part: 'panel', id: 'sitetools-chat-panel', role: 'dialog', 'aria-modal': 'false', 'aria-labelledby': 'sitetools-chat-title', hidden: true },
      toolbar,
      el.card,
      el.consent,
      el.log,
      el.status,
      el.form,
    );
    el.root.append(el.launcher, el.panel);
    root.append(sheet, el.root);
    this.#el = el;
    const s = storage();
    if (s) this.#feedback = new Feedback({ storage: s, fetch: (...a) => fetch(...a), onChange: (id, outcome) => this.#feedbackChanged(id, outcome) });
    this.#wire();
    this.#applyMode();
    this.#showStatus(this.#status);
  }

  // applyMode shows the chat inline (always open, in the page) or as a flyout.
  #applyMode() {
    const e = this.#el;
    const inline = this.#inline;
    e.root.classList.toggle('inline', inline);
    e.close.hidden = inline;
    e.panel.setAttribute('role', inline ? 'region' : 'dialog');
    if (inline) {
      e.launcher.hidden = true;
      e.panel.hidden = false;
      this.#render();
      this.#showConsentOrForm(false);
    } else if (session()?.getItem(OPEN_KEY) === '1') {
      this.open();
    } else {
      e.panel.hidden = true;
      e.launcher.hidden = false;
    }
  }

  #wire() {
    const e = this.#el;
    e.launcher.addEventListener('click', () => this.open());
    e.close.addEventListener('click', () => this.close());
    e.accept.addEventListener('click', () => {
      const s = storage();
      if (!s) {
        this.#say(this.#t.noStorage);
        return;
      }
      setConsent(s);
      this.#showConsentOrForm(true);
    });
    e.decline.addEventListener('click', () => (this.#inline ? e.accept.focus() : this.close()));
    e.clear.addEventListener('click', () => {
      if (!window.confirm(this.#t.clearConfirm)) return;
      const s = storage();
      this.#feedback?.flush();
      if (s) clearTranscript(s);
      this.#render();
      this.#say(this.#t.cleared);
      e.input.focus();
    });
    e.panel.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Escape') return;
      if (!e.card.hidden) {
        ev.preventDefault();
        this.#closeCard(true);
      } else if (!this.#inline) {
        ev.preventDefault();
        this.close();
      }
    });

    e.form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const q = e.input.value.trim();
      if (!q || this.#busy) return;
      e.input.value = '';
      // A thumbs down still waiting for its reason goes without one.
      this.#feedback?.flush();
      this.#ask(q);
    });
    e.input.addEventListener('keydown', (ev) => {
      // Enter sends, Shift+Enter makes a new line.
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        e.form.requestSubmit();
      }
    });
    // Links in answers and in the card: the page's router shows them when it can; a link
    // off the site is not followed. It returns whether it showed one.
    const routeLink = (ev) => {
      if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return false;
      const a = ev.target instanceof Element ? ev.target.closest('a[href]') : null;
      if (!a) return false;
      const g = guardSameOrigin(a.getAttribute('href'), location.origin);
      ev.preventDefault();
      if (g.ok) navigateTo(g);
      return g.ok;
    };
    e.log.addEventListener('click', routeLink);
    e.list.addEventListener('click', (ev) => {
      const b = ev.target instanceof Element ? ev.target.closest('button[data-fb], button[data-fb-reason]') : null;
      const box = b?.closest('.feedback');
      if (!box || !this.#feedback || b.getAttribute('aria-disabled') === 'true') return;
      if (b.dataset.fb) {
        this.#feedback.rate(box.dataset.answer, b.dataset.fb);
        return;
      }
      // The reasons go away: focus stays on the thumb they belong to.
      const down = box.querySelector('[data-fb="down"]');
      this.#feedback.choose(box.dataset.answer, b.dataset.fbReason);
      down.focus();
    });
    // The card's guide is read beside the chat: the card makes room for it, and where the
    // flyout covers the page (a phone) the flyout does.
    e.card.addEventListener('click', (ev) => {
      if (!routeLink(ev)) return;
      if (!this.#inline && e.panel.getBoundingClientRect().width >= 0.9 * window.innerWidth) this.close();
      else this.#closeCard(false);
    });

    e.pill.addEventListener('click', () => (e.card.hidden ? this.#openCard() : this.#closeCard(true)));
    e.connectForm.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const token = e.token.value.trim();
      e.token.value = '';
      document.dispatchEvent(new CustomEvent('sitetools:webmcp-connect', { detail: { token } }));
    });
    e.disconnect.addEventListener('click', () => {
      document.dispatchEvent(new CustomEvent('sitetools:webmcp-disconnect'));
    });

    // A thumbs down waiting for its reason is sent before the page goes (or may go).
    window.addEventListener('pagehide', () => this.#feedback?.flush());
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'hidden') this.#feedback?.flush();
    });
    document.addEventListener('sitetools:webmcp-status', (ev) => this.#showStatus(ev.detail));
    document.addEventListener('sitetools:transcript-changed', () => this.#render());
    window.addEventListener('storage', (ev) => {
      if (ev.key === null || ev.key.startsWith('sitetools.chat.')) {
        this.#render();
        this.#showConsentOrForm(false);
      }
    });
  }

  // -------------------------------------------------------------------------------------
  // Language

  #applyLanguage() {
    const tag = this.getAttribute('lang') || this.parentElement?.closest('[lang]')?.getAttribute('lang') || document.documentElement.lang;
    const lang = languageOf(tag);
    this.#lang = lang;
    const s = (this.#t = stringsFor(lang, this.#overrides));
    const e = this.#el;
    const label = this.getAttribute('label');
    e.root.lang = lang;
    for (const node of this.shadowRoot.querySelectorAll('[data-s]')) node.textContent = s[node.dataset.s];
    e.launcherLabel.textContent = label || s.launcher;
    e.title.textContent = label || s.title;
    e.close.setAttribute('aria-label', s.close);
    e.clear.title = s.clearTitle;
    e.log.setAttribute('aria-label', s.conversation);
    e.input.placeholder = this.getAttribute('placeholder') || s.placeholder;
    this.#showStatus(this.#status);
    this.#showGuide();
    this.#render();
  }

  // showGuide points the card's links at the site's guide, or hides them: the attribute
  // `guide`, else the page's <meta name="sitetools:guide">; same-origin only.
  #showGuide() {
    const e = this.#el;
    const href = this.getAttribute('guide') || document.querySelector('meta[name="sitetools:guide"]')?.content || '';
    const g = href ? guardSameOrigin(href, location.origin) : { ok: false };
    e.guide.parentElement.hidden = !g.ok;
    e.tokenHelp.hidden = !g.ok;
    // Hidden help is still read out through aria-describedby: it points at it only when shown.
    if (!g.ok) {
      e.token.removeAttribute('aria-describedby');
      return;
    }
    e.token.setAttribute('aria-describedby', e.tokenHelp.id);
    e.guide.href = g.url;
    e.tokenHelpLink.href = `${g.url.split('#')[0]}#token`;
  }

  // -------------------------------------------------------------------------------------
  // Consent, transcript, asking

  #showConsentOrForm(focus) {
    const e = this.#el;
    const s = storage();
    const ok = s !== null && hasConsent(s);
    e.consent.hidden = ok;
    e.form.hidden = !ok;
    e.clear.hidden = !ok;
    e.log.hidden = !ok && !this.#hasMessages();
    if (!focus) return;
    if (ok) e.input.focus();
    else e.accept.focus();
  }

  #hasMessages() {
    const s = storage();
    return !!s && loadTranscript(s).messages.length > 0;
  }

  #say(text) {
    const st = this.#el.status;
    st.textContent = '';
    // A fresh text node makes screen readers announce even a repeated message.
    requestAnimationFrame(() => {
      st.textContent = text;
    });
  }

  #sourceList(sources) {
    const ul = h('ul', { class: 'sources', 'aria-label': this.#t.sources });
    for (const src of sources) {
      const href = typeof src.url === 'string' ? src.url + (src.anchor ? '#' + src.anchor : '') : '';
      const g = guardSameOrigin(href, location.origin);
      ul.appendChild(h('li', {}, g.ok ? h('a', { href: g.url }, src.title || g.path) : src.title || href));
    }
    return ul;
  }

  #fillMessage(box, role, content) {
    if (role === 'user') box.replaceChildren(h('p', {}, content));
    else box.replaceChildren(...renderMarkdown(content, location.origin));
  }

  #messageItem(m) {
    const t = this.#t;
    const who = h('span', { class: 'msg-who' }, (m.role === 'user' ? t.you : t.assistant) + (m.from === 'mcp' ? t.savedByClient : ''));
    const box = h('div', { class: 'msg-text' });
    this.#fillMessage(box, m.role, m.content);
    const li = h('li', { class: `msg msg-${m.role}`, part: `message message-${m.role}` }, who);
    const done = m.role === 'assistant' ? storedActivity(m.tools) : [];
    if (done.length) li.appendChild(this.#activityList(done.map((x) => activityLine(this.#t, x.name, x.ok ? 'done' : 'failed'))));
    li.appendChild(box);
    if (Array.isArray(m.sources) && m.sources.length) li.appendChild(this.#sourceList(m.sources));
    const fb = this.#feedback?.state(m);
    if (fb) li.appendChild(feedbackControls(this.#t, fb));
    return li;
  }

  // feedbackChanged shows what changed for the rating of an answer, and says what was sent.
  #feedbackChanged(answerId, outcome) {
    const e = this.#el;
    const s = storage();
    const m = s ? loadTranscript(s).messages.find((x) => feedbackOf(x)?.answerId === answerId) : null;
    const st = m ? this.#feedback.state(m) : null;
    // Gone: the conversation was deleted meanwhile.
    if (!st) return;
    for (const box of e.list.querySelectorAll('.feedback')) {
      if (box.dataset.answer !== answerId) continue;
      paintFeedback(box, this.#t, st, outcome);
      if (st.pending) box.querySelector('.fb-reasons').scrollIntoView({ block: 'nearest' });
    }
    // While an answer streams, the status region says that.
    if (this.#busy) return;
    if (outcome === 'sent' || outcome === 'done') this.#say(this.#t.feedbackThanks);
    else if (outcome === 'retry') this.#say(this.#t.feedbackRetry);
  }

  // activityList holds a turn's tool activity: one folded line per tool call.
  #activityList(lines = []) {
    return h('ul', { class: 'activity', part: 'activity', 'aria-label': this.#t.activity }, ...lines);
  }

  #render() {
    const e = this.#el;
    if (!e || this.#busy) return;
    const s = storage();
    const tr = s ? loadTranscript(s) : { messages: [] };
    e.list.replaceChildren(...tr.messages.map((m) => this.#messageItem(m)));
    if (!tr.messages.length) e.list.appendChild(h('li', { class: 'msg msg-hint' }, this.#t.hint));
    e.log.scrollTop = e.log.scrollHeight;
  }

  async #errorText(res) {
    const t = this.#t;
    let code = '';
    let msg = '';
    try {
      const body = await res.json();
      code = body?.error?.code || '';
      msg = body?.error?.message || '';
    } catch {
      // not JSON
    }
    if (code === 'consent_required') return t.needConsent;
    if (code === 'query_too_long') return t.tooLong;
    if (code.startsWith('proof_of_work_')) return t.proofFailed;
    if (res.status === 404 || res.status === 405) return t.notAvailable;
    if (res.status === 429) {
      const after = Number.parseInt(res.headers.get('Retry-After') || '', 10);
      return after > 0 ? fill(t.tooManyWait, { n: after }) : t.tooMany;
    }
    if (res.status === 503) return t.busyService;
    if (this.#lang === 'en' && msg) return msg;
    return fill(t.httpError, { n: res.status });
  }

  async #ask(question) {
    const e = this.#el;
    const t = this.#t;
    const s = storage();
    if (!s || !hasConsent(s)) {
      this.#showConsentOrForm(true);
      return;
    }
    const tr = loadTranscript(s);
    if (!tr.conversationId) tr.conversationId = newConversationId();
    tr.messages.push({ role: 'user', content: question });
    storeTranscript(s, tr);
    this.#render();

    const item = this.#messageItem({ role: 'assistant', content: '' });
    const text = item.querySelector('.msg-text');
    const shown = streamMarkdown(text, location.origin);
    e.list.appendChild(item);
    // The turn's tool calls, each a folded line: shown here and kept with the answer for
    // this browser, never sent back (only role and content of a message are).
    const calls = new Map();
    let activity = null;
    e.log.setAttribute('aria-busy', 'true');
    this.#busy = true;
    e.send.disabled = true;
    this.#say(t.answering);

    const answer = { role: 'assistant', content: '', sources: [], tools: [] };
    let rateable = null; // message.done's answer id and kind
    let failed = '';
    let frame = 0;
    try {
      const res = await this.#prover.post(CHAT_URL, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
        credentials: 'same-origin',
        body: JSON.stringify({
          conversationId: tr.conversationId,
          // The site refuses U+0000 in a message: one that a model once streamed must not
          // make every later question of the conversation fail.
          messages: tr.messages.slice(-SENT_MESSAGES).map((m) => ({ role: m.role, content: m.content.replaceAll('\0', '') })),
          consent: true,
          // The site words its own texts (a search result's frame, notices, errors) in it.
          lang: this.#lang,
        }),
      });
      if (!res.ok || !res.body) {
        failed = await this.#errorText(res);
      } else {
        // The site's own messages are shown when they are in the widget's language.
        const sameLanguage = languageOf(res.headers.get('Content-Language')) === this.#lang;
        await readEventStream(res.body, ({ event, data }) => {
          let d;
          try {
            d = JSON.parse(data);
          } catch {
            return;
          }
          switch (event) {
            case 'message.delta':
              answer.content += typeof d.text === 'string' ? d.text : '';
              // At most one render per frame, however fast the words come.
              if (!frame) {
                frame = requestAnimationFrame(() => {
                  frame = 0;
                  shown.show(answer.content);
                  e.log.scrollTop = e.log.scrollHeight;
                });
              }
              break;
            case 'tool.call': {
              if (typeof d.name !== 'string' || typeof d.id !== 'string' || calls.has(d.id)) break;
              const line = activityLine(t, d.name, 'running');
              calls.set(d.id, { name: d.name, line });
              if (!activity) activity = item.insertBefore(this.#activityList(), text);
              activity.appendChild(line);
              this.#say(labelOf(t, d.name, 'running'));
              break;
            }
            case 'tool.result': {
              const call = calls.get(d.id);
              if (!call || call.line.dataset.state !== 'running') break;
              const ok = d.ok === true;
              setActivity(t, call.line, call.name, ok ? 'done' : 'failed');
              call.stored = answer.tools.length;
              answer.tools.push({ name: call.name, ok });
              if (!ok) this.#say(labelOf(t, call.name, 'failed'));
              break;
            }
            case 'sources':
              if (Array.isArray(d.items)) answer.sources = d.items.filter((x) => x && typeof x.url === 'string');
              break;
            case 'error':
              failed = typeof d.message === 'string' && d.message && sameLanguage ? d.message : t.failed;
              break;
            case 'message.done':
              rateable = answerOf(d);
              break;
            default:
          }
          e.log.scrollTop = e.log.scrollHeight;
        });
      }
    } catch {
      failed = t.unreachable;
    }
    if (frame) cancelAnimationFrame(frame);
    this.#busy = false;
    e.send.disabled = false;
    e.log.removeAttribute('aria-busy');
    const saved = answer.content.trim() !== '';
    if (saved) {
      const now = loadTranscript(s);
      if (!now.conversationId) now.conversationId = tr.conversationId;
      const saved = { role: 'assistant', content: answer.content.replaceAll('\0', '') };
      if (answer.sources.length) saved.sources = answer.sources;
      if (answer.tools.length) saved.tools = answer.tools;
      // Only a finished answer can be rated: not one that failed or broke off.
      if (rateable && !failed) Object.assign(saved, rateable);
      now.messages.push(saved);
      storeTranscript(s, now);
    }
    // The answer is rebuilt from the transcript: a tool line the visitor unfolded stays
    // open, and focus inside the answer stays there (on its line, else on the log).
    const active = this.shadowRoot.activeElement;
    const hadFocus = item.contains(active);
    const kept = [...calls.values()].filter((c) => c.stored !== undefined);
    this.#render();
    const lines = saved ? e.list.lastElementChild.querySelectorAll('.tool details') : [];
    for (const c of kept) {
      const line = lines[c.stored];
      if (!line) continue;
      line.open = c.line.querySelector('details').open;
      if (c.line.contains(active)) line.querySelector('summary').focus();
    }
    if (hadFocus && !e.list.contains(this.shadowRoot.activeElement)) e.log.focus();
    if (failed) {
      e.list.appendChild(h('li', { class: 'msg msg-error', role: 'alert' }, failed));
    } else {
      this.#say(t.done);
    }
  }

  // -------------------------------------------------------------------------------------
  // The status pill and its card

  #openCard() {
    const e = this.#el;
    this.#showGuide();
    e.card.hidden = false;
    e.pill.setAttribute('aria-expanded', 'true');
    (e.disconnect.hidden ? e.token : e.disconnect).focus();
  }

  #closeCard(focusPill) {
    const e = this.#el;
    e.card.hidden = true;
    e.pill.setAttribute('aria-expanded', 'false');
    if (focusPill) e.pill.focus();
  }

  #showStatus(st) {
    const e = this.#el;
    const t = this.#t;
    const wasConnected = e.pill.dataset.state === 'connected';
    this.#status = { ...st };
    const { state, tools } = st;
    const n = tools ?? 0;
    e.pill.dataset.state = state;
    e.pillLabel.textContent =
      state === 'connected' ? fill(t.pillOn, { n }) : state === 'connecting' ? t.pillConnecting : state === 'unavailable' ? t.pillUnavailable : t.pillOff;
    e.cardStatus.textContent = this.#statusMessage(st);
    e.toolCount.textContent = String(n);
    const [before, after] = t.toolsOffered.split('{n}');
    e.toolsOffered.replaceChildren(before ?? '', e.toolCount, after ?? '');
    const connected = state === 'connected';
    e.connectForm.hidden = connected || state === 'unavailable';
    e.disconnect.hidden = !connected;
    // Keep focus inside the card when its controls swap.
    if (!e.card.hidden && connected !== wasConnected) (connected ? e.disconnect : e.token).focus();
  }

  #statusMessage({ state, reason, message }) {
    const t = this.#t;
    switch (state) {
      case 'connected':
        return t.statusOn;
      case 'connecting':
        return t.statusConnecting;
      case 'unavailable':
        return t.statusUnavailable;
      default:
        if (reason === 'no_token') return t.statusNoToken;
        if (reason && reason !== 'none') return fill(t.statusOffWhy, { why: reason });
        return message && this.#lang === 'en' && message !== 'Not connected.' ? message : t.statusOff;
    }
  }
}

// ---------------------------------------------------------------------------------------
// Start-up: define the element, follow the document's language, and add one to <body>
// unless the page placed its own.

if (!customElements.get(TAG)) {
  customElements.define(TAG, SitetoolsChat);

  new MutationObserver(() => {
    for (const el of document.querySelectorAll(TAG)) el.attributeChangedCallback('lang');
  }).observe(document.documentElement, { attributes: true, attributeFilter: ['lang'] });

  let auto = null;
  const mount = () => {
    const placed = [...document.querySelectorAll(TAG)].filter((el) => el !== auto);
    if (placed.length) {
      // The page placed its own (perhaps rendered later by a framework): ours goes.
      if (auto?.isConnected) auto.remove();
      return;
    }
    if (!auto) auto = document.createElement(TAG);
    // A framework that re-renders <body> may drop it: the same element (with its
    // transcript on screen and its state) goes back.
    if (!auto.isConnected && document.body) document.body.appendChild(auto);
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', mount, { once: true });
  else mount();
  new MutationObserver((records) => {
    if (!auto) return;
    if (!auto.isConnected) return mount();
    for (const r of records) {
      for (const n of r.addedNodes) {
        if (n.nodeType === 1 && n !== auto && (n.localName === TAG || n.querySelector(TAG))) return mount();
      }
    }
    return undefined;
  }).observe(document.documentElement, { childList: true, subtree: true });
}
