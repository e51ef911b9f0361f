// The chat flyout: a button in the corner opens it; a privacy notice comes first; the
// conversation lives in localStorage only and is sent with each question to POST
// /api/chat, whose answer streams back as server-sent events. Its toolbar holds the
// status pill of the WebMCP bridge (see /webmcp/bridge.js), whose card takes the relay
// token.

import {
  clearTranscript,
  guardSameOrigin,
  hasConsent,
  loadTranscript,
  newConversationId,
  setConsent,
  storeTranscript,
} from '../webmcp/core.js';
import { parseMarkdown } from './markdown.js';
import { readEventStream } from './sse.js';

const CHAT_URL = '/api/chat';
const SENT_MESSAGES = 40; // the latest messages sent with a question

const $ = (id) => document.getElementById(id);
const el = {
  launcher: $('sitetools-chat-launcher'),
  panel: $('sitetools-chat-panel'),
  close: $('sitetools-chat-close'),
  clear: $('sitetools-chat-clear'),
  consent: $('sitetools-chat-consent'),
  accept: $('sitetools-chat-consent-accept'),
  decline: $('sitetools-chat-consent-decline'),
  log: $('sitetools-chat-log'),
  status: $('sitetools-chat-status'),
  form: $('sitetools-chat-form'),
  input: $('sitetools-chat-input'),
  send: $('sitetools-chat-send'),
  pill: $('sitetools-webmcp-pill'),
  pillLabel: $('sitetools-webmcp-pill-label'),
  card: $('sitetools-webmcp-card'),
  connectForm: $('sitetools-webmcp-connect-form'),
  token: $('sitetools-webmcp-token'),
  disconnect: $('sitetools-webmcp-disconnect'),
  cardStatus: $('sitetools-webmcp-status'),
  toolCount: $('sitetools-webmcp-tool-count'),
};

let busy = false;

