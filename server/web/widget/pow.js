// The optional proof of work before a chat turn (CHAT_PROOF_OF_WORK, the ALTCHA protocol):
// when the site asks for one, the widget fetches a challenge from GET /api/chat/challenge,
// solves it in a Web Worker (pow-worker.js) and sends the turn with the solution in the
// Altcha header. A solution buys one turn. Nothing is stored: whether the site asked for
// one last time is remembered in memory only, for this page.

import { isChallenge, solve } from './powsolve.js';

export const CHALLENGE_URL = '/api/chat/challenge';
export const PROOF_HEADER = 'Altcha';

/** payload is the Altcha header's value for challenge c solved by number. */
export function payload(c, number) {
  return btoa(JSON.stringify({ algorithm: c.algorithm, challenge: c.challenge, number, salt: c.salt, signature: c.signature }));
}

let worker = null; // one for the page, kept while the site asks for proofs
let nextID = 0;

/**
 * startWorker starts the Worker unless it runs; false where none can start (the widget
 * loaded from another origin, a policy that forbids it). Starting one fetches and
 * compiles its script: the Prover starts it while the challenge is on its way.
 */
function startWorker() {
  try {
    worker ??= new Worker(new URL('./pow-worker.js', import.meta.url), { type: 'module' });
    return true;
  } catch {
    return false;
  }
}

/** stopWorker stops the Worker: the site asks for no proof. */
function stopWorker() {
  worker?.terminate();
  worker = null;
}

/**
 * solveOffThread solves c in the Worker; where none can start, on this thread, which the
 * solver leaves between its slices.
 */
export function solveOffThread(c) {
  if (!startWorker()) return solve(c);
  const w = worker;
  const id = ++nextID;
  return new Promise((resolve) => {
    const finish = (number) => {
      w.removeEventListener('message', onMessage);
      w.removeEventListener('error', onError);
      resolve(number);
    };
    const onMessage = (e) => {
      if (e.data?.id === id) finish(Number.isInteger(e.data.number) ? e.data.number : null);
    };
    const onError = (e) => {
      e.preventDefault();
      if (worker === w) worker = null;
      w.terminate();
      solve(c).then(finish, () => finish(null));
    };
    w.addEventListener('message', onMessage);
    w.addEventListener('error', onError);
    w.postMessage({ id, challenge: c });
  });
}

/**
 * A Prover answers for one widget whether its next turn needs a proof of work, and the
 * proof. fetch and solver are the page's (a test passes its own).
 */
export class Prover {
  #fetch;
  #solver;
  #worker;
  #required = null; // what the site said last: null before it said anything

  constructor({ fetch = (...a) => globalThis.fetch(...a), solver = solveOffThread, worker = { start: startWorker, stop: stopWorker } } = {}) {
    this.#fetch = fetch;
    this.#solver = solver;
    this.#worker = worker;
  }

  /**
   * proof returns the Altcha header for the next turn, or null when none is required or
   * none could be made (the turn then goes without, and the site says what it needs).
   */
  async proof() {
    if (this.#required !== false) this.#worker.start();
    const res = await this.#fetch(CHALLENGE_URL, { headers: { Accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' });
    if (!res.ok) return null;
    let c;
    try {
      c = await res.json();
    } catch {
      return null;
    }
    this.#required = c?.required === true;
    if (!this.#required) this.#worker.stop();
    if (!this.#required || !isChallenge(c)) return null;
    const number = await this.#solver(c);
    return Number.isInteger(number) ? payload(c, number) : null;
  }

  /**
   * post sends a chat turn (fetch's url and init) with a proof when the site asks for one:
   * before every turn unless it said none is needed, which it is asked again only when a
   * turn is refused for the lack of one. A turn refused for its proof (403
   * proof_of_work_*) is sent once more with a new one; the second answer is the answer.
   */
  async post(url, init) {
    let proof = this.#required === false ? null : await this.proof();
    for (let attempt = 0; ; attempt++) {
      const headers = { ...init.headers };
      if (proof) headers[PROOF_HEADER] = proof;
      const res = await this.#fetch(url, { ...init, headers });
      if (attempt > 0 || res.status !== 403 || !(await refusedForProof(res))) return res;
      proof = await this.proof();
    }
  }
}

/** refusedForProof says whether a 403 is the site asking for a (new) proof of work. */
async function refusedForProof(res) {
  try {
    const code = (await res.clone().json())?.error?.code;
    return typeof code === 'string' && code.startsWith('proof_of_work_');
  } catch {
    return false;
  }
}
