// Unit tests of feedback on answers: one request per answer, the thumbs down that waits
// for its reason, the ratings in the stored transcript. node --test server/web/test/
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { TRANSCRIPT_KEY, hasConsent, loadTranscript, resumeConversation, saveConversation, setConsent, storeTranscript } from '../widget/core.js';
import { FEEDBACK_URL, Feedback, answerOf, feedbackBody, feedbackOf, outcomeOf } from '../widget/feedback.js';

class MemoryStorage {
  m = new Map();
  getItem(k) {
    return this.m.has(k) ? this.m.get(k) : null;
  }
  setItem(k, v) {
    this.m.set(k, String(v));
  }
  removeItem(k) {
    this.m.delete(k);
  }
}

const A = '20261202.m.AbC-12_xyz';
const B = '20261202.r.DeF-34_uvw';

/** conversation is a storage holding a question and answers to it with ids (null: an answer from before feedback). */
function conversation(...ids) {
  const s = new MemoryStorage();
  const messages = [{ role: 'user', content: 'Do you do audits?' }];
  for (const [i, id] of ids.entries()) {
    const m = { role: 'assistant', content: `Answer ${i + 1}`, sources: [{ url: '/pricing', title: 'Pricing' }] };
    if (id) Object.assign(m, { answerId: id, kind: 'retrieval' });
    messages.push(m);
  }
  storeTranscript(s, { v: 1, conversationId: 'c1', messages, savedBatches: [] });
  return s;
}

/**
 * site is a fake fetch for POST /api/feedback: it records each request and answers with
 * the next of statuses (0 throws, as a network failure does; the last one repeats), each
 * once release() is called when held.
 */
function site(statuses = [204], { held = false } = {}) {
  const calls = [];
  const waiting = [];
  const fetch = (url, init) => {
    const status = statuses[Math.min(calls.length, statuses.length - 1)];
    calls.push({ url, init, body: JSON.parse(init.body) });
    const answer = () => (status === 0 ? Promise.reject(new TypeError('Failed to fetch')) : Promise.resolve({ status }));
    if (!held) return answer();
    return new Promise((resolve, reject) => waiting.push(() => answer().then(resolve, reject)));
  };
  return { fetch, calls, release: () => waiting.splice(0).forEach((f) => f()) };
}

function setup(ids = [A, B], statuses, opts) {
  const storage = conversation(...ids);
  const net = site(statuses, opts);
  const changes = [];
  const fb = new Feedback({ storage, fetch: net.fetch, onChange: (id, outcome) => changes.push([id, outcome]) });
  const stored = (id) => feedbackOf(loadTranscript(storage).messages.find((m) => m.answerId === id));
  return { storage, net, fb, changes, stored };
}

describe('answerOf', () => {
  it('takes the id and kind of message.done', () => {
    assert.deepEqual(answerOf({ usage: {}, mode: 'llm', reason: 'stop', answerId: A, kind: 'model' }), { answerId: A, kind: 'model' });
    for (const kind of ['model', 'retrieval', 'degraded']) assert.equal(answerOf({ answerId: A, kind })?.kind, kind);
  });

  it('refuses what the site would not take back', () => {
    for (const d of [
      null,
      'x',
      { mode: 'retrieval' },
      { answerId: A },
      { answerId: A, kind: 'other' },
      { answerId: '', kind: 'model' },
      { answerId: 'a'.repeat(129), kind: 'model' },
      { answerId: 'a b', kind: 'model' },
      { answerId: 'a/b', kind: 'model' },
      { answerId: 7, kind: 'model' },
    ]) {
      assert.equal(answerOf(d), null, JSON.stringify(d));
    }
    assert.ok(answerOf({ answerId: 'a'.repeat(128), kind: 'model' }));
  });
});

describe('feedbackOf', () => {
  it('has no controls for questions and for answers without an id', () => {
    assert.equal(feedbackOf({ role: 'user', content: 'q', answerId: A, kind: 'model' }), null);
    assert.equal(feedbackOf({ role: 'assistant', content: 'from before' }), null);
    assert.equal(feedbackOf({ role: 'assistant', content: 'saved', from: 'mcp' }), null);
  });

  it('reads a rating and a reason, and nothing malformed', () => {
    const m = { role: 'assistant', content: 'a', answerId: A, kind: 'degraded' };
    assert.deepEqual(feedbackOf(m), { answerId: A, kind: 'degraded', rating: '', reason: '' });
    assert.deepEqual(feedbackOf({ ...m, rating: 'down', reason: 'outdated' }), { answerId: A, kind: 'degraded', rating: 'down', reason: 'outdated' });
    assert.deepEqual(feedbackOf({ ...m, rating: 'up', reason: 'wrong' }).reason, '');
    assert.deepEqual(feedbackOf({ ...m, rating: 'down', reason: 'rude' }).reason, '');
    assert.deepEqual(feedbackOf({ ...m, rating: 'meh' }).rating, '');
  });
});