function storage() {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------
// Opening, closing, consent

function isOpen() {
  return !el.panel.hidden;
}

function open() {
  el.panel.hidden = false;
  el.launcher.setAttribute('aria-expanded', 'true');
  el.launcher.hidden = true;
  render();
  showConsentOrForm(true);
}

function close() {
  closeCard(false);
  el.panel.hidden = true;
  el.launcher.hidden = false;
  el.launcher.setAttribute('aria-expanded', 'false');
  el.launcher.focus();
}

function showConsentOrForm(focus) {
  const s = storage();
  const ok = s !== null && hasConsent(s);
  el.consent.hidden = ok;
  el.form.hidden = !ok;
  el.clear.hidden = !ok;
  if (!focus) return;
  if (ok) el.input.focus();
  else el.accept.focus();
}

el.launcher.addEventListener('click', open);
el.close.addEventListener('click', close);
el.accept.addEventListener('click', () => {
  const s = storage();
  if (!s) {
    say('This browser does not allow storing the conversation, so the chat cannot start.');
    return;
  }
  setConsent(s);
  showConsentOrForm(true);
});
el.decline.addEventListener('click', close);
el.clear.addEventListener('click', () => {
  if (!window.confirm('Delete this conversation from this browser?')) return;
  const s = storage();
  if (s) clearTranscript(s);
  render();
  say('Conversation deleted.');
  el.input.focus();
});

el.panel.addEventListener('keydown', (e) => {
  if (e.key !== 'Escape') return;
  e.preventDefault();
  if (!el.card.hidden) closeCard(true);
  else close();
});

// ---------------------------------------------------------------------------------------
// The transcript

function say(text) {
  el.status.textContent = '';
  // A fresh text node makes screen readers announce even a repeated message.
  requestAnimationFrame(() => {
    el.status.textContent = text;
  });
}

function sourceList(sources) {
  const ul = document.createElement('ul');
  ul.className = 'chat-sources';
  ul.setAttribute('aria-label', 'Sources');
  for (const s of sources) {
    const li = document.createElement('li');
    const href = typeof s.url === 'string' ? s.url + (s.anchor ? '#' + s.anchor : '') : '';
    const g = guardSameOrigin(href, location.origin);
    if (g.ok) {
      const a = document.createElement('a');
      a.href = g.path;
      a.textContent = s.title || g.path;
      li.appendChild(a);
    } else {
      li.textContent = s.title || href;
    }
    ul.appendChild(li);
  }
  return ul;
}

// inlineNodes turns parsed Markdown inlines into DOM nodes. Links to this site become
// links; any other url stays text, shown in brackets.
function inlineNodes(inlines) {
  return inlines.map((n) => {
    switch (n.type) {
      case 'strong': {
        const b = document.createElement('strong');
        b.append(...inlineNodes(n.children));
        return b;
      }
      case 'code': {
        const c = document.createElement('code');
        c.textContent = n.text;
        return c;
      }
      case 'br':
        return document.createElement('br');
      case 'link': {
        const g = guardSameOrigin(n.href, location.origin);
        if (!g.ok) {
          const span = document.createElement('span');
          span.append(...inlineNodes(n.children), ` (${n.href})`);
          return span;
        }
        const a = document.createElement('a');
        a.href = g.path;
        a.append(...inlineNodes(n.children));
        return a;
      }
      default:
        return document.createTextNode(n.text);
    }
  });
}

function fillMessage(box, role, content) {
  if (role === 'user') {
    const p = document.createElement('p');
    p.textContent = content;
    box.replaceChildren(p);
    return;
  }
  const nodes = parseMarkdown(content).map((b) => {
    if (b.type === 'p') {
      const p = document.createElement('p');
      b.lines.forEach((line, i) => {
        if (i) p.appendChild(document.createElement('br'));
        p.append(...inlineNodes(line));
      });
      return p;
    }
    const list = document.createElement(b.type);
    if (b.type === 'ol' && b.start !== 1) list.start = b.start;
    for (const item of b.items) {
      const li = document.createElement('li');
      li.append(...inlineNodes(item));
      list.appendChild(li);
    }
    return list;
  });
  box.replaceChildren(...nodes);
}

function messageItem(m) {
  const li = document.createElement('li');
  li.className = `msg msg-${m.role}`;
  const who = document.createElement('span');
  who.className = 'msg-who';
  who.textContent = m.role === 'user' ? 'You' : 'Assistant';
  if (m.from === 'mcp') who.textContent += ' (saved by your MCP client)';
  const box = document.createElement('div');
  box.className = 'msg-text';
  fillMessage(box, m.role, m.content);
  li.append(who, box);
  if (Array.isArray(m.sources) && m.sources.length) li.appendChild(sourceList(m.sources));
  return li;
}

function render() {
  const s = storage();
  const t = s ? loadTranscript(s) : { messages: [] };
  el.log.replaceChildren(...t.messages.map(messageItem));
  if (!t.messages.length) {
    const li = document.createElement('li');
    li.className = 'msg msg-hint';
    li.textContent = 'Ask about services, prices, the team or free appointment slots. Answers link to the pages they come from.';
    el.log.appendChild(li);
  }
  el.log.scrollTop = el.log.scrollHeight;
}

document.addEventListener('sitetools:transcript-changed', () => {
  if (isOpen()) render();
});
window.addEventListener('storage', (e) => {
  if (isOpen() && (e.key === null || e.key.startsWith('sitetools.chat.'))) {
    render();
    showConsentOrForm(false);
  }
});

// ---------------------------------------------------------------------------------------
// Asking

async function errorText(res) {
  let msg = '';
  try {
    const body = await res.json();
    msg = body?.error?.message || '';
    if (body?.error?.code === 'consent_required') return 'The site needs your consent first.';
  } catch {
    // not JSON
  }
  if (res.status === 404 || res.status === 405) return 'The chat is not available on this site right now.';
  if (res.status === 429) {
    const after = res.headers.get('Retry-After');
    return `Too many questions at once${after ? `; try again in ${after} seconds` : ''}.`;
  }
  return msg || `The site answered HTTP ${res.status}.`;
}

async function ask(question) {
  const s = storage();
  if (!s || !hasConsent(s)) {
    showConsentOrForm(true);
    return;
  }
  const t = loadTranscript(s);
  if (!t.conversationId) t.conversationId = newConversationId();
  t.messages.push({ role: 'user', content: question });
  storeTranscript(s, t);
  render();

  const item = messageItem({ role: 'assistant', content: '' });
  const text = item.querySelector('.msg-text');
  el.log.appendChild(item);
  el.log.setAttribute('aria-busy', 'true');
  busy = true;
  el.send.disabled = true;
  say('The assistant is answering…');

  const answer = { role: 'assistant', content: '', sources: [] };
  let failed = '';
  try {
    const res = await fetch(CHAT_URL, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      credentials: 'same-origin',
      body: JSON.stringify({
        conversationId: t.conversationId,
        messages: t.messages.slice(-SENT_MESSAGES).map((m) => ({ role: m.role, content: m.content })),
        consent: true,
      }),
    });
    if (!res.ok || !res.body) {
      failed = await errorText(res);
    } else {
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
            fillMessage(text, 'assistant', answer.content);
            break;
          case 'tool.call':
            say(`Looking something up (${d.name})…`);
            break;
          case 'sources':
            if (Array.isArray(d.items)) answer.sources = d.items.filter((x) => x && typeof x.url === 'string');
            break;
          case 'error':
            failed = typeof d.message === 'string' ? d.message : 'The answer failed.';
            break;
          default:
        }
        el.log.scrollTop = el.log.scrollHeight;
      });
    }
  } catch (e) {
    failed = 'The site could not be reached.';
  }
  busy = false;
  el.send.disabled = false;
  el.log.removeAttribute('aria-busy');
  if (answer.content.trim() !== '') {
    const now = loadTranscript(s);
    if (!now.conversationId) now.conversationId = t.conversationId;
    now.messages.push(answer.sources.length ? answer : { role: 'assistant', content: answer.content });
    storeTranscript(s, now);
  }
  render();
  if (failed) {
    const li = document.createElement('li');
    li.className = 'msg msg-error';
    li.setAttribute('role', 'alert');
    li.textContent = failed;
    el.log.appendChild(li);
  } else {
    say('Answer complete.');
  }
}

