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
    // no WebCrypto here: the page solves it itself
  }
  self.postMessage({ id, number });
};