describe('feedbackBody and outcomeOf', () => {
  it('sends a reason only with a thumbs down', () => {
    assert.deepEqual(feedbackBody({ answerId: A, kind: 'model', rating: 'up', reason: 'wrong' }), { answerId: A, kind: 'model', rating: 'up' });
    assert.deepEqual(feedbackBody({ answerId: A, kind: 'model', rating: 'down', reason: '' }), { answerId: A, kind: 'model', rating: 'down' });
    assert.deepEqual(feedbackBody({ answerId: A, kind: 'model', rating: 'down', reason: 'unanswered' }), {
      answerId: A,
      kind: 'model',
      rating: 'down',
      reason: 'unanswered',
    });
  });

  it('lets the visitor try again only when the rating did not arrive', () => {
    for (const [status, want] of [
      [204, 'sent'],
      [0, 'retry'],
      [429, 'retry'],
      [502, 'retry'],
      [503, 'retry'],
      [400, 'done'],
      [403, 'done'],
      [404, 'done'],
      [413, 'done'],
      [415, 'done'],
    ]) {
      assert.equal(outcomeOf(status), want, String(status));
    }
  });
});

describe('Feedback', () => {
  it('sends a thumbs up at once, once, with no cookie, kept alive past the page', async () => {
    const { fb, net, stored } = setup();
    assert.equal(await fb.rate(A, 'up'), 'sent');
    assert.equal(net.calls.length, 1);
    const [{ url, init, body }] = net.calls;
    assert.equal(url, FEEDBACK_URL);
    assert.equal(init.method, 'POST');
    assert.equal(init.headers['Content-Type'], 'application/json');
    assert.equal(init.keepalive, true);
    assert.equal(init.credentials, 'omit');
    assert.deepEqual(body, { answerId: A, kind: 'retrieval', rating: 'up' });
    assert.deepEqual(stored(A), { answerId: A, kind: 'retrieval', rating: 'up', reason: '' });
    // Any later click on either thumb sends nothing.
    for (const r of ['up', 'down', 'up']) await fb.rate(A, r);
    await fb.choose(A, 'wrong');
    await fb.flush();
    assert.equal(net.calls.length, 1);
  });

  it('sends one request however often the visitor clicks while it is under way', async () => {
    const { fb, net, changes, storage } = setup([A], [204], { held: true });
    const first = fb.rate(A, 'up');
    assert.equal(fb.state(loadTranscript(storage).messages[1]).sending, true);
    fb.rate(A, 'up');
    fb.rate(A, 'down');
    fb.flush();
    assert.equal(net.calls.length, 1);
    net.release();
    assert.equal(await first, 'sent');
    assert.equal(net.calls.length, 1);
    assert.deepEqual(changes, [
      [A, ''],
      [A, 'sent'],
    ]);
  });

  it('holds a thumbs down until a reason is chosen, then sends it with the reason', async () => {
    const { fb, net, stored, storage } = setup();
    await fb.rate(A, 'down');
    assert.equal(net.calls.length, 0);
    const m = loadTranscript(storage).messages[1];
    assert.deepEqual(fb.state(m), { answerId: A, kind: 'retrieval', rating: '', reason: '', pending: true, sending: false });
    assert.equal(await fb.choose(A, 'outdated'), 'sent');
    assert.deepEqual(net.calls.map((c) => c.body), [{ answerId: A, kind: 'retrieval', rating: 'down', reason: 'outdated' }]);
    assert.deepEqual(stored(A), { answerId: A, kind: 'retrieval', rating: 'down', reason: 'outdated' });
    await fb.flush();
    await fb.choose(A, 'wrong');
    assert.equal(net.calls.length, 1);
  });

  it('sends a thumbs down without a reason when the visitor skips', async () => {
    const { fb, net, stored } = setup();
    await fb.rate(A, 'down');
    await fb.choose(A, '');
    assert.deepEqual(net.calls.map((c) => c.body), [{ answerId: A, kind: 'retrieval', rating: 'down' }]);
    assert.equal(stored(A).rating, 'down');
  });

  it('flushes a waiting thumbs down without a reason (the next question, closing, leaving the page), once', async () => {
    const { fb, net, stored } = setup();
    await fb.rate(A, 'down');
    assert.equal(await fb.flush(), 'sent');
    assert.equal(await fb.flush(), '');
    assert.deepEqual(net.calls.map((c) => c.body), [{ answerId: A, kind: 'retrieval', rating: 'down' }]);
    assert.equal(stored(A).rating, 'down');
    // A reason that comes too late changes nothing.
    await fb.choose(A, 'wrong');
    assert.equal(net.calls.length, 1);
    assert.equal(stored(A).reason, '');
  });

  it('claims the rating in storage before the request leaves, so that the page may go at once', () => {
    const { fb, net, stored } = setup([A], [204], { held: true });
    fb.rate(A, 'down');
    fb.flush();
    assert.equal(net.calls.length, 1);
    assert.equal(stored(A).rating, 'down');
  });

  it('takes a thumbs down back when it is clicked again, and sends up alone when up is clicked instead', async () => {
    const { fb, net, storage } = setup();
    await fb.rate(A, 'down');
    await fb.rate(A, 'down');
    assert.equal(fb.state(loadTranscript(storage).messages[1]).pending, false);
    assert.equal(await fb.flush(), '');
    await fb.rate(A, 'down');
    await fb.rate(A, 'up');
    await fb.flush();
    assert.deepEqual(net.calls.map((c) => c.body), [{ answerId: A, kind: 'retrieval', rating: 'up' }]);
  });

  it('sends a waiting thumbs down of another answer first, without its reason', async () => {
    const { fb, net } = setup();
    await fb.rate(A, 'down');
    await fb.rate(B, 'down');
    await fb.choose(B, 'wrong');
    assert.deepEqual(
      net.calls.map((c) => c.body),
      [
        { answerId: A, kind: 'retrieval', rating: 'down' },
        { answerId: B, kind: 'retrieval', rating: 'down', reason: 'wrong' },
      ],
    );
  });

  it('lets the visitor try again after a network failure or 429, and only then', async () => {
    for (const status of [0, 429]) {
      const { fb, net, stored, changes } = setup([A], [status, 204]);
      assert.equal(await fb.rate(A, 'up'), 'retry');
      assert.equal(stored(A).rating, '', 'taken back');
      assert.deepEqual(changes.at(-1), [A, 'retry']);
      assert.equal(await fb.rate(A, 'down'), '');
      assert.equal(await fb.choose(A, 'other'), 'sent');
      assert.equal(net.calls.length, 2);
      assert.deepEqual(stored(A), { answerId: A, kind: 'retrieval', rating: 'down', reason: 'other' });
    }
  });

  it('treats a refusal (404 for an answer older than a week, 400) as done: never sent again', async () => {
    for (const status of [404, 400]) {
      const { fb, net, stored } = setup([A], [status, 204]);
      assert.equal(await fb.rate(A, 'up'), 'done');
      assert.equal(stored(A).rating, 'up');
      await fb.rate(A, 'up');
      assert.equal(net.calls.length, 1);
    }
  });

  it('keeps the ratings across a reload; an unrated answer can still be rated', async () => {
    const first = setup();
    await first.fb.rate(A, 'up');
    // The page again: a new Feedback on the same storage.
    const net = site();
    const again = new Feedback({ storage: first.storage, fetch: net.fetch });
    const [, a, b] = loadTranscript(first.storage).messages;
    assert.equal(again.state(a).rating, 'up');
    assert.equal(again.state(b).rating, '');
    await again.rate(A, 'down');
    await again.flush();
    assert.equal(net.calls.length, 0, 'a rated answer is not sent again');
    await again.rate(B, 'up');
    assert.deepEqual(net.calls.map((c) => c.body), [{ answerId: B, kind: 'retrieval', rating: 'up' }]);
  });

  it('sends nothing for an answer without an id, or one no longer stored', async () => {
    const { fb, net, storage } = setup([null, A]);
    assert.equal(fb.state(loadTranscript(storage).messages[1]), null);
    await fb.rate(A, 'down');
    storage.removeItem(TRANSCRIPT_KEY); // the visitor cleared the conversation
    assert.equal(await fb.flush(), '');
    assert.equal(await fb.rate(A, 'up'), '');
    assert.equal(net.calls.length, 0);
  });

  it('changes nothing else in the transcript', async () => {
    const { fb, storage } = setup();
    const before = loadTranscript(storage);
    await fb.rate(B, 'down');
    await fb.choose(B, 'wrong');
    const after = loadTranscript(storage);
    assert.deepEqual(after.messages[2], { ...before.messages[2], rating: 'down', reason: 'wrong' });
    assert.deepEqual([after.messages[0], after.messages[1]], [before.messages[0], before.messages[1]]);
    assert.equal(after.conversationId, before.conversationId);
  });
});

describe('the browser-local tools on a transcript with ratings', () => {
  it('resume_conversation hands over role and content only', () => {
    const { storage } = setup();
    const r = resumeConversation({}, { storage, origin: 'https://shop.example.com' });
    assert.equal(r.isError, false);
    for (const m of r.structuredContent.messages) assert.deepEqual(Object.keys(m), ['role', 'content']);
    assert.ok(!r.content[0].text.includes(A) && !JSON.stringify(r.structuredContent).includes(A));
  });

  it('save_conversation keeps the ratings it finds', async () => {
    const { fb, storage } = setup();
    await fb.rate(A, 'up');
    setConsent(storage);
    assert.ok(hasConsent(storage));
    const r = await saveConversation({ messages: [{ role: 'user', content: 'From my client' }] }, { storage, confirm: () => true });
    assert.equal(r.isError, false);
    const t = loadTranscript(storage);
    assert.equal(t.messages.length, 4);
    assert.deepEqual(feedbackOf(t.messages[1]), { answerId: A, kind: 'retrieval', rating: 'up', reason: '' });
  });
});
