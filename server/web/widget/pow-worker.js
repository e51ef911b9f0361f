// The chat's proof-of-work solver in a Web Worker (see pow.js): the page stays
// responsive while it hashes. One message is one challenge; the answer carries its id
// and the number, or null.
import { solve } from './powsolve.js';

self.onmessage = async (e) => {
  const { id, challenge } = e.data ?? {};
  let number = null;
  try {
    number = await solve(challenge);
  } catch {
    // answered with null: the turn goes without, and the site says what it needs
  }
  self.postMessage({ id, number });
};
