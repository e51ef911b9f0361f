// Feedback on answers: a thumbs up or down under each finished answer, a thumbs down with
// an optional reason. POST /api/feedback counts each answer once (the same rating again
// counts nothing, another one replaces the first), and the rule here is one request per
// answer, ever: a rating is written into the stored transcript before it is sent
// (another tab, or this one after a reload, sees it as given) and taken back only when
// the request did not arrive (network, 429, 5xx), so that the visitor may try again.
//
// A thumbs down waits for its reason, at most until the visitor asks the next question,
// closes the flyout or leaves the page: then it is sent without one (Feedback.flush).
// No free text: an answer's id, the kind of answer, the rating and a reason from a fixed
// list are all that is sent.
import { h, icon } from './dom.js';
import { loadTranscript, storeTranscript } from './core.js';

export const FEEDBACK_URL = '/api/feedback';
export const KINDS = ['model', 'retrieval', 'degraded'];
export const REASONS = ['wrong', 'outdated', 'unanswered', 'other'];
const ANSWER_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * answerOf is what message.done's data says for feedback, {answerId, kind}, or null when
 * the answer cannot be rated (no id: a site without feedback, or not a valid one).
 */
export function answerOf(done) {
  if (!done || typeof done !== 'object') return null;
  const { answerId, kind } = done;
  if (typeof answerId !== 'string' || !ANSWER_ID.test(answerId) || !KINDS.includes(kind)) return null;
  return { answerId, kind };
}

/**
 * feedbackOf is the feedback of a stored message, {answerId, kind, rating, reason}
 * (rating '' while unrated, reason '' without one), or null for a message that has no
 * controls: a question, an answer from before feedback or saved by an MCP client, or
 * anything another page of this browser wrote that is not well-formed.
 */
export function feedbackOf(m) {
  if (!m || m.role !== 'assistant') return null;
  const a = answerOf(m);
  if (!a) return null;
  const rating = m.rating === 'up' || m.rating === 'down' ? m.rating : '';
  const reason = rating === 'down' && REASONS.includes(m.reason) ? m.reason : '';
  return { ...a, rating, reason };
}

/** feedbackBody is the body of POST /api/feedback; a reason only with a thumbs down. */
export function feedbackBody({ answerId, kind, rating, reason }) {
  const body = { answerId, kind, rating };
  if (rating === 'down' && REASONS.includes(reason)) body.reason = reason;
  return body;
}

/**
 * outcomeOf is what an answer of POST /api/feedback (status 0: none came) means for the
 * rating: 'sent' (counted), 'retry' (it did not arrive or the site was too busy: the
 * visitor may rate again) or 'done' (refused for good, say an answer older than a week:
 * the rating stays given here, and nothing is shown that alarms).
 */
export function outcomeOf(status) {
  if (status >= 200 && status < 300) return 'sent';
  if (status === 0 || status === 429 || status >= 500) return 'retry';
  return 'done';
}

/**
 * Feedback holds the ratings of one chat widget: the thumbs down waiting for a reason and
 * the ratings under way; what was given is in the stored transcript. onChange(answerId,
 * outcome) is called whenever the controls of an answer must show something new; outcome
 * is the send's ('sent', 'done', 'retry') or '' for any other change.
 */
export class Feedback {
  #storage;
  #fetch;
  #onChange;
  #pending = ''; // the answer whose thumbs down waits for a reason
  #sending = new Set();
  #given = new Set(); // sent in this page, should storage have refused to keep it

  constructor({ storage, fetch: fetchImpl, onChange = () => {} }) {
    this.#storage = storage;
    this.#fetch = fetchImpl;
    this.#onChange = onChange;
  }