el.form.addEventListener('submit', (e) => {
  e.preventDefault();
  const q = el.input.value.trim();
  if (!q || busy) return;
  el.input.value = '';
  ask(q);
});

el.input.addEventListener('keydown', (e) => {
  // Enter sends, Shift+Enter makes a new line.
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    el.form.requestSubmit();
  }
});

// ---------------------------------------------------------------------------------------
// The status pill and its card

function openCard() {
  el.card.hidden = false;
  el.pill.setAttribute('aria-expanded', 'true');
  (el.disconnect.hidden ? el.token : el.disconnect).focus();
}

function closeCard(focusPill) {
  el.card.hidden = true;
  el.pill.setAttribute('aria-expanded', 'false');
  if (focusPill) el.pill.focus();
}

el.pill.addEventListener('click', () => {
  if (el.card.hidden) openCard();
  else closeCard(true);
});

el.connectForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const token = el.token.value.trim();
  el.token.value = '';
  document.dispatchEvent(new CustomEvent('sitetools:webmcp-connect', { detail: { token } }));
});

el.disconnect.addEventListener('click', () => {
  document.dispatchEvent(new CustomEvent('sitetools:webmcp-disconnect'));
});

const PILL_LABELS = {
  unavailable: () => 'MCP: unavailable',
  disconnected: () => 'MCP: off',
  connecting: () => 'MCP: connecting…',
  connected: (n) => `MCP: on · ${n} tools`,
};

document.addEventListener('sitetools:webmcp-status', (e) => {
  const { state, message, tools } = e.detail;
  const wasConnected = el.pill.dataset.state === 'connected';
  el.pill.dataset.state = state;
  el.pillLabel.textContent = (PILL_LABELS[state] ?? PILL_LABELS.disconnected)(tools);
  el.cardStatus.textContent = message;
  el.toolCount.textContent = String(tools ?? 0);
  const connected = state === 'connected';
  el.connectForm.hidden = connected || state === 'unavailable';
  el.disconnect.hidden = !connected;
  // Keep focus inside the card when its controls swap.
  if (!el.card.hidden && connected !== wasConnected) (connected ? el.disconnect : el.token).focus();
});

el.launcher.hidden = false;
