// Unit tests of the chat's proof of work (pow.js, powsolve.js): node --test server/web/test/
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';

import { CHALLENGE_URL, PROOF_HEADER, Prover, payload } from '../widget/pow.js';
import { isChallenge, searcher, solve } from '../widget/powsolve.js';

/** challenge makes an ALTCHA challenge whose number is n, as the site does (unsigned). */
function challenge(n, maxnumber = 5000) {
  const salt = randomBytes(12).toString('hex') + '?expires=1796641200&';
  const hash = createHash('sha256').update(salt + n).digest('hex');
  return { algorithm: 'SHA-256', challenge: hash, maxnumber, salt, signature: 'ab'.repeat(32) };
}

describe('solve', () => {
  it('finds the number, at either end of the range and across batches', async () => {
    for (const n of [0, 9, 10, 999, 1000, 1001, 4321, 5000]) assert.equal(await solve(challenge(n)), n, `number ${n}`);
  });

  it('hashes as SHA-256 does, for salts of every length around its blocks', () => {
    for (let len = 0; len <= 200; len++) {
      const salt = randomBytes(len).toString('hex').slice(0, len);
      for (const n of [0, 7, 12345, 9999999]) {
        const want = createHash('sha256').update(salt + n).digest('hex');
        assert.equal(searcher(salt, want)(Math.max(0, n - 3), n + 3), n, `salt of ${len}, number ${n}`);
      }
    }
  });

  it('returns null when no number up to maxnumber solves it', async () => {
    assert.equal(await solve(challenge(5001)), null);
  });

  it('refuses what is not a challenge it can solve', async () => {
    const c = challenge(3);
    for (const bad of [null, {}, { ...c, algorithm: 'SHA-1' }, { ...c, challenge: c.challenge.toUpperCase() }, { ...c, maxnumber: 1e9 }, { ...c, maxnumber: 2.5 }, { ...c, salt: 5 }]) {
      assert.equal(isChallenge(bad), false, JSON.stringify(bad));
      assert.equal(await solve(bad), null);
    }
    assert.equal(isChallenge(c), true);
  });
});

describe('payload', () => {
  it('is base64 of the solution as ALTCHA has it', () => {
    const c = challenge(7);
    assert.deepEqual(JSON.parse(Buffer.from(payload(c, 7), 'base64').toString()), {
      algorithm: 'SHA-256',
      challenge: c.challenge,
      number: 7,
      salt: c.salt,
      signature: c.signature,
    });
  });
});

/**
 * site is a fake of the site's two routes: GET /api/chat/challenge answers required (a
 * function of the request count) and POST /api/chat answers turns() in turn. It records
 * every request.
 */
function site({ required = () => true, turns = () => ({ status: 200, body: 'event: message.done\ndata: {}\n\n' }) } = {}) {
  const log = [];
  let challenges = 0;
  let posts = 0;
  const fetch = async (url, init = {}) => {
    log.push({ url, method: init.method ?? 'GET', proof: init.headers?.[PROOF_HEADER] ?? null });
    if (url === CHALLENGE_URL) {
      challenges++;
      const body = required(challenges) ? { required: true, ...challenge(challenges * 7) } : { required: false };
      return new Response(JSON.stringify(body), { status: 200, headers: { 'Content-Type': 'application/json' } });
    }
    posts++;
    const { status, body } = turns(posts, init.headers?.[PROOF_HEADER]);
    return new Response(typeof body === 'string' ? body : JSON.stringify(body), { status });
  };
  // The Worker's starts and stops, as the log's entries.
  const worker = { start: () => log.push({ url: 'worker.start' }), stop: () => log.push({ url: 'worker.stop' }) };
  return { fetch, log, worker };
}

const refusal = (code) => ({ status: 403, body: { error: { code, message: 'fetch a new challenge' } } });
const turnInit = { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' };
const solvedBy = (n) => (p) => JSON.parse(Buffer.from(p, 'base64').toString()).number === n;

describe('Prover', () => {
  it('solves a challenge before a turn when the site asks, and sends it in the Altcha header', async () => {
    const s = site();
    const res = await new Prover({ fetch: s.fetch, solver: solve, worker: s.worker }).post('/api/chat', turnInit);
    assert.equal(res.status, 200);
    // The Worker starts while the challenge is on its way.
    assert.deepEqual(
      s.log.map((r) => [r.url, r.method]),
      [
        ['worker.start', undefined],
        [CHALLENGE_URL, 'GET'],
        ['/api/chat', 'POST'],
      ],
    );
    assert.ok(solvedBy(7)(s.log[2].proof), s.log[2].proof);
  });

  it('asks no more once the site said none is needed, until a turn is refused for the lack of one', async () => {
    let needed = false;
    const s = site({ required: () => needed, turns: (n, proof) => (needed && !proof ? refusal('proof_of_work_required') : { status: 200, body: '' }) });
    const prover = new Prover({ fetch: s.fetch, solver: solve, worker: s.worker });
    await prover.post('/api/chat', turnInit);
    await prover.post('/api/chat', turnInit);
    needed = true;
    const res = await prover.post('/api/chat', turnInit);
    assert.equal(res.status, 200);
    const seen = (from) => s.log.slice(from).map((r) => (r.proof ? `${r.url} with a proof` : r.url));
    assert.deepEqual(seen(0), [
      'worker.start',
      CHALLENGE_URL,
      'worker.stop', // none needed: the Worker goes
      '/api/chat',
      '/api/chat', // no challenge asked
      '/api/chat', // refused: proof_of_work_required
      CHALLENGE_URL,
      '/api/chat with a proof',
    ]);
    // Now that it asks, every turn gets a challenge first.
    const from = s.log.length;
    await prover.post('/api/chat', turnInit);
    assert.deepEqual(seen(from), ['worker.start', CHALLENGE_URL, '/api/chat with a proof']);
  });

  it('retries once with a new challenge when the proof is refused, and gives the second answer', async () => {
    const s = site({ turns: () => refusal('proof_of_work_invalid') });
    const res = await new Prover({ fetch: s.fetch, solver: solve, worker: s.worker }).post('/api/chat', turnInit);
    assert.equal(res.status, 403);
    assert.equal((await res.json()).error.code, 'proof_of_work_invalid');
    const posts = s.log.filter((r) => r.method === 'POST');
    assert.equal(posts.length, 2);
    assert.ok(solvedBy(7)(posts[0].proof) && solvedBy(14)(posts[1].proof), 'each turn with its own challenge');
  });

  it('does not retry other refusals, and leaves their body to be read', async () => {
    const s = site({ turns: () => refusal('consent_required') });
    const res = await new Prover({ fetch: s.fetch, solver: solve, worker: s.worker }).post('/api/chat', turnInit);
    assert.equal((await res.json()).error.code, 'consent_required');
    assert.equal(s.log.filter((r) => r.method === 'POST').length, 1);
  });

  it('sends the turn without a proof when the challenge route fails, so that the site says why', async () => {
    const fetch = async (url, init = {}) => (url === CHALLENGE_URL ? new Response('no', { status: 404 }) : new Response('', { status: 200, headers: { got: String(init.headers?.[PROOF_HEADER]) } }));
    const res = await new Prover({ fetch, solver: solve, worker: { start() {}, stop() {} } }).post('/api/chat', turnInit);
    assert.equal(res.headers.get('got'), 'undefined');
  });
});