  /**
   * state is what the controls of a stored message show: its feedbackOf with pending
   * (a thumbs down waits for its reason) and sending, or null when it has none.
   */
  state(m) {
    const fb = feedbackOf(m);
    if (!fb) return null;
    return { ...fb, pending: this.#pending === fb.answerId, sending: this.#sending.has(fb.answerId) };
  }

  /**
   * rate is a click on a thumb. Up is sent at once. Down waits for a reason; down again
   * takes it back, and up instead sends up alone. A rating given or under way stays.
   */
  rate(answerId, rating) {
    if (this.#settled(answerId)) return Promise.resolve('');
    if (rating === 'down') {
      if (this.#pending === answerId) {
        this.#pending = '';
      } else {
        this.flush();
        this.#pending = answerId;
      }
      this.#onChange(answerId, '');
      return Promise.resolve('');
    }
    if (rating !== 'up') return Promise.resolve('');
    if (this.#pending === answerId) this.#pending = '';
    else this.flush();
    return this.#send(answerId, 'up', '');
  }

  /** choose sends the waiting thumbs down of answerId with reason ('' for none). */
  choose(answerId, reason) {
    if (this.#pending !== answerId) return Promise.resolve('');
    this.#pending = '';
    return this.#send(answerId, 'down', REASONS.includes(reason) ? reason : '');
  }

  /** flush sends a thumbs down that waits for its reason, without one. */
  flush() {
    const id = this.#pending;
    if (!id) return Promise.resolve('');
    this.#pending = '';
    return this.#send(id, 'down', '');
  }

  #settled(answerId) {
    if (this.#sending.has(answerId) || this.#given.has(answerId)) return true;
    const m = this.#find(loadTranscript(this.#storage), answerId);
    return !m || feedbackOf(m).rating !== '';
  }

  #find(tr, answerId) {
    return tr.messages.find((m) => feedbackOf(m)?.answerId === answerId) ?? null;
  }

  // mark writes the rating into the stored message of answerId (rating '' takes it back);
  // the message's kind, or '' when it is gone (the conversation was deleted meanwhile).
  #mark(answerId, rating, reason) {
    const tr = loadTranscript(this.#storage);
    const m = this.#find(tr, answerId);
    if (!m) return '';
    delete m.rating;
    delete m.reason;
    if (rating) m.rating = rating;
    if (reason) m.reason = reason;
    try {
      storeTranscript(this.#storage, tr);
    } catch {
      // Full or refused: the rating is kept in this page only (#given).
    }
    return m.kind;
  }

  // send sends one rating: claimed in storage first, so that nothing sends it twice,
  // and kept alive past the page, which may be going away as it is sent.
  async #send(answerId, rating, reason) {
    if (this.#settled(answerId)) return '';
    const kind = this.#mark(answerId, rating, reason);
    this.#sending.add(answerId);
    this.#onChange(answerId, '');
    let status = 0;
    try {
      const res = await this.#fetch(FEEDBACK_URL, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(feedbackBody({ answerId, kind, rating, reason })),
        credentials: 'omit',
        keepalive: true,
      });
      status = res.status;
    } catch {
      status = 0;
    }
    this.#sending.delete(answerId);
    const outcome = outcomeOf(status);
    if (outcome === 'retry') this.#mark(answerId, '', '');
    else this.#given.add(answerId);
    this.#onChange(answerId, outcome);
    return outcome;
  }
}

// ---------------------------------------------------------------------------------------
// The controls

// A thumb, drawn for this widget: the cuff on the left, the thumb up; turned half round
// it points down.
const THUMB = 'M2 10h4v11H2zM8 21h8.6a2 2 0 0 0 1.9-1.4l2.3-7A2 2 0 0 0 18.9 10h-5.1l.9-4.3A2 2 0 0 0 11 4.2L8 9.5z';

function thumb(down) {
  return icon(THUMB, down ? { transform: 'rotate(180 12 12)' } : {});
}

const REASON_KEYS = { wrong: 'reasonWrong', outdated: 'reasonOutdated', unanswered: 'reasonUnanswered', other: 'reasonOther' };

let seq = 0;

/**
 * feedbackControls are the controls under an answer whose state is st (Feedback.state),
 * in the words of t: the two thumbs, the reasons of a thumbs down, a short note. Buttons
 * carry data-fb (up, down) and data-fb-reason (a reason, '' to send without); the box
 * carries the answer's id in data-answer.
 */
export function feedbackControls(t, st) {
  const id = `sitetools-feedback-${++seq}`;
  const button = (rating, label) =>
    h('button', { type: 'button', class: 'fb-thumb', 'data-fb': rating, 'aria-label': label, title: label, 'aria-pressed': 'false' }, thumb(rating === 'down'));
  const down = button('down', t.feedbackDown);
  down.setAttribute('aria-controls', `${id}-reasons`);
  const reasons = h(
    'div',
    { class: 'fb-reasons', id: `${id}-reasons`, role: 'group', 'aria-labelledby': `${id}-why`, hidden: true },
    h('span', { class: 'fb-question', id: `${id}-why` }, t.feedbackWhy),
    ...REASONS.map((r) => h('button', { type: 'button', class: 'fb-reason', 'data-fb-reason': r }, t[REASON_KEYS[r]])),
    h('button', { type: 'button', class: 'fb-reason fb-skip', 'data-fb-reason': '' }, t.feedbackSkip),
  );
  const box = h(
    'div',
    { class: 'feedback', part: 'feedback', 'data-answer': st.answerId },
    h(
      'div',
      { class: 'fb-rate', role: 'group', 'aria-labelledby': `${id}-ask` },
      h('span', { class: 'fb-question', id: `${id}-ask` }, t.feedbackAsk),
      button('up', t.feedbackUp),
      down,
      // Said through the widget's status region when it changes: hidden here so that the
      // log does not say it twice.
      h('span', { class: 'fb-note', 'aria-hidden': 'true' }),
    ),
    reasons,
  );
  paintFeedback(box, t, st);
  return box;
}

/**
 * paintFeedback shows st in controls made by feedbackControls; note is what the line
 * says beside the thumbs once something was sent ('sent', 'done', 'retry'), '' to say
 * what a given rating says.
 */
export function paintFeedback(box, t, st, note = '') {
  const settled = st.rating !== '' || st.sending;
  const chosen = st.rating || (st.pending ? 'down' : '');
  for (const b of box.querySelectorAll('[data-fb]')) {
    b.setAttribute('aria-pressed', String(b.dataset.fb === chosen));
    if (settled) b.setAttribute('aria-disabled', 'true');
    else b.removeAttribute('aria-disabled');
  }
  const down = box.querySelector('[data-fb="down"]');
  down.setAttribute('aria-expanded', String(st.pending));
  box.querySelector('.fb-reasons').hidden = !st.pending;
  const text = note === 'retry' ? t.feedbackRetry : st.rating ? t.feedbackThanks : '';
  box.querySelector('.fb-note').textContent = text;
  box.dataset.state = st.sending ? 'sending' : st.rating ? 'rated' : st.pending ? 'pending' : 'open';
}
