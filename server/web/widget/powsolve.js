// The solver of the chat's proof of work (ALTCHA, version 1): find the number whose
// SHA-256, written after the challenge's salt, is the challenge. pow-worker.js runs it off
// the page's thread; pow.js runs it on the page where no Worker can start.

// The most numbers a challenge may ask to try: CHAT_PROOF_OF_WORK_MAX_NUMBER's limit.
export const MAX_NUMBER = 10_000_000;

// Digests asked for at once and awaited together: WebCrypto answers each one
// asynchronously, and one await per hash would spend most of the time waiting.
const BATCH = 1000;

/** isChallenge says whether c is a challenge this solver can solve. */
export function isChallenge(c) {
  return (
    !!c &&
    c.algorithm === 'SHA-256' &&
    typeof c.challenge === 'string' &&
    /^[0-9a-f]{64}$/.test(c.challenge) &&
    typeof c.salt === 'string' &&
    c.salt.length <= 200 &&
    Number.isInteger(c.maxnumber) &&
    c.maxnumber >= 0 &&
    c.maxnumber <= MAX_NUMBER
  );
}

/**
 * solve returns the challenge's number, trying 0, 1, 2, … up to its maxnumber, or null
 * when none solves it (or it is not a challenge). subtle is WebCrypto's (a test may pass
 * another).
 */
export async function solve(c, subtle = globalThis.crypto.subtle) {
  if (!isChallenge(c)) return null;
  const want = new Uint8Array(32);
  for (let i = 0; i < 32; i++) want[i] = Number.parseInt(c.challenge.slice(2 * i, 2 * i + 2), 16);
  const head = new DataView(want.buffer).getUint32(0);
  const salt = new TextEncoder().encode(c.salt);
  // One buffer per batch entry: the salt, then the number's digits.
  const bufs = Array.from({ length: BATCH }, () => {
    const b = new Uint8Array(salt.length + 8);
    b.set(salt);
    return b;
  });
  for (let start = 0; start <= c.maxnumber; start += BATCH) {
    const end = Math.min(start + BATCH, c.maxnumber + 1);
    const pending = [];
    for (let n = start; n < end; n++) {
      const buf = bufs[n - start];
      const digits = digitsOf(n, buf, salt.length);
      pending.push(subtle.digest('SHA-256', buf.subarray(0, salt.length + digits)));
    }
    const hashes = await Promise.all(pending);
    for (let i = 0; i < hashes.length; i++) {
      const h = new DataView(hashes[i]);
      if (h.getUint32(0) === head && same(new Uint8Array(hashes[i]), want)) return start + i;
    }
  }
  return null;
}

/** digitsOf writes n in decimal into buf at offset and returns how many digits it took. */
function digitsOf(n, buf, offset) {
  let len = 1;
  for (let x = n; x >= 10; x = Math.floor(x / 10)) len++;
  for (let i = len - 1, x = n; i >= 0; i--, x = Math.floor(x / 10)) buf[offset + i] = 48 + (x % 10);
  return len;
}

function same(a, b) {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return a.length === b.length;
}
